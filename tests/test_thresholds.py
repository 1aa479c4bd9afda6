"""Size thresholds: PIN001's and PIN008's (PIN007's has its tests in test_config.py and test_pin007.py).

A finding about a buffer of constant size below its rule's threshold is not reported; unknown sizes
are. The thresholds come from ``[tool.pinlint]`` or ``--config``, reach every Settings built from a
configuration, change the cache key, and ``--show-settings`` prints them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import codes, findings, only, row_of, rows, run_in_process, source, write
from pinlint.config import apply_overrides, load_config
from pinlint.runner import Cache
from pinlint.settings import Settings, SettingsError, thresholds_of

# A pageable buffer of exactly n bytes in an asynchronous copy.
PIN001_SIZED = """
    import numpy as np, cupy as cp
    h = np.empty({n}, dtype=np.uint8)
    d = cp.empty({n}, dtype=cp.uint8)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(h, stream=s)
    """


def test_pin001_default_threshold_is_64_kib():
    assert Settings().pin001_min_bytes == 64 * 1024
    assert rows(PIN001_SIZED.format(n=64 * 1024 - 1), "PIN001") == []
    assert rows(PIN001_SIZED.format(n=64 * 1024), "PIN001") == [5]


@pytest.mark.parametrize("threshold, reported", [(0, True), (4096, True), (4097, False)])
def test_pin001_threshold_is_configurable(threshold, reported):
    found = rows(PIN001_SIZED.format(n=4096), "PIN001", Settings(pin001_min_bytes=threshold))
    assert bool(found) is reported


def test_pin001_unknown_sizes_are_still_reported():
    unknown = """
        import numpy as np, cupy as cp
        def f(n, d, s):
            h = np.empty(n, dtype=np.uint8)
            d.set(h, stream=s)
        def g(n):
            h = np.empty(n, dtype=np.float32)
            d = cp.empty(n, dtype=cp.float32)
            s = cp.cuda.Stream(non_blocking=True)
            d.set(h, stream=s)  # g
        """
    # f's buffer is a parameter's business (unknown: no finding at all); g's size is unknown: reported.
    assert rows(unknown, "PIN001", Settings(pin001_min_bytes=1 << 40)) == [row_of(unknown, "# g")]


@pytest.mark.parametrize("data, size", [("[-lr]", 4), ("[1.0 - wd, lr]", 8), ("[[a, b], [c, d]]", 16),
                                        ("(lr,)", 4), ("[0.5] * n_items", 0), ("[lr] * n_items", 0),
                                        ("values", None)])
def test_a_torch_tensor_of_a_literal_list_has_its_length_whatever_its_items_hold(data, size):
    # torch.tensor turns each item of the list into a Python scalar (a tensor item of more than one
    # element is an error), so four bytes per item of float32; a list it cannot count stays unknown,
    # unless it is Python numbers the code lists (an index tensor: small, size 0 here).
    src = f"""
        import torch
        def step(lr, wd, a, b, c, d, values, dev, n_items):
            t = torch.tensor({data}, dtype=torch.float32)
            return t.to(dev, non_blocking=True)
        """
    reported_at = [row_of(src, "return t.to")]
    assert rows(src, "PIN001", Settings(pin001_min_bytes=0)) == reported_at
    if size is None:
        assert rows(src, "PIN001", Settings(pin001_min_bytes=1 << 40)) == reported_at
    else:
        assert rows(src, "PIN001", Settings(pin001_min_bytes=size)) == reported_at
        assert rows(src, "PIN001", Settings(pin001_min_bytes=size + 1)) == []


def test_a_numpy_array_of_a_list_of_unknown_items_stays_unknown_in_size():
    # np.array([frame]) stacks whatever frame is: one item may be a whole image.
    src = """
        import numpy as np, cupy as cp
        def push(frame, d, s):
            h = np.array([frame], dtype=np.float32)
            d.set(h, stream=s)
        s = cp.cuda.Stream(non_blocking=True)
        push(np.empty((1080, 1920, 3), np.float32), cp.empty(1, cp.float32), s)
        """
    assert rows(src, "PIN001", Settings(pin001_min_bytes=1 << 40)) == [row_of(src, "push(np.empty")]


def test_a_small_copy_below_pin001s_threshold_is_not_pin007_either():
    # PIN007 yields to PIN001 at an asynchronous copy; below PIN001's threshold the copy stays quiet.
    src = """
        import numpy as np, cupy as cp
        h = np.empty(1024, dtype=np.uint8)
        d = cp.empty(1024, dtype=cp.uint8)
        s = cp.cuda.Stream(non_blocking=True)
        for i in range(10):
            d.set(h, stream=s)
        """
    assert rows(src, "PIN001") == [] and rows(src, "PIN007") == []


# ------------------------------------------------------------------ configuration
def test_thresholds_are_read_from_the_configuration(tmp_path):
    path = write(tmp_path, "pyproject.toml", "[tool.pinlint]\npin001-min-bytes = 0\npin008-min-bytes = 4096\n"
                                             "pin009-max-share = 0.5\n")
    config = load_config(path)
    settings = Settings(**thresholds_of(config))
    assert (settings.pin001_min_bytes, settings.pin007_min_bytes, settings.pin008_min_bytes) == (0, 64 * 1024, 4096)
    assert config.pin009_max_share == 0.5
    assert list(settings.thresholds()) == ["pin001-min-bytes", "pin007-min-bytes", "pin008-min-bytes"]


@pytest.mark.parametrize("body, key", [
    ("pin001-min-bytes = -1", "pin001-min-bytes"),
    ("pin008-min-bytes = 1.5", "pin008-min-bytes"),
    ("pin008-min-bytes = true", "pin008-min-bytes"),
    ("pin009-max-share = 0", "pin009-max-share"),
    ("pin009-max-share = 1.5", "pin009-max-share"),
    ('pin009-max-share = "25%"', "pin009-max-share"),
])
def test_bad_threshold_values_name_the_file_and_key(tmp_path, body, key):
    path = write(tmp_path, "pyproject.toml", f"[tool.pinlint]\n{body}\n")
    with pytest.raises(SettingsError) as error:
        load_config(path)
    assert f"`{key}`" in str(error.value) and "pyproject.toml" in str(error.value)


def test_thresholds_can_be_set_with_dash_dash_config():
    config = apply_overrides(load_config(None), {"pin008-min-bytes": 0, "pin009-max-share": 0.1})
    assert config.pin008_min_bytes == 0 and config.pin009_max_share == 0.1


def test_show_settings_prints_every_threshold(monkeypatch, capsys, tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.pinlint]\npin001-min-bytes = 10\npin008-min-bytes = 20\n"
                                      "pin009-max-share = 0.5\n")
    code, out, _ = run_in_process(monkeypatch, capsys, tmp_path, "check", "--show-settings")
    shown = dict(line.split(": ", 1) for line in out.splitlines())
    assert code == 0
    assert (shown["pin001-min-bytes"], shown["pin007-min-bytes"], shown["pin008-min-bytes"]) == ("10", "65536", "20")
    assert shown["pin009-max-share"] == "0.5 (pinlint trace)"


def test_a_check_run_follows_the_configured_threshold(monkeypatch, capsys, tmp_path):
    write(tmp_path, "small.py", "import torch\nt = torch.empty(4096, dtype=torch.uint8, pin_memory=True)\n"
                                "g = t.cuda()\n")
    code, out, _ = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", ".")
    assert code == 0, out
    write(tmp_path, "pyproject.toml", "[tool.pinlint]\npin008-min-bytes = 4096\n")
    code, out, _ = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", ".")
    assert code == 1 and "small.py:2:5: PIN008" in out


def test_the_cache_key_changes_with_each_threshold():
    cache = Cache(Path("/nonexistent"), "fingerprint")
    keys = {cache.key(b"x = 1\n", settings) for settings in (
        Settings(), Settings(pin001_min_bytes=0), Settings(pin007_min_bytes=0), Settings(pin008_min_bytes=0))}
    assert len(keys) == 4


def test_pin001_threshold_leaves_device_to_host_copies_reported_at_every_size():
    # The call returns only when the copy is done: it waits for the stream, however small the buffer.
    src = """
        import numpy as np, cupy as cp
        h = np.empty(16, dtype=np.uint8)
        d = cp.empty(16, dtype=cp.uint8)
        s = cp.cuda.Stream(non_blocking=True)
        d.get(stream=s, out=h, blocking=False)
        """
    assert rows(src, "PIN001") == [row_of(src, "d.get")]


def test_a_shape_passed_through_star_args_is_not_a_scalar():
    """`np.random.randn(*shape)` of a shape nothing lays out has an unknown size (it was taken for
    a 0-d scalar, 8 bytes, so the size threshold hid DNNPartitioning's pageable input once
    `.astype` kept sizes); of a literal tuple it is the tuple's size."""
    from helpers import codes
    head = "import numpy as np\nimport pycuda.driver as cuda\ns = cuda.Stream()\nd = cuda.mem_alloc(1 << 26)\n"
    unknown = head + "shape = tuple(engine.shape)\nh = np.random.randn(*shape).astype(np.float32)\ncuda.memcpy_htod_async(d, h, s)\n"
    assert codes(unknown) == ["PIN001"]
    tiny = head + "shape = (2, 3)\nh = np.random.randn(*shape).astype(np.float32)\ncuda.memcpy_htod_async(d, h, s)\n"
    assert codes(tiny) == []


