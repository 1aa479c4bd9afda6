"""A loop that replaces each element of a list once (analysis/slots.py).

``for i in range(len(xs)): xs[i] = xs[i].cuda(non_blocking=True)`` moves a list of host tensors to the
GPU in place (PySlowFast's training loops and their many copies). The read ``xs[i]`` sees an element
no earlier iteration replaced, so its memory is what the list held before the loop; where the idiom is
not exactly that (the index may repeat, the store is conditional, the read follows the store) the
element stays "host or device" and nothing is reported.
"""

from __future__ import annotations

import functools

import pytest

import helpers
from helpers import codes, row_of, rows
from pinlint.settings import Settings


@pytest.fixture(autouse=True)
def _every_size(monkeypatch):
    monkeypatch.setattr(helpers, "Settings", functools.partial(Settings, pin001_min_bytes=0))


TORCH = """
import numpy as np
import torch

def frames_to_tensors(frames):
    x = torch.from_numpy(np.array(frames)).float() / 255
    return [x[:, ::4].unsqueeze(0), x.unsqueeze(0)]

def pinned_pair():
    return [torch.empty(8, pin_memory=True), torch.empty(8, pin_memory=True)]
"""


def test_range_loop_replacing_each_element_reports_the_pageable_source():
    src = TORCH + """
def upload(frames):
    xs = frames_to_tensors(frames)
    for i in range(len(xs)):
        xs[i] = xs[i].cuda(non_blocking=True)
    return xs
"""
    assert rows(src, "PIN001") == [row_of(src, "xs[i] = xs[i].cuda")]
    assert "PIN007" not in codes(src)  # a different element on each iteration


def test_enumerate_loop_and_a_read_before_the_store():
    src = TORCH + """
def upload(frames):
    xs = frames_to_tensors(frames)
    for i, _ in enumerate(xs):
        t = xs[i]
        xs[i] = t.to("cuda", non_blocking=True)
    return xs
"""
    assert rows(src, "PIN001") == [row_of(src, 'xs[i] = t.to("cuda"')]


def test_pinned_elements_replaced_in_place_are_clean():
    src = TORCH + """
def upload():
    xs = pinned_pair()
    for i in range(len(xs)):
        xs[i] = xs[i].cuda(non_blocking=True)
    return xs
"""
    assert "PIN001" not in codes(src)


@pytest.mark.parametrize("loop", [
    # the index may come round again: the second visit reads the device tensor
    "for i in order:\n        xs[i] = xs[i].cuda(non_blocking=True)",
    # the index is rebound in the body
    "for i in range(len(xs)):\n        i = 0\n        xs[i] = xs[i].cuda(non_blocking=True)",
    # the list is reordered in the body
    "for i in range(len(xs)):\n        xs[i] = xs[i].cuda(non_blocking=True)\n        xs.reverse()",
    # the read after the store, on the next iteration of an inner loop
    "for i in range(len(xs)):\n        for _ in range(2):\n            xs[i] = xs[i].cuda(non_blocking=True)",
])
def test_variants_that_are_not_the_idiom_stay_quiet(loop):
    src = TORCH + f"""
def upload(frames, order):
    xs = frames_to_tensors(frames)
    {loop}
    return xs
"""
    assert "PIN001" not in codes(src), loop


def test_a_store_under_an_if_reads_the_slot_as_the_loop_found_it():
    # TimeSformer's pack (survey 44): `if cfg.NUM_GPUS: inputs[i] = inputs[i].cuda(non_blocking=True)`.
    # The guarded store still replaces only slot i, so its own read is the element as it was; a read
    # after the `if` may be either (the host tensor where the arm was not taken) and stays unknown.
    src = TORCH + """
def upload(frames, use_gpu):
    xs = frames_to_tensors(frames)
    for i in range(len(xs)):
        if use_gpu:
            xs[i] = xs[i].cuda(non_blocking=True)
        xs[i].cuda(non_blocking=True)
    return xs
"""
    assert rows(src, "PIN001") == [row_of(src, "xs[i] = xs[i].cuda")]


