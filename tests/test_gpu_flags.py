"""Flags the code computes as "this run uses a GPU" (``device.type == "cuda"``, ``device != "cpu"``,
``t.is_cuda``, ``torch.cuda.is_available()``) passed as ``non_blocking=`` or ``pin_memory=``.

In every run where such a copy goes to a GPU it is asynchronous, and where it does not there is no
copy; so a pageable source is PIN001 and a pinned source rewritten in a loop is PIN006, as with a
literal True (surveys 18: sd-scripts' safetensors loader, nanochat's data loader). An ``if`` on the
flag still takes both arms, and a flag the code computes otherwise stays unknown.
"""

from __future__ import annotations

import pytest

from helpers import codes, row_of, rows

LOADER = """
import numpy as np
import torch


def read_tensor(path, nbytes, device=None):
    non_blocking = {flag}
    raw = np.fromfile(path, dtype=np.uint8, count=nbytes)
    t = torch.from_numpy(raw)
    return t.to(device=device, non_blocking=non_blocking)  # copy
"""


@pytest.mark.parametrize("flag", [
    'device is not None and device.type == "cuda"',
    'device.type == "cuda"',
    'device == "cuda"',
    'device == "cuda:0"',
    'str(device) != "cpu"',
    'device.type != "cpu"',
    '"cuda" in str(device)',
    'torch.cuda.is_available()',
    'torch.cuda.is_available() and device is not None',
    'str(device).startswith("cuda")',
    # a device string chosen by such a flag, tested again (nanochat-vl's loader, survey 53 CC)
    '("cuda" if "cuda" in str(device) else "cpu") == "cuda"',
    '("cpu" if not torch.cuda.is_available() else "cuda:0") != "cpu"',
])
def test_a_flag_true_in_gpu_runs_makes_the_copy_asynchronous(flag):
    src = LOADER.format(flag=flag)
    assert rows(src, "PIN001") == [row_of(src, "# copy")]


@pytest.mark.parametrize("flag", [
    'device == "cpu"',                 # true on the CPU: no asynchronous copy at all
    'device.type == "cuda" or fast',   # may be true without a GPU
    'not torch.cuda.is_available()',
    'fast',                            # a flag nothing computes
    'device.type == "cuda" and False',
    'str(device).startswith("cpu")',
    '("cuda" if "cuda" in str(device) else "mps") == "cuda"',   # the other arm names no CPU
    '("cuda" if fast else "cpu") == "cuda"',
])
def test_other_flags_stay_unknown(flag):
    src = LOADER.format(flag=flag).replace("device=None", "device=None, fast=None")
    assert rows(src, "PIN001") == []


@pytest.mark.parametrize("device, reported", [('torch.device("cpu")', False), ('torch.device("cuda")', True)])
def test_a_caller_that_names_the_device_decides_the_flag(device, reported):
    src = f"""
        import numpy as np
        import torch

        def upload(t, device):
            non_blocking = device.type == "cuda"
            return t.to(device, non_blocking=non_blocking)

        upload(torch.from_numpy(np.zeros(1 << 20, dtype=np.float32)), {device})  # call
        """
    assert rows(src, "PIN001") == ([row_of(src, "# call")] if reported else [])


def test_a_callers_gpu_flag_decides_the_callees_copy():
    src = """
        import numpy as np
        import torch

        def upload(t, device, non_blocking):
            return t.to(device, non_blocking=non_blocking)  # copy

        def main(device):
            t = torch.from_numpy(np.zeros(1 << 20, dtype=np.float32))
            return upload(t, device, non_blocking=torch.cuda.is_available())  # call
        """
    assert rows(src, "PIN001") == [row_of(src, "# call")]


def test_tensor_is_cuda_as_the_flag():
    src = """
        import numpy as np
        import torch

        def like(ref):
            host = torch.from_numpy(np.ones(1 << 20, dtype=np.float32))
            return host.to(ref.device, non_blocking=ref.is_cuda)  # copy
        """
    assert rows(src, "PIN001") == [row_of(src, "# copy")]
    # the only caller passes a tensor the code places on the CPU: is_cuda is False, no copy at all
    assert rows(src + "\nlike(torch.empty(1))\n", "PIN001") == []