# An asynchronous copy of `h`, made by the expression `made`.
_ELEMENTWISE_COPY = """
import numpy as np, cupy as cp
def f():
    h = {made}
    d = cp.empty(8, dtype=cp.uint8)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(h, stream=s)  # copy
"""


# Elementwise results are as large as their array: arithmetic with numbers, a ufunc, torch's
# out-of-place methods. The dtype follows NumPy (an integer array with a float: float64) and torch
# (its default float32).
@pytest.mark.parametrize("made, nbytes", [
    ("2.0 * np.ones((5, 5), dtype=np.float32)", 100),
    ("np.ones((5, 5), dtype=np.float32) + 1", 100),
    ("-np.ones((5, 5), dtype=np.float32)", 100),
    ("np.ones(25, dtype=np.int32) / 2", 200),                # true division: float64
    ("np.ones(25, dtype=np.int32) * 2", 100),                # stays int32
    ("np.ones(25, dtype=np.int32) * 0.5", 200),
    ("np.floor(np.ones(25, dtype=np.float32) * 3)", 100),
    ("np.sqrt(np.ones(1 << 16, dtype=np.float32))", 1 << 18),
])
def test_elementwise_results_keep_their_arrays_size(made, nbytes):
    src = _ELEMENTWISE_COPY.format(made=made)
    just_under = Settings(pin001_min_bytes=nbytes + 1)
    at = Settings(pin001_min_bytes=nbytes)
    assert rows(src, "PIN001", just_under) == []
    assert rows(src, "PIN001", at) == [row_of(src, "# copy")]


def test_an_elementwise_result_of_two_arrays_or_a_list_has_no_known_size():
    # (n, 1) * (1, n) broadcasts to n * n elements, and so may a list: no size, so reported at any threshold.
    for made in ("np.ones((64, 1), np.float32) * np.ones((1, 64), np.float32)", "np.ones(4, np.float32) + [1, 2, 3, 4]"):
        src = _ELEMENTWISE_COPY.format(made=made)
        assert rows(src, "PIN001", Settings(pin001_min_bytes=1 << 40)) == [row_of(src, "# copy")], made


@pytest.mark.parametrize("made, reported", [
    ("torch.ones(5, 5).div(255)", False),          # 100 B
    ("torch.ones(512, 512).div(255)", True),       # 1 MiB
    ("torch.ones(5, 5, dtype=torch.int32).div(2)", False),
])
def test_torch_out_of_place_methods_keep_the_tensors_size(made, reported):
    src = f"""
        import torch
        def f():
            t = {made}
            return t.to("cuda", non_blocking=True)
        """
    assert bool(rows(src, "PIN001")) is reported


