"""Test doubles: a mocked function does not run its body, and a call a test expects to fail is not
followed (``pinlint/analysis/doubles.py``; survey 57 GH: a video pipeline's tests mocked the encoder
whose upload pinlint reported at 13 test calls, and three passed a frame whose shape makes the encoder
raise before its upload)."""

from __future__ import annotations

import pytest

from helpers import codes, row_of, rows

_ENCODER = """
import torch
import pytest
from unittest import mock
from unittest.mock import patch


class FrameEncoder:
    def encode(self, frames):
        return [f.to("cuda", non_blocking=True) for f in frames]

    def close(self):
        pass


class OutputFlow:
    def __init__(self):
        self.encoder = FrameEncoder()

    def emit(self, frames):
        return self.encoder.encode(frames)


def frames():
    return [torch.zeros((480, 640, 3), dtype=torch.uint8) for _ in range(4)]

"""


@pytest.mark.parametrize("test, reported", [
    ("""
def test_it():
    flow = OutputFlow()
    flow.emit(frames())  # here
""", True),
    ("""
def test_it():
    flow = OutputFlow()
    with patch.object(flow.encoder, "encode", return_value=4):
        flow.emit(frames())  # here
""", False),
    ("""
def test_it():
    flow = OutputFlow()
    with patch.object(flow.encoder, "close"):
        flow.emit(frames())  # here
""", True),
    ("""
@patch.object(FrameEncoder, "encode", return_value=4)
def test_it(fake):
    OutputFlow().emit(frames())  # here
""", False),
    ("""
@mock.patch("codec.FrameEncoder.encode")
def test_it(fake):
    OutputFlow().emit(frames())  # here
""", False),
    ("""
def test_it(mocker):
    flow = OutputFlow()
    mocker.patch.object(flow.encoder, "encode", return_value=4)
    flow.emit(frames())  # here
""", False),
    ("""
def test_it(monkeypatch):
    flow = OutputFlow()
    monkeypatch.setattr(flow.encoder, "encode", lambda fs: 4)
    flow.emit(frames())  # here
""", False),
    ("""
def test_it(monkeypatch):
    monkeypatch.setattr("codec.FrameEncoder.encode", lambda self, fs: 4)
    OutputFlow().emit(frames())  # here
""", False),
    ("""
def test_it():
    with mock.patch.multiple(FrameEncoder, encode=mock.DEFAULT, close=mock.DEFAULT):
        OutputFlow().emit(frames())  # here
""", False),
])
def test_a_mocked_method_does_not_run_its_body(test, reported):
    src = _ENCODER + test
    assert rows(src, "PIN001") == ([row_of(src, "# here")] if reported else [])


def test_the_mock_ends_with_its_block():
    src = _ENCODER + """
def test_it():
    flow = OutputFlow()
    with patch.object(flow.encoder, "encode", return_value=4):
        flow.emit(frames())
    flow.emit(frames())  # here
"""
    assert rows(src, "PIN001") == [row_of(src, "# here")]


@pytest.mark.parametrize("block, reported", [
    ("with pytest.raises(ValueError):", False),
    ("with self.assertRaises(ValueError):", False),
    ("with self.assertLogs():", True),
    ("if True:", True),
])
def test_a_call_expected_to_fail_is_not_followed(block, reported):
    src = """
import unittest
import pytest
import torch


def encode(frames):
    first = frames[0]
    if first.shape[2] != 3:
        raise ValueError("expected HWC")
    return [f.to("cuda", non_blocking=True) for f in frames]


class EncodeTest(unittest.TestCase):
    def test_rejects_chw(self):
        bad = torch.zeros((3, 480, 640), dtype=torch.uint8)
        %s
            encode([bad])  # here
""" % block
    assert rows(src, "PIN001") == ([row_of(src, "# here")] if reported else [])


def test_code_after_an_expected_failure_is_followed_again():
    src = """
import pytest
import torch


def encode(frames):
    return [f.to("cuda", non_blocking=True) for f in frames]


def test_it():
    with pytest.raises(ValueError):
        encode([torch.zeros(3)])
    encode([torch.zeros(3, 480, 640)])  # here
"""
    assert rows(src, "PIN001") == [row_of(src, "# here")]


def test_a_library_copy_written_in_the_block_is_still_seen():
    """Only the checked code's own functions are left unfollowed: the block's own statements run."""
    src = """
import pytest
import torch


def test_it():
    x = torch.zeros(3, 480, 640)
    with pytest.raises(RuntimeError):
        x.to("cuda", non_blocking=True)  # here
"""
    assert rows(src, "PIN001") == [row_of(src, "# here")]