def test_the_same_flag_for_pinning_and_for_the_copy_is_a_race_in_a_loop():
    # nanochat's loader: pin_memory=use_cuda and non_blocking=use_cuda, the pinned rows rewritten each step
    src = """
        import torch

        def batches(docs, n, device="cuda"):
            use_cuda = device == "cuda"
            rows = torch.empty(n, dtype=torch.long)
            pinned = torch.empty(n, dtype=torch.long, pin_memory=use_cuda)
            gpu = torch.empty(n, dtype=torch.long, device=device)
            for doc in docs:
                rows[: len(doc)] = torch.tensor(doc)
                pinned.copy_(rows)  # write
                gpu.copy_(pinned, non_blocking=use_cuda)
                yield gpu
        """
    assert rows(src, "PIN006") == [row_of(src, "# write")]


def test_pinning_on_a_gpu_flag_in_a_loop_is_pin002():
    src = """
        import torch

        def stage(chunks, device):
            out = []
            for c in chunks:
                buf = torch.empty(1 << 20, pin_memory=torch.cuda.is_available())  # pin
                buf.copy_(c)
                out.append(buf.to(device, non_blocking=True))
            return out
        """
    assert rows(src, "PIN002") == [row_of(src, "# pin")]


def test_a_loader_pinned_when_a_gpu_is_there_gives_pinned_batches():
    src = """
        import torch
        from torch.utils.data import DataLoader

        def train(ds, model, device):
            loader = DataLoader(ds, batch_size=64, pin_memory=torch.cuda.is_available())
            for x in loader:
                y = x / 255.0
                x = x.to(device, non_blocking=True)  # pinned batch
                y = y.to(device, non_blocking=True)  # converted
                model(x, y)
        """
    assert rows(src, "PIN001") == [row_of(src, "# converted")]


def test_an_if_on_the_flag_still_takes_both_arms():
    from pinlint.analysis.domain import ON_GPU, Const, join
    from pinlint.analysis.solver import truthiness
    assert truthiness(ON_GPU) is None
    assert join(ON_GPU, ON_GPU) is ON_GPU
    assert truthiness(join(ON_GPU, Const.of(True))) is None


MOVE = """
import torch


def move(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    {body}


def regroup(lengths, device):
    offsets = torch.zeros(1 << 20, dtype=torch.int64)
    return move(offsets, device)  # call
"""
_IF_EXPRESSION = """return (t.pin_memory().to(device=device, non_blocking=True)
            if device.type == "cuda" and t.device.type == "cpu"
            else t.to(device=device, non_blocking=True))"""
_IF_STATEMENT = """if device.type == "cuda" and t.device.type == "cpu":
        return t.pin_memory().to(device=device, non_blocking=True)
    return t.to(device=device, non_blocking=True)"""


@pytest.mark.parametrize("body", [_IF_EXPRESSION, _IF_STATEMENT])
def test_the_else_arm_of_a_gpu_and_cpu_test_copies_nothing_pageable_to_a_gpu(body):
    # torchrec's _pin_and_move (survey 20): a CPU tensor bound for CUDA takes the pinned arm; the
    # else arm runs only when the target is no CUDA device (the tensor is known to be on the CPU)
    src = MOVE.format(body=body)
    assert rows(src, "PIN001") == []
    # without the pinned arm, the pageable copy is reported where the tensor comes in
    plain = MOVE.format(body="return t.to(device=device, non_blocking=True)")
    assert rows(plain, "PIN001") == [row_of(plain, "# call")]


def test_an_if_expression_arm_sees_what_its_test_says():
    src = """
        import numpy as np
        import torch

        def upload(t, device):
            return t.to(device) if device.type == "cuda" else t.to(device, non_blocking=True)

        upload(torch.from_numpy(np.zeros(1 << 20, dtype=np.float32)), torch.device(name))  # call
        """
    # the non-blocking arm runs only for a device that is no GPU: no asynchronous copy at all
    assert rows(src, "PIN001") == []
    swapped = src.replace('if device.type == "cuda"', 'if device.type != "cuda"')
    assert rows(swapped, "PIN001") == [row_of(swapped, "# call")]