def test_a_ufunc_of_a_number_or_an_unknown_value_is_no_buffer():
    src = """
        import numpy as np, cupy as cp
        def f(x, n):
            d = cp.empty(8, dtype=cp.uint8)
            s = cp.cuda.Stream(non_blocking=True)
            d.set(np.sqrt(x), stream=s)
            d.set(np.floor(n / 2), stream=s)
            d.set(np.floor(np.empty(n)), stream=s)  # an array
        """
    assert rows(src, "PIN001") == [row_of(src, "# an array")]


# Sizes the code states through a copy, a range or a whole-array reduction (gpu-ocean's tests, survey 18:
# 17 false PIN001s on 15 KB grids re-padded in a simulator's constructor).
SIZED_THROUGH = """
    import numpy as np
    import pycuda.driver as cuda
    import pycuda.gpuarray as gpuarray
    stream = cuda.Stream()
    base = np.zeros(({rows}, 52), dtype=np.float32)
    h = {expr}
    gpuarray.to_gpu_async(h, stream=stream)  # upload
    """


@pytest.mark.parametrize("expr, sized", [
    ("base.copy()", True),                        # as large as what it copies
    ("np.ones(base.shape, np.float32)", False),   # a shape nothing states in numbers
    ("np.zeros(({rows}, 52), np.float32) * np.max(base)", True),  # times one number
    ("np.zeros(({rows}, 52), np.float32) * base.max()", True),
    ("np.zeros(({rows}, 52), np.float32) * base.max(axis=0)", False),  # times a row: broadcast, size unknown
    ("np.array(range({rows} * 52)).astype(np.float32)", True),
    ("np.array(list_of_unknown_length).astype(np.float32)", False),
])
def test_sizes_through_copies_ranges_and_reductions(expr, sized):
    expr = expr.format(rows="{rows}")
    small = SIZED_THROUGH.format(rows=72, expr=expr.format(rows=72))
    large = SIZED_THROUGH.format(rows=7200, expr=expr.format(rows=7200))
    # a small stated size is under the threshold; a large one, or one the code does not state, is reported
    assert rows(small, "PIN001") == ([] if sized else [row_of(small, "# upload")])
    assert rows(large, "PIN001") == [row_of(large, "# upload")]


def test_a_copy_of_either_of_two_arrays_is_as_large_as_the_larger():
    src = """
        import numpy as np
        import pycuda.driver as cuda
        import pycuda.gpuarray as gpuarray
        def upload(flag, stream):
            a = np.zeros(100, np.float32)
            b = np.zeros(1 << 20, np.float32)
            gpuarray.to_gpu_async((a if flag else b).copy(), stream=stream)  # upload
        upload(True, cuda.Stream())
        """
    assert rows(src, "PIN001") == [row_of(src, "# upload")]


def test_a_size_a_caller_states_reaches_the_buffer_a_helper_returns():
    # NeMo-RL's refit test (survey 20): `_param(name, 512)` returns (name, torch.zeros(512, uint8))
    src = """
        import torch

        def _param(name, nbytes):
            return name, torch.zeros(nbytes, dtype=torch.uint8)

        def pack(buf, t, used):
            buf[used:used + t.nbytes].copy_(t.view(-1), non_blocking=True)

        def stream(params):
            buf = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
            for name, t in params:
                pack(buf, t, 0)

        def small():
            stream([_param("a", 512), _param("b", 4096)])  # small

        def large():
            stream([_param("a", 1 << 24)])  # large
        """
    assert rows(src, "PIN001") == [row_of(src, "# large")]


def test_a_unittest_helper_that_only_tests_call_changes_no_field_of_other_tests():
    # gpu-ocean's OceanStateNoise tests (survey 18): one test's helper scales self.nx by 7; the other
    # tests' grids are the 30 x 40 of setUp, under PIN001's threshold
    src = """
        import unittest
        import numpy as np
        import pycuda.driver as cuda
        import pycuda.gpuarray as gpuarray

        class NoiseTest(unittest.TestCase):
            def setUp(self):
                self.stream = cuda.Stream()
                self.nx, self.ny = 30, 40
                self.shape = (self.ny + 4, self.nx + 4)

            def upload(self, h):
                self.d = gpuarray.to_gpu_async(h.astype(np.float32), stream=self.stream)

            def perturb(self):
                self.upload(np.ones((self.shape[0] + 1, self.shape[1] + 1)) * 5)  # small

            def interpolate(self, factor):
                self.nx = factor * self.nx
                self.ny = factor * self.ny
                self.shape = (self.ny + 4, self.nx + 4)
                self.upload(np.ones((self.shape[0] + 1, self.shape[1] + 1)) * 5)  # large

            def test_perturb(self):
                self.perturb()

            def test_interpolate(self):
                self.interpolate(7)
        """
    assert rows(src, "PIN001") == [row_of(src, "# large")]


@pytest.mark.parametrize("n, reported", [(16384, False), (1 << 26, True)])
def test_int_of_a_true_division_of_constants_is_a_constant_size(n, reported):
    # dc_sand (survey 21): `n_out = n_in / 16` (a float) and `pagelocked_empty(int(n_out * 2))`
    src = f"""
        import numpy as np
        import pycuda.driver as drv

        n_out = {n} / 16
        host = drv.pagelocked_empty(int(n_out * 2), dtype=np.float32)  # pin
        dev = drv.mem_alloc(host.nbytes)
        drv.memcpy_dtoh(host, dev)
        print(host[:4])
        """
    assert rows(src, "PIN008") == ([row_of(src, "# pin")] if reported else [])


def test_a_helper_returning_a_tensor_of_python_numbers_keeps_it_small():
    # FunASR (survey 21): `np.array([lookup(int(c), table) for c in codes])` in a helper, copied non-blocking
    src = """
        import numpy as np
        import torch

        def frame_ids(codes, table):
            ids = np.array([table[int(c)] for c in codes])  # python numbers
            return torch.from_numpy(ids)

        def frame_data(n):
            return torch.from_numpy(np.zeros(n, dtype=np.int64))

        def run(batches, all_codes, device, n):
            table = {c: i for i, c in enumerate(all_codes)}
            a = [frame_ids(x, table).to(device, non_blocking=True) for x in batches]
            b = [frame_data(n).to(device, non_blocking=True) for x in batches]  # data
            return a, b
        """
    assert rows(src, "PIN001") == [row_of(src, "# data")]