def test_a_guarded_store_after_a_first_one_reads_what_the_first_stored():
    # TimeSformer's FLOP-count input (survey 44): `xs[i] = xs[i].unsqueeze(0)` then
    # `if cfg.NUM_GPUS: xs[i] = xs[i].cuda(non_blocking=True)`: the second read is the view just stored.
    src = TORCH + """
def upload(frames, use_gpu):
    xs = frames_to_tensors(frames)
    for i in range(len(xs)):
        xs[i] = xs[i].unsqueeze(0)
        if use_gpu:
            xs[i] = xs[i].cuda(non_blocking=True)
    return xs
"""
    assert rows(src, "PIN001") == [row_of(src, "xs[i] = xs[i].cuda")]


def test_a_read_after_the_store_in_the_same_iteration_is_the_stored_value():
    src = TORCH + """
def upload(frames):
    xs = frames_to_tensors(frames)
    for i in range(len(xs)):
        xs[i] = xs[i].cuda(non_blocking=True)
        xs[i].to("cuda", non_blocking=True)
    return xs
"""
    assert rows(src, "PIN001") == [row_of(src, "xs[i] = xs[i].cuda")]


def test_cupy_list_of_numpy_arrays_uploaded_in_place():
    src = """
import numpy as np
import cupy as cp

def upload(n, stream):
    xs = [np.zeros(n) for _ in range(4)]
    for i in range(len(xs)):
        d = cp.empty(n)
        d.set(xs[i], stream=stream)
        xs[i] = d
    return xs
"""
    assert rows(src, "PIN001") == [row_of(src, "d.set(xs[i]")]


# ------------------------------------------------------------------ double buffering (rotating slots)
DOUBLE_BUFFER = """
import numpy as np
import cupy as cp


def staging(n):
    mem = cp.cuda.alloc_pinned_memory(n * 4)
    return np.frombuffer(mem, np.float32, n)


def upload(data, n):
    streams = [cp.cuda.Stream() for _ in range(2)]
    host = [staging(n) for _ in range(2)]
    dev = [cp.empty(n, dtype=cp.float32) for _ in range(2)]
    done = [None, None]
    for k, start in enumerate(range(0, len(data), n)):
        {slot}
        with streams[s] as st:
            {wait}
            host[s][:] = data[start:start + n]  # write
            dev[s].set(host[s])
            done[s] = st.record()
    cp.cuda.Device().synchronize()
"""


@pytest.mark.parametrize("slot, wait, reported", [
    # Py-Boost (survey 23): each slot's event is waited on before the slot is written again
    ("s = k % 2", "if k >= 2:\n                done[s].synchronize()", False),
    ("s = k % 2", "done[s].synchronize() if k >= 2 else None", False),
    # no wait per slot: the copy of two iterations ago may still read the slot
    ("s = k % 2", "pass", True),
    ("s = k % 2", "if k >= 2:\n                done[0].synchronize()", True),
    # `s` is rebound in the body: not one slot per iteration
    ("s = k % 2\n        s = 0", "if k >= 2:\n                done[s].synchronize()", True),
])
def test_double_buffering_that_waits_on_each_slot_is_no_race(slot, wait, reported):
    src = DOUBLE_BUFFER.format(slot=slot, wait=wait)
    assert (rows(src, "PIN006") == [row_of(src, "# write")]) is reported, src


# ------------------------------------------------------------------ a slot replaced at a constant index
@pytest.mark.parametrize("make", [
    "[cuda.pagelocked_empty(n, np.float32), cuda.pagelocked_empty(n, np.float32)]",   # a literal list
    "pinned_list(n)",                                                                  # built by a helper
])
def test_a_pinned_slot_replaced_by_a_pageable_array_before_the_copy(make):
    # smart-social-distancing (survey 26): slot 0 of the TensorRT host buffers replaced per frame
    src = f"""
import numpy as np
import pycuda.driver as cuda

def pinned_list(n):
    hosts = []
    for _ in range(2):
        hosts.append(cuda.pagelocked_empty(n, np.float32))
    return hosts

def run(frame, n, dev, stream):
    hosts = {make}
    hosts[0] = np.ravel(np.zeros_like(frame, dtype=np.float32))
    cuda.memcpy_htod_async(dev, hosts[0], stream)  # copy
    stream.synchronize()
"""
    assert rows(src, "PIN001") == [row_of(src, "# copy")]
    assert "PIN008" not in codes(src)  # the pinned buffer of slot 0 is never copied
    kept = src.replace("    hosts[0] = np.ravel(np.zeros_like(frame, dtype=np.float32))\n", "")
    assert "PIN001" not in codes(kept)