@pytest.mark.parametrize("made, reported", [
    ("torch.from_numpy(np.cumsum(counts))", False),            # a scan of lengths: as many numbers
    ("torch.from_numpy(counts).cumsum(0) - 1", False),
    ("torch.from_numpy(counts) * 2 - torch.from_numpy(pad[:n]) - 1", False),  # a small array beside it
    ("torch.from_numpy(counts) - torch.from_numpy(big[:n])", True),           # a large one bounds it
    ("torch.from_numpy(counts) * scale", True),                # `scale` may be an array of any size
])
def test_scans_and_arithmetic_of_python_numbers_stay_small(made, reported):
    # vllm-omni (survey 20): per-request index metadata, cumsum of token counts shifted by a pad,
    # pinned for a non-blocking upload
    src = f"""
        import numpy as np
        import torch

        pad = np.zeros(256, dtype=np.int64)
        big = np.zeros(1 << 26, dtype=np.int64)

        def step(requests, device, scale):
            counts = np.array([len(r) for r in requests], dtype=np.int64)
            n = len(requests)
            last = {made}
            return last.pin_memory().to(device, non_blocking=True)  # pin
        """
    assert rows(src, "PIN008") == ([row_of(src, "# pin")] if reported else [])


@pytest.mark.parametrize("made, reported", [
    ("torch.from_numpy(np.cumsum(counts))", False),
    ("torch.cat([torch.from_numpy(counts), torch.from_numpy(counts)])", False),
    ("torch.from_numpy(counts).repeat_interleave(n)", True),   # as many elements as the code asks for
    ("torch.tile(torch.from_numpy(counts), (n,))", True),
    # a few numbers more (FBGEMM's offsets, survey 56 FF), not a large tensor beside them
    ("torch.cat([torch.zeros(1, dtype=torch.int64), torch.from_numpy(counts).cumsum(0)])", False),
    ("torch.cat([torch.zeros(1 << 20, dtype=torch.int64), torch.from_numpy(counts)])", True),
    ("torch.cat([torch.zeros(k, dtype=torch.int64), torch.from_numpy(counts)])", True),
    # a reduction along an axis: no more numbers than it had
    ("torch.from_numpy(np.array([[len(r), 1] for r in requests])).sum(dim=1)", False),
    ("torch.from_numpy(np.load('table.npy')).sum(dim=1)", True),
])
def test_only_calls_that_keep_the_count_keep_a_tensor_of_python_numbers_small(made, reported):
    src = f"""
        import numpy as np
        import torch

        def step(requests, device, n, k):
            counts = np.array([len(r) for r in requests], dtype=np.int64)
            last = {made}
            return last.to(device, non_blocking=True)  # copy
        """
    assert rows(src, "PIN001") == ([row_of(src, "# copy")] if reported else [])


def test_a_pinned_copy_is_as_large_as_the_tensor_it_copies():
    src = """
        import torch

        def upload(device):
            small = torch.zeros(16).pin_memory()
            large = torch.zeros(1 << 26).pin_memory()  # large
            return small.to(device, non_blocking=True), large.to(device, non_blocking=True)
        """
    assert rows(src, "PIN008") == [row_of(src, "# large")]
    assert "256.0 MiB" in only(src, "PIN008").message or "256 MiB (" in only(src, "PIN008").message


@pytest.mark.parametrize("element", [
    'table["unk"]',                  # a table of numbers the caller built, given to the helper
    'lookup(int(c), table)',         # looked up by another helper
])
def test_an_array_of_numbers_looked_up_in_a_table_of_numbers_is_small(element):
    # FunASR (survey 21): per-frame label ids from a dict of ints the tree builds
    src = f"""
        import numpy as np
        import torch

        def build_table(codes):
            table = {{"code2id": {{}}, "unk": len(codes)}}
            for idx, code in enumerate(sorted(codes)):
                table["code2id"][code] = idx
            return table

        def lookup(code, table):
            if code in table["code2id"]:
                return table["code2id"][code]
            return table["unk"]

        def frame_ids(activity, table):
            ids = np.array([{element} for c in activity.sum(axis=1)])
            return torch.from_numpy(ids)

        def targets(activities, device, codes):
            table = build_table(codes)
            return [frame_ids(a.cpu().numpy(), table).to(device, non_blocking=True) for a in activities]

        def data(activities, device, n):
            return [torch.from_numpy(np.zeros(n)).to(device, non_blocking=True) for a in activities]  # data
        """
    assert rows(src, "PIN001") == [row_of(src, "# data")]


def test_a_table_of_numbers_given_on_through_two_helpers_keeps_the_array_small():
    # FunASR (e2e_diar_eend_ola.py:207): create_powerlabel -> dec_trans -> np.array of lookups
    src = """
        import numpy as np
        import torch

        def make_table(kinds):
            table = {"ids": {}, "oov": 0}
            for i, kind in enumerate(sorted(kinds)):
                table["ids"][kind] = i
            table["oov"] = len(kinds)
            return table

        def lookup(code, table):
            if code in table["ids"]:
                return table["ids"][code]
            return table["oov"]

        def codes_to_ids(x, n, table):
            return np.array([lookup(c, table) for c in x.sum(axis=1)])

        def to_labels(x, table, n):
            return torch.from_numpy(codes_to_ids(x, n, table))

        def run(labels, dev):
            table = make_table([1, 2, 4, 8])
            return [to_labels(l.cpu().numpy(), table, 4).to(dev, non_blocking=True) for l in labels]
        """
    assert rows(src, "PIN001") == []


@pytest.mark.parametrize("expr, small", [
    ("(1j * np.random.randn(3, 32, 64)).astype(np.complex64)", True),     # 6,144 elements: 48 KiB
    ("(np.random.randn(3, 32, 64) * 1j)", False),                         # complex128: 96 KiB
    ("np.ones(4096, np.float32) + np.ones(4096, np.float32)", True),      # 1-D, one length: 16 KiB
    ("np.ones(4096, np.float32) * 1j", True),                             # complex64: 32 KiB
    ("np.ones((64, 1), np.float32) + np.ones((1, 64), np.float32)", False),  # may broadcast
])
def test_complex_numbers_and_equal_1d_arrays_keep_an_elementwise_size(expr, small):
    src = f"""
import numpy as np
import cupy as cp
h = {expr}
for i in range(8):
    d = cp.asarray(h)
"""
    assert ("PIN007" in codes(src)) == (not small)


@pytest.mark.parametrize("shape, reported", [("4, 16", False), ("8, 32", False), ("4096, 4096", True)])
def test_arithmetic_on_a_tensor_of_a_parametrized_dtype_keeps_a_size_bound(shape, reported):
    # unsloth-zoo's LoRA merge tests (survey 43): `torch.randn(r, cols, dtype=dt) * 0.05` with `dt` from
    # pytest.mark.parametrize: the product's dtype is one of several, its size at most its elements at
    # the widest item, a few KiB here (and reported where even the smallest item makes it large).
    src = source(f"""
        import pytest
        import torch


        def fold(x):
            return x.to("cuda", dtype=torch.float32, non_blocking=True)


        @pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16, torch.float16])
        def test_fold(dt):
            down = torch.randn({shape}, dtype=dt) * 0.05
            fold(down)
        """)
    assert rows(src, "PIN001") == ([row_of(src, "fold(down)")] if reported else [])


@pytest.mark.parametrize("shape, width, reported", [
    ("(2, 2, 2)", "((0, 0), (1, 1), (1, 1))", False),  # at most 64 bytes * 1 * 3 * 3
    ("(2, 2, 2)", "1", False),                         # at most 64 bytes * 3 ** 3
    ("(64, 64, 64)", "((0, 0), (1, 1), (1, 1))", True),  # 2 MiB and more
    ("(2, 2, 2)", "width", True),                      # widths nothing here gives
])
def test_np_pad_of_a_small_array_by_constant_widths_stays_small(shape, width, reported):
    # median-cuda's warm-up (survey 45): a (2, 2, 2) array and its np.pad-ed copy set asynchronously.
    src = source(f"""
        import numpy as np
        import pycuda.autoinit
        import pycuda.driver as drv
        import pycuda.gpuarray as gpuarray


        def warm_up(width):
            a = np.zeros({shape}, np.float64)
            b = np.pad(a, {width})
            d = gpuarray.GPUArray(b.shape, b.dtype)
            d.set_async(b, drv.Stream())
        """)
    assert rows(src, "PIN001") == ([row_of(src, "d.set_async(b")] if reported else [])


@pytest.mark.parametrize("made", [
    "torch.tensor(np.linspace(0, 1, N))",                         # keeps the array's float64
    "torch.tensor(np.linspace(0, 1, N), dtype=torch.float32)",    # as many elements, of the new type
    "torch.log(1 - torch.tensor(np.linspace(0, 1, N)))",          # pointwise: as large as its input
    "torch.tensor(np.linspace(0, 1, N)).cumsum(dim=0)",           # a scan: as many elements
    "torch.cumsum(torch.tensor(np.linspace(0, 1, N)), dim=0)",
    "torch.flip(torch.tensor(np.linspace(0, 1, N)), dims=(0,))",
])
@pytest.mark.parametrize("n, reported", [(1000, False), (1_000_000, True)])
def test_a_schedule_table_made_from_a_sized_array_keeps_its_size(made, n, reported):
    # DPM-Solver's NoiseScheduleVP (PixArt-sigma, survey 50 AK): `torch.tensor(betas)`, then
    # `0.5 * torch.log(1 - betas).cumsum(dim=0)`, a 1000-entry table uploaded at every solver step.
    src = f"""
import numpy as np
import torch

N = {n}


def solve(steps):
    x = torch.randn(4, device="cuda")
    table = {made}
    for _ in range(steps):
        x = x + table.to(x.device)[:4]
    return x
"""
    assert ("PIN007" in codes(src)) == reported


@pytest.mark.parametrize("scaled", ["np.pi * w", "w * math.pi", "2.0 * torch.pi * w", "w / np.e"])
def test_arithmetic_with_a_number_a_library_names_keeps_the_arrays_size(scaled):
    # torch-harmonics' notebook (survey 50 AL): `w = np.pi * w` of a 193-element weight vector, then
    # uploaded in a loop: 1.5 KiB, under PIN007's threshold.
    src = f"""
import math

import numpy as np
import torch

device = torch.device("cuda")
w = torch.ones(193, dtype=torch.float64)
w = {scaled}
for i in range(32):
    y = torch.as_tensor(w, device=device).sum()
"""
    assert codes(src) == []


@pytest.mark.parametrize("item, sent, reported", [
    ('{"img": img, "label": torch.tensor(idx % 4, dtype=torch.long)}', 'batch["label"]', False),  # 16 x 8 bytes
    ('{"img": img, "label": torch.tensor(idx % 4, dtype=torch.long)}', 'batch["img"]', True),     # 16 x 256 KiB
    ("(img, 3)", "batch[1]", False),                          # Python numbers: one int64 each
    ("(img, 3)", "batch[0]", True),
    ("(img, self.labels[idx])", "batch[1]", True),            # nothing says what a label is
    # each item one tensor: a prompt's token ids the code lists (SUPIR's llava loader, survey 52 BE)
    ("torch.tensor([idx] + [t % 7 for t in range(idx)], dtype=torch.long)", "batch", False),
    ("img", "batch", True),
])
def test_a_field_of_a_default_collated_batch_is_batch_size_items_of_the_datasets(item, sent, reported):
    # SBGM_DANRA (survey 50 AL): labels made by `torch.tensor(season)` in __getitem__, collated into a
    # 16-element tensor and sent with non_blocking=True from a pageable loader: 128 bytes.
    src = f"""
import torch
from torch.utils.data import DataLoader, Dataset


class Fields(Dataset):
    def __init__(self, n, labels):
        self.n = n
        self.labels = labels

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        img = torch.randn(1, 256, 256)
        return {item}


def train(labels):
    loader = DataLoader(Fields(1000, labels), batch_size=16, shuffle=False)
    for batch in loader:
        x = {sent}.to("cuda", non_blocking=True)
"""
    assert ("PIN001" in codes(src)) == reported


@pytest.mark.parametrize("made, reported", [
    ("torch.LongTensor([len(s) for s in seqs])", False),   # Python numbers: the per-step metadata idiom
    ("torch.LongTensor([1, 2, 3] * n)", False),
    ("torch.FloatTensor(np.zeros(100))", False),            # an array's data: 100 elements
    ("torch.FloatTensor(np.zeros(1_000_000))", True),       # 4 MB of data
    ("torch.FloatTensor(4096, 1024)", True),                # sizes, not data: 16 MiB
])
def test_a_legacy_typed_constructor_given_a_list_or_array_copies_that_data(made, reported):
    # pipedream (survey 50 AP): `torch.LongTensor(src_length).cuda(non_blocking=True)` of a lengths list.
    src = f"""
import numpy as np
import torch


def step(seqs, n):
    t = {made}
    return t.cuda(non_blocking=True)
"""
    assert ("PIN001" in codes(src)) == reported


@pytest.mark.parametrize("made", ["torch.Tensor([value])", "torch.tensor([value])", "torch.FloatTensor([value, 0.0])"])
def test_a_list_of_tensor_items_is_one_number_per_item(made):
    # miles-credit (survey 50 AP run): `torch.Tensor([value]).cuda(non_blocking=True)` of each metric,
    # a one-element tensor (torch makes each item a Python number, and fails on a larger tensor).
    src = f"""
import torch


def log(dev):
    for name in ("mse", "mae"):
        value = torch.zeros(1) + 2.0
        t = {made}.cuda(dev, non_blocking=True)
"""
    assert "PIN001" not in codes(src)


# ------------------------------------------------------------------ sizes bounded by loops and test parameters
BOUNDED = """
import itertools
import cupy as cp
import numpy as np
import pytest

{decorator}
def test_ramp(dt, n):
    {loop}
        ramp = {made}
        for shift in range(4):
            dev = cp.asarray(ramp)
"""
PARAMETRIZED = '@pytest.mark.parametrize("dt, n", [(np.float32, 3), (np.float64, 7)])'
PRODUCT = '@pytest.mark.parametrize("dt, n", itertools.product([np.float32, np.float64], [2, 3, 6, 7]))'


@pytest.mark.parametrize("decorator, loop, made, reported", [
    # np.arange(1, 1 + n) of a parametrized n: at most 7 elements (cupyimg's test ramps)
    (PARAMETRIZED, "if True:", "np.arange(1, 1 + n, dtype=dt)", False),
    (PARAMETRIZED, "if True:", "np.arange(n * 100000, dtype=dt)", True),
    # parameters given as an itertools.product of literal lists take each list's constants
    (PRODUCT, "if True:", "np.zeros(n, dtype=dt)", False),
    (PRODUCT.replace("[2, 3, 6, 7]", "[2, 3, 6, 70000]"), "if True:", "np.zeros(n, dtype=dt)", True),
    # a size taken from a loop's variable over a bounded range: at most the range's top
    (PARAMETRIZED, "for m in range(1, 2 * n + 2):", "np.zeros(m, dtype=dt)", False),
    (PARAMETRIZED, "for m in range(1, 2 * n + 2):", "np.arange(1, 1 + m)", False),
    (PARAMETRIZED, "for m in range(1, 2 * n + 2):", "np.zeros((m, m // 2), dtype=dt)", False),
    (PARAMETRIZED, "for m in range(1, 100000):", "np.zeros(m * 2, dtype=dt)", True),
    # arithmetic of bounded 1-D arrays is as long as the longest (cupyimg's complex ramps); arrays of
    # more dimensions may broadcast into a grid: (100, 1) + (1, 100) is 10,000 elements
    (PARAMETRIZED, "if True:", "np.arange(1, 1 + n, dtype=dt) + 1j * np.arange(1, 1 + n, dtype=dt)", False),
    (PRODUCT.replace("[2, 3, 6, 7]", "[2, 100]"), "if True:",
     "np.zeros((n, 1), dtype=dt) + np.zeros((1, n), dtype=dt)", True),
    (PRODUCT.replace("[2, 3, 6, 7]", "[2, 100]"), "if True:", "np.zeros(n, dtype=dt) + np.ones(n, dtype=dt)", False),
    # nothing bounds the loop's stop: unknown, reported
    ("", "for m in range(1, 2 * n + 2):", "np.zeros(m)", True),
    ("", "for m in range(1, n):", "np.arange(m - 1, 2)", True),
])
def test_sizes_bounded_by_parameters_and_loops(decorator, loop, made, reported):
    src = BOUNDED.format(decorator=decorator, loop=loop, made=made)
    if not decorator:
        src = src.replace("def test_ramp(dt, n):", "def ramp_of(dt, n):")
    assert ("PIN007" in codes(src, Settings())) == reported


_TABLE_DATASET = """
import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader, Dataset


class Slides(Dataset):
    def __init__(self, csv, label_col="label"):
        df = {table}
        df = df[df[label_col].isin([0, 1])].reset_index(drop=True)
        self.df = df
        self.col = label_col
        self.labels = df["label"].values

    def __len__(self):
        return len(self.df)

    def __getitem__(self, idx):
        row = self.df.iloc[idx]
        image = torch.load(row["path"])
        return image, {label}


def train(csv, device):
    loader = DataLoader(Slides(csv), batch_size=32)
    for image, label in loader:
        image = image.to(device, non_blocking=True)  # image
        label = label.to(device, non_blocking=True)  # label
"""


@pytest.mark.parametrize("table, label, reported", [
    # every cell of a table read from text is one number or string: a label is one number per item
    ("pd.read_csv(csv)", 'self.df["label"][idx]', False),
    ("pd.read_csv(csv)", 'self.df.loc[idx, "label"]', False),
    ("pd.read_csv(csv)", 'self.df.iloc[idx]["label"]', False),
    ("pd.read_csv(csv)", "row.label", False),
    ("pd.read_csv(csv)", 'self.df.at[idx, "label"]', False),
    ("pd.read_csv(csv, sep='\\t')", "self.labels[idx]", False),
    ("pd.read_excel(csv)", 'self.df["label"].iloc[idx]', False),
    # what nothing decides stays unknown: a column named by an unknown key, a table not read from text
    # (its cells may hold arrays), an array loaded from a path the table holds, a whole row
    ("pd.read_csv(csv)", "self.df[self.key()][idx]", True),
    ("pd.DataFrame(csv)", 'self.df["label"][idx]', True),
    ("pd.read_csv(csv)", 'np.load(row["label_path"])', True),
    ("pd.read_csv(csv)", "self.df.iloc[idx]", True),
])
def test_a_cell_of_a_table_read_from_text_is_one_number(table, label, reported):
    # CLAM / HIPT (survey 51 AV): `label = self.slide_data["label"][idx]` of a `pd.read_csv` table,
    # collated into a tensor of one number per bag and sent with `non_blocking=True` from an unpinned
    # loader: a few bytes, below PIN001's threshold. The images of the same batch stay reported.
    src = _TABLE_DATASET.format(table=table, label=label)
    found = [f.location.row for f in findings(src) if f.code == "PIN001"]
    expected = [row_of(src, "# image")] + ([row_of(src, "# label")] if reported else [])
    assert found == expected, src


_LIBRARY_DATASET = """
import torch
import torchvision
from torchvision import datasets, transforms
from torch.utils.data import DataLoader, Subset


def train(root, idx, device):
    ds = {dataset}
    loader = DataLoader({wrapped}, batch_size=256, num_workers=8)
    for images, target in loader:
        images = images.cuda(non_blocking=True)  # images
        target = target.cuda(non_blocking=True)  # target
"""


@pytest.mark.parametrize("dataset, wrapped, reported", [
    # a classification dataset's target is a Python int: 256 of them are 2 KiB
    ("datasets.ImageFolder(root, transforms.ToTensor())", "ds", False),
    ("torchvision.datasets.CIFAR10(root, train=True, transform=transforms.ToTensor())", "ds", False),
    ("datasets.ImageFolder(root, transforms.ToTensor())", "Subset(ds, idx)", False),
    ("datasets.MNIST(root, True, transforms.ToTensor(), None)", "ds", False),
    # a target transform may make anything of it (a one-hot row per image)
    ("datasets.ImageFolder(root, transforms.ToTensor(), target_transform=lambda y: torch.eye(1000)[y])", "ds", True),
    ("datasets.CIFAR10(root, True, transforms.ToTensor(), lambda y: torch.eye(1000)[y])", "ds", True),
    # a dataset the tables do not describe stays unknown
    ("datasets.VOCSegmentation(root)", "ds", True),
])
def test_the_target_of_a_library_classification_dataset_is_one_number(dataset, wrapped, reported):
    src = _LIBRARY_DATASET.format(dataset=dataset, wrapped=wrapped)
    found = [f.location.row for f in findings(src) if f.code == "PIN001"]
    expected = [row_of(src, "# images")] + ([row_of(src, "# target")] if reported else [])
    assert found == expected, src


@pytest.mark.parametrize("made, reported", [
    # point-transformer / Stratified-Transformer (survey 52 BB): chunk offsets from a list of counts
    ("torch.IntTensor(np.cumsum(counts))", False),
    ("torch.from_numpy(np.cumsum(counts))", False),
    ("torch.tensor(np.cumsum(counts))", False),
    ("torch.IntTensor(np.cumsum(np.ones(1_000_000, dtype=np.int32)))", True),   # 4 MB of data
    ("torch.IntTensor(np.cumsum(chunks))", True),                                # nothing says what it holds
])
def test_a_scan_of_a_list_of_python_numbers_is_one_too(made, reported):
    src = f"""
import numpy as np
import torch


def offsets(chunks):
    counts = []
    for c in chunks:
        counts.append(c.shape[0])
    return {made}.cuda(non_blocking=True)
"""
    assert ("PIN001" in codes(src)) == reported, src


_TOKEN_ROWS = """
import torch

CONTEXT = 77
TEMPLATES = [{templates}]


def encode(texts, ctx={ctx}):
    if isinstance(texts, str):
        texts = [texts]
    rows = [[49406] + [hash(w) % 49000 for w in t.split()] + [49407] for t in texts]
    out = torch.zeros(len(rows), ctx, dtype=torch.long)
    return out


def class_tokens(names):
    for name in names:
        texts = [t.format(name) for t in TEMPLATES]
        ids = encode(texts).cuda(non_blocking=True)  # ids
"""


@pytest.mark.parametrize("count, ctx, reported", [
    (80, "CONTEXT", False),      # TinyCLIP (survey 52 BA): 80 prompts x 77 int64 = 49,280 bytes
    (80, "77", False),
    (200, "CONTEXT", True),      # 200 x 77 x 8 = 123,200 bytes
    (80, "4 * CONTEXT", True),   # a default nothing here evaluates stays unknown
])
def test_a_list_comprehension_over_a_laid_out_list_has_its_count(count, ctx, reported):
    src = _TOKEN_ROWS.format(templates=", ".join(f'"prompt {i} of a {{}}."' for i in range(count)), ctx=ctx)
    assert ("PIN001" in codes(src)) == reported


@pytest.mark.parametrize("default, reported", [
    ("SMALL", False),        # a module constant assigned once: 1,000 floats
    ("LARGE", True),
    ("None", True),          # the literal None is still None (`n or 1 << 20` below)
])
def test_a_parameter_default_naming_a_module_constant_is_that_constant(default, reported):
    src = f"""
import torch

SMALL = 1000
LARGE = 1 << 20


def make(n={default}):
    return torch.zeros(n or (1 << 20))


def send():
    return make().cuda(non_blocking=True)
"""
    assert ("PIN001" in codes(src)) == reported


@pytest.mark.parametrize("test, reported", [
    ("isinstance(items, str)", False),          # a list is no str: the wrapping arm is dead
    ("isinstance(items, (str, bytes))", False),
    ("isinstance(items, list)", True),          # list or tuple: nothing here says which
])
def test_isinstance_of_a_list_the_code_builds_against_a_builtin_type(test, reported):
    src = f"""
import numpy as np
import torch


def send(x):
    items = [x, 2.0, 3.0]
    if {test}:
        items = np.zeros(1 << 20)  # what a wrong arm would make
    return torch.tensor(items, dtype=torch.float32).cuda(non_blocking=True)
"""
    assert ("PIN001" in codes(src)) == reported, src


@pytest.mark.parametrize("table, reported", [
    # a diffusion schedule (mar / 1d-tokenizer, survey 52 BE): 1000 steps of float64, 8 KB
    ("np.append(1.0, cum[:-1])", False),
    ("np.log(np.append(var[1], var[1:]))", False),
    ("np.append(cum, np.zeros(1 << 20))", True),       # 8 MB more
    ("np.append(cum, other)", True),                   # nothing says how large `other` is
])
def test_np_append_is_as_large_as_what_it_joins(table, reported):
    src = f"""
import math

import numpy as np
import torch


def betas(n):
    vals = []
    for i in range(n):
        vals.append(min(1 - math.cos(i / n) / math.cos((i + 1) / n), 0.999))
    return np.array(vals)


def sample(x, other):
    b = betas(1000)
    cum = np.cumprod(1.0 - b, axis=0)
    var = b * 2.0
    table = {table}
    for i in range(50):
        x = x * torch.from_numpy(table).to("cuda")[i]
    return x
"""
    assert ("PIN007" in codes(src)) == reported, src


@pytest.mark.parametrize("batch", ["32", "cfg.batch_size"])   # a batch size from a config: still one per item
@pytest.mark.parametrize("train, reported", [
    ("True", False),    # the training items: a one-number length per clip, 32 int64 per batch
    ("False", True),    # the evaluation items: features nothing here sizes
])
def test_a_dataset_built_for_training_gives_its_training_items(train, reported, batch):
    # HierSpeech++ (survey 52 BC): `if not self.train: return wav, feats` in __getitem__ of a dataset the
    # training loader builds with `train=True`; the object's constant field decides the method's test.
    src = f"""
import torch
from torch.utils.data import DataLoader


class ClipSet(torch.utils.data.Dataset):
    def __init__(self, paths, train=True):
        self.train = train
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        wav = torch.load(self.paths[i])
        if not self.train:
            return wav, torch.load(self.paths[i] + ".feat")
        frames = torch.LongTensor([wav.shape[-1] // 320])
        return wav, frames


def run(paths, cfg):
    loader = DataLoader(ClipSet(paths, train={train}), batch_size={batch})
    for wav, frames in loader:
        frames = frames.cuda(non_blocking=True)
"""
    assert ("PIN001" in codes(src)) == reported


_TOPK_DATASET = """
import numpy as np
import torch


class TopK(torch.utils.data.Dataset):
    def __len__(self):
        return 10000

    def __getitem__(self, i):
        img = np.zeros((3, 224, 224), dtype=np.float32)
        ids = np.zeros({k}, dtype=np.{dtype})
        return (img, 0), (ids, np.ones({k}, dtype=np.float16))


def run(pin):
    loader = torch.utils.data.DataLoader(TopK(), batch_size=128, pin_memory={pin})
    for (x, y), (top_ids, top_vals) in loader:
        x = x.cuda(non_blocking=True)
        top_ids = top_ids.{convert}
        top_ids = top_ids.cuda(non_blocking=True)  # ids
"""


@pytest.mark.parametrize("pin", ["True", "pin"])
@pytest.mark.parametrize("k, dtype, convert, reported", [
    # TinyViT's saved top-k logits (survey 52 BA): 128 x 100 int16 ids made int64 on the host, 100 KB
    (100, "int16", "long()", True),
    (100, "int16", "to(torch.int64)", True),
    (100, "int64", "long()", False),        # already int64: the batch itself, pinned or not
    (10, "int16", "long()", False),         # 10 KB: under the threshold
])
def test_a_batch_field_converted_on_the_host_is_a_new_pageable_tensor(pin, k, dtype, convert, reported):
    src = _TOPK_DATASET.format(k=k, dtype=dtype, convert=convert, pin=pin)
    found = [f.location.row for f in findings(src) if f.code == "PIN001"]
    assert (row_of(src, "# ids") in found) == reported, src


def test_a_loader_over_one_of_several_datasets_collates_an_item_of_either():
    # VideoMamba (survey 52 BI): one loader built over an image set or a video set; either's index
    # field is batch-size numbers, while either's clips are large.
    src = """
import torch
from torch.utils.data import DataLoader, Dataset


class Img(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return torch.rand(3, 224, 224), "caption", i


class Vid(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return torch.rand(8, 3, 224, 224), "caption", i


def train(kinds, dev):
    for kind in kinds:
        ds = Img() if kind == "image" else Vid()
        loader = DataLoader(ds, batch_size=32, pin_memory=False)
        for image, text, idx in loader:
            image = image.to(dev, non_blocking=True)  # image
            idx = idx.to(dev, non_blocking=True)  # idx
"""
    assert rows(src, "PIN001") == [row_of(src, "# image")]


@pytest.mark.parametrize("made", [
    "torch.from_numpy(df.values).float()",
    "torch.tensor(df.values, dtype=torch.float32)",
    "torch.FloatTensor(df.values)",
    "torch.from_numpy(df.values.astype(np.float32))",
    "torch.from_numpy(df[['x', 'y']].values.astype(np.float32))",
    "torch.from_numpy(df.drop(columns=['label']).values.astype(np.float32))",
])
def test_a_whole_table_read_from_text_is_still_an_array_nothing_sizes(made):
    # Tabular features: the cells are numbers, but how many rows the file has nothing here says; an
    # array made of them is new pageable memory of unknown size, reported as before the tables knew cells.
    src = f"""
import numpy as np
import pandas as pd
import torch


def load(path, dev):
    df = pd.read_csv(path)
    return {made}.to(dev, non_blocking=True)
"""
    assert "PIN001" in codes(src)


@pytest.mark.parametrize("collate", ["", ", collate_fn=None", ", collate_fn=fns[0]"])
def test_collate_fn_none_is_the_default_collate(collate):
    src = f"""
import torch
from torch.utils.data import DataLoader, Dataset


class Clips(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return torch.rand(8, 3, 224, 224), i


def train(dev):
    fns = [None, None]
    loader = DataLoader(Clips(), batch_size=32{collate})
    for clip, idx in loader:
        clip = clip.to(dev, non_blocking=True)  # clip
        idx = idx.to(dev, non_blocking=True)  # idx
"""
    assert rows(src, "PIN001") == [row_of(src, "# clip")]
