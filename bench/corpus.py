"""A deterministic synthetic corpus for the speed benchmark.

``build(dest, n_files, seed)`` writes ``n_files`` Python modules under ``dest`` (100 per folder).
About one file in five (``gpu_fraction``) is a CUDA module built from templates of real-looking
CuPy, Numba, PyCUDA, cuda-python and PyTorch code (kernels, classes, loops, branches, streams,
host/device copies, pinned and pageable allocations: some with pinlint findings, most without);
the rest are plain-Python modules of 50-400 lines (dataclasses, parsers, caches, CLIs,
generators, retry decorators, tables) that name no GPU library, so pinlint's prefilter skips them.

Every file is a function of ``(seed, index)`` only, so the first 1,000 files of a 10,000-file
corpus are the 1,000-file corpus, and two builds with the same arguments are byte-identical.
Every file is distinct (its module name, identifiers and constants are drawn per file), so no
file can be answered from a cache entry written for another.

    python bench/corpus.py DEST N_FILES [--seed S] [--gpu-fraction F]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

GPU_TRIGGERS = ("cuda", "cupy", "torch", "numba")  # pinlint's prefilter substrings
FILES_PER_DIR = 100

# ---------------------------------------------------------------------------- names
_NOUNS = ["batch", "chunk", "frame", "block", "tile", "sample", "record", "window", "packet", "slice",
          "grid", "field", "image", "signal", "buffer", "volume", "particle", "feature", "token", "row"]
_VERBS = ["load", "parse", "scale", "merge", "filter", "update", "encode", "decode", "reduce", "sort",
          "normalize", "collect", "render", "stage", "process", "resample", "project", "score"]
_ADJ = ["raw", "clean", "local", "remote", "cached", "pending", "active", "partial", "total", "final"]
_CLASSES = ["Pipeline", "Buffer", "Manager", "Registry", "Loader", "Writer", "Reader", "Stage", "Cache",
            "Accumulator", "Scheduler", "Planner", "Engine", "Sampler", "Tracker", "Index", "Store"]
_DOMAINS = ["Image", "Signal", "Particle", "Mesh", "Tensor", "Frame", "Event", "Job", "Order", "Sensor",
            "Config", "Report", "Record", "Metric", "Batch", "Volume", "Task", "Model"]
_DTYPES = ["float32", "float64", "int32", "float16", "uint8", "int64"]


class Names:
    """Per-file identifiers, unique within the file."""

    def __init__(self, r: random.Random) -> None:
        self.r = r
        self.used: set = set()

    def _fresh(self, make) -> str:
        for _ in range(1000):
            name = make()
            if name not in self.used:
                self.used.add(name)
                return name
        name = make() + str(len(self.used))
        self.used.add(name)
        return name

    def func(self) -> str:
        r = self.r
        return self._fresh(lambda: f"{r.choice(_VERBS)}_{r.choice(_NOUNS)}" +
                           (f"_{r.choice(_ADJ)}" if r.random() < 0.3 else ""))

    def cls(self) -> str:
        r = self.r
        return self._fresh(lambda: r.choice(_DOMAINS) + r.choice(_CLASSES))

    def var(self) -> str:
        r = self.r
        return self._fresh(lambda: f"{r.choice(_ADJ)}_{r.choice(_NOUNS)}")

    def const(self) -> str:
        r = self.r
        return self._fresh(lambda: f"{r.choice(_ADJ).upper()}_{r.choice(_NOUNS).upper()}S")


def _indent(lines: list, n: int = 1) -> list:
    pad = "    " * n
    return [pad + line if line else line for line in lines]


# ---------------------------------------------------------------------------- plain Python
def p_dataclass(r, nm):
    cls, fields = nm.cls(), r.sample(["name", "size", "offset", "weight", "label", "created", "owner",
                                      "priority", "tags", "path", "limit", "ratio"], r.randint(3, 7))
    types = {"name": "str", "size": "int", "offset": "int", "weight": "float", "label": "str",
             "created": "float", "owner": "str", "priority": "int", "tags": "list", "path": "str",
             "limit": "int", "ratio": "float"}
    defaults = {"str": '""', "int": "0", "float": "0.0", "list": "field(default_factory=list)"}
    out = ["@dataclass", f"class {cls}:", f'    """One {cls.lower()} entry as stored on disk."""', ""]
    out += [f"    {f}: {types[f]} = {defaults[types[f]]}" for f in fields]
    out += ["", "    def validate(self) -> list:", "        problems = []"]
    for f in fields:
        t = types[f]
        if t == "int":
            out += [f"        if self.{f} < 0:", f"            problems.append(\"{f} must not be negative\")"]
        elif t == "float":
            out += [f"        if not (0.0 <= self.{f} <= {r.choice([1.0, 100.0, 1e6])}):",
                    f"            problems.append(f\"{f} out of range: {{self.{f}}}\")"]
        elif t == "str":
            out += [f"        if not self.{f}.strip():", f"            problems.append(\"{f} is empty\")"]
        else:
            out += [f"        if len(self.{f}) > {r.randint(8, 64)}:",
                    f"            problems.append(\"too many {f}\")"]
    out += ["        return problems", "", "    def to_dict(self) -> dict:",
            "        return {" + ", ".join(f'"{f}": self.{f}' for f in fields) + "}", "",
            "    @classmethod", f"    def from_dict(cls, data: dict) -> \"{cls}\":",
            "        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}",
            "        return cls(**known)", ""]
    return out, {"dataclass"}


def p_parser(r, nm):
    fn, sep = nm.func(), r.choice([",", ";", "\\t", "|"])
    cols = r.randint(3, 8)
    out = [f"def {fn}(path: str, strict: bool = False) -> list:",
           f'    """Read a {sep!r}-separated file of {cols} columns; skip comments and blank lines."""',
           "    records = []", "    with open(path, encoding=\"utf-8\") as handle:",
           "        for number, line in enumerate(handle, start=1):",
           "            line = line.strip()", "            if not line or line.startswith(\"#\"):",
           "                continue", f"            parts = line.split(\"{sep}\")",
           f"            if len(parts) != {cols}:", "                if strict:",
           "                    raise ValueError(f\"{path}:{number}: expected " + str(cols) +
           " fields, got {len(parts)}\")", "                logger.warning(\"skipping line %d\", number)",
           "                continue", "            try:",
           "                value = float(parts[1])", "            except ValueError:",
           "                value = None", "            records.append((parts[0], value, parts[2:]))",
           "    return records", ""]
    return out, {"logging"}


def p_cache_class(r, nm):
    cls, cap = nm.cls(), r.choice([16, 64, 128, 256, 1024])
    out = [f"class {cls}:", f'    """A small LRU cache with hit statistics (capacity {cap})."""', "",
           f"    def __init__(self, capacity: int = {cap}) -> None:", "        self.capacity = capacity",
           "        self._data = OrderedDict()", "        self.hits = 0", "        self.misses = 0", "",
           "    def get(self, key, default=None):", "        if key in self._data:",
           "            self._data.move_to_end(key)", "            self.hits += 1",
           "            return self._data[key]", "        self.misses += 1", "        return default", "",
           "    def put(self, key, value) -> None:", "        self._data[key] = value",
           "        self._data.move_to_end(key)", "        while len(self._data) > self.capacity:",
           "            self._data.popitem(last=False)", "", "    @property",
           "    def ratio(self) -> float:", "        total = self.hits + self.misses",
           "        return self.hits / total if total else 0.0", "",
           "    def __len__(self) -> int:", "        return len(self._data)", "",
           "    def __repr__(self) -> str:",
           f"        return f\"{cls}(size={{len(self)}}, hits={{self.hits}}, misses={{self.misses}})\"", ""]
    return out, {"collections"}


def p_aggregate(r, nm):
    fn, key = nm.func(), r.choice(["owner", "label", "kind", "region", "status"])
    out = [f"def {fn}(items: list, threshold: float = {r.uniform(0, 10):.2f}) -> dict:",
           f'    """Group items by {key}, dropping those under the threshold."""',
           "    groups = defaultdict(list)", "    for item in items:",
           "        if item.get(\"value\", 0) < threshold:", "            continue",
           f"        groups[item.get(\"{key}\", \"unknown\")].append(item)",
           "    summary = {}", "    for name, members in sorted(groups.items()):",
           "        values = [m[\"value\"] for m in members]",
           "        summary[name] = {", "            \"count\": len(values),",
           "            \"mean\": sum(values) / len(values),", "            \"max\": max(values),",
           "            \"min\": min(values),", "        }", "    return summary", ""]
    return out, {"collections"}


def p_cli(r, nm):
    fn = nm.func()
    opts = r.sample(["verbose", "dry-run", "force", "quiet", "jobs", "output", "limit", "format"], 4)
    out = ["def main(argv=None) -> int:", "    parser = argparse.ArgumentParser(description=__doc__)",
           "    parser.add_argument(\"paths\", nargs=\"*\", default=[\".\"])"]
    for o in opts:
        if o in ("jobs", "limit"):
            out.append(f"    parser.add_argument(\"--{o}\", type=int, default={r.randint(1, 64)})")
        elif o in ("output", "format"):
            out.append(f"    parser.add_argument(\"--{o}\", default=\"{r.choice(['text', 'json', 'csv'])}\")")
        else:
            out.append(f"    parser.add_argument(\"--{o}\", action=\"store_true\")")
    out += ["    args = parser.parse_args(argv)", "    failures = 0", "    for path in args.paths:",
            "        try:", f"            result = {fn}(path)", "        except (OSError, ValueError) as exc:",
            "            print(f\"error: {path}: {exc}\", file=sys.stderr)", "            failures += 1",
            "            continue", "        print(json.dumps(result, indent=2, default=str))",
            "    return 1 if failures else 0", "", "",
            f"def {fn}(path):", "    return {\"path\": path, \"size\": os.path.getsize(path)}", ""]
    return out, {"argparse", "sys", "json", "os"}


def p_tree(r, nm):
    fn = nm.func()
    out = [f"def {fn}(node, depth: int = 0, limit: int = {r.randint(5, 50)}):",
           '    """Walk a nested dict/list structure depth-first, yielding (depth, path, leaf)."""',
           "    stack = [(node, depth, ())]", "    while stack:", "        current, level, path = stack.pop()",
           "        if level > limit:", "            raise RecursionError(f\"structure deeper than {limit}\")",
           "        if isinstance(current, dict):",
           "            for key in sorted(current, reverse=True):",
           "                stack.append((current[key], level + 1, path + (key,)))",
           "        elif isinstance(current, (list, tuple)):",
           "            for index in range(len(current) - 1, -1, -1):",
           "                stack.append((current[index], level + 1, path + (index,)))", "        else:",
           "            yield level, path, current", ""]
    return out, set()


def p_report(r, nm):
    fn, width = nm.func(), r.choice([40, 60, 72, 80])
    out = [f"def {fn}(rows: list, title: str = \"{r.choice(_DOMAINS)} report\") -> str:",
           "    if not rows:", "        return f\"{title}: nothing to report\"",
           "    keys = list(rows[0])",
           "    widths = {k: max(len(str(k)), *(len(str(row.get(k, \"\"))) for row in rows)) for k in keys}",
           "    lines = [title, \"=\" * " + str(width) + "]",
           "    lines.append(\"  \".join(str(k).ljust(widths[k]) for k in keys))",
           "    for row in rows:", "        cells = []", "        for k in keys:",
           "            value = row.get(k, \"\")", "            if isinstance(value, float):",
           "                cells.append(f\"{value:>{widths[k]}.3f}\")", "            else:",
           "                cells.append(str(value).ljust(widths[k]))",
           "        lines.append(\"  \".join(cells))", "    return \"\\n\".join(lines)", ""]
    return out, set()


def p_context(r, nm):
    cls = nm.cls()
    out = [f"class {cls}:", '    """Time a block and log it when it is slower than the budget."""', "",
           f"    def __init__(self, label: str, budget: float = {r.uniform(0.01, 2):.3f}) -> None:",
           "        self.label = label", "        self.budget = budget", "        self.elapsed = None", "",
           "    def __enter__(self):", "        self._start = time.perf_counter()", "        return self", "",
           "    def __exit__(self, exc_type, exc, tb) -> bool:",
           "        self.elapsed = time.perf_counter() - self._start",
           "        if exc_type is not None:",
           "            logger.error(\"%s failed after %.3fs: %s\", self.label, self.elapsed, exc)",
           "        elif self.elapsed > self.budget:",
           "            logger.warning(\"%s took %.3fs\", self.label, self.elapsed)", "        return False", ""]
    return out, {"time", "logging"}


def p_generator(r, nm):
    fn, size = nm.func(), r.choice([8, 16, 32, 100, 512])
    out = [f"def {fn}(iterable, size: int = {size}, drop_last: bool = False):",
           "    chunk = []", "    for item in iterable:", "        chunk.append(item)",
           "        if len(chunk) == size:", "            yield chunk", "            chunk = []",
           "    if chunk and not drop_last:", "        yield chunk", ""]
    return out, set()


def p_enum_dispatch(r, nm):
    cls, states = nm.cls(), r.sample(["IDLE", "LOADING", "READY", "RUNNING", "PAUSED", "FAILED", "DONE",
                                      "RETRYING"], r.randint(4, 7))
    fn = nm.func()
    out = [f"class {cls}(Enum):"] + [f"    {s} = {i}" for i, s in enumerate(states)] + ["", "",
           f"def {fn}(state: {cls}, event: str) -> {cls}:"]
    for i, s in enumerate(states):
        kw = "if" if i == 0 else "elif"
        nxt = states[(i + 1) % len(states)]
        out += [f"    {kw} state is {cls}.{s}:", f"        if event == \"{r.choice(['go', 'next', 'ok'])}\":",
                f"            return {cls}.{nxt}", "        if event == \"abort\":",
                f"            return {cls}.{states[-1]}"]
    out += ["    raise ValueError(f\"no transition from {state} on {event!r}\")", ""]
    return out, {"enum"}


def p_retry(r, nm):
    fn = nm.func()
    out = [f"def retry(times: int = {r.randint(2, 6)}, delay: float = {r.uniform(0.01, 1):.2f}, "
           "exceptions=(OSError,)):", "    def decorate(func):", "        @functools.wraps(func)",
           "        def wrapper(*args, **kwargs):", "            last = None",
           "            for attempt in range(times):", "                try:",
           "                    return func(*args, **kwargs)", "                except exceptions as exc:",
           "                    last = exc", "                    time.sleep(delay * (2 ** attempt))",
           "            raise last", "        return wrapper", "    return decorate", "", "",
           "@retry()", f"def {fn}(url: str, timeout: float = 5.0) -> bytes:",
           "    with urllib.request.urlopen(url, timeout=timeout) as response:",
           "        return response.read()", ""]
    return out, {"functools", "time", "urllib.request"}


def p_table(r, nm):
    name = nm.const()
    n = r.randint(6, 24)
    out = [f"{name} = {{"]
    for i in range(n):
        out.append(f"    \"{r.choice(_NOUNS)}_{i}\": ({r.randint(0, 999)}, {r.random():.4f}, "
                   f"\"{r.choice(_ADJ)}\"),")
    out += ["}", ""]
    return out, set()


def p_numeric(r, nm):
    fn = nm.func()
    out = [f"def {fn}(values, window: int = {r.randint(2, 20)}):",
           '    """Moving average and variance, one pass (Welford within each window)."""',
           "    out = []", "    for start in range(0, max(len(values) - window + 1, 0)):",
           "        mean = 0.0", "        m2 = 0.0", "        for k, x in enumerate(values[start:start + window], 1):",
           "            delta = x - mean", "            mean += delta / k", "            m2 += delta * (x - mean)",
           "        out.append((mean, m2 / (window - 1) if window > 1 else 0.0))", "    return out", ""]
    return out, set()


def p_fileio(r, nm):
    fn = nm.func()
    ext = r.choice(["json", "txt", "csv", "log"])
    out = [f"def {fn}(folder: str, pattern: str = \"*.{ext}\") -> dict:",
           "    found = {}", "    for path in sorted(Path(folder).rglob(pattern)):",
           "        if path.is_symlink():", "            continue", "        try:",
           "            text = path.read_text(encoding=\"utf-8\")", "        except UnicodeDecodeError:",
           "            text = path.read_bytes().decode(\"latin-1\")",
           "        found[str(path.relative_to(folder))] = len(text.splitlines())", "    return found", ""]
    return out, {"pathlib"}


PLAIN = [p_dataclass, p_parser, p_cache_class, p_aggregate, p_cli, p_tree, p_report, p_context,
         p_generator, p_enum_dispatch, p_retry, p_table, p_numeric, p_fileio]

_IMPORT_LINES = {
    "dataclass": "from dataclasses import dataclass, field",
    "logging": "import logging",
    "collections": "from collections import OrderedDict, defaultdict",
    "argparse": "import argparse",
    "sys": "import sys",
    "json": "import json",
    "os": "import os",
    "time": "import time",
    "enum": "from enum import Enum",
    "functools": "import functools",
    "urllib.request": "import urllib.request",
    "pathlib": "from pathlib import Path",
}


# ---------------------------------------------------------------------------- GPU templates
def g_cupy_pipeline(r, nm):
    """CuPy: stream pipeline, with a pageable or pinned staging buffer and a loop of uploads."""
    fn, n, iters, dt = nm.func(), r.choice(["1 << 20", "1 << 22", "4096 * 1024", "65536"]), r.randint(4, 64), r.choice(_DTYPES[:2])
    pinned = r.random() < 0.5
    alloc = f"cupyx.empty_pinned(({n},), dtype=np.{dt})" if pinned else f"np.empty(({n},), dtype=np.{dt})"
    out = [f"def {fn}(frames, scale: float = {r.uniform(0.5, 4):.2f}):",
           "    stream = cp.cuda.Stream(non_blocking=True)", f"    host = {alloc}",
           f"    device = cp.empty(({n},), dtype=cp.{dt})", "    results = []",
           f"    for step in range({iters}):", "        if step >= len(frames):", "            break",
           f"        host[:] = frames[step].ravel()[:{n}]",
           "        device.set(host, stream=stream)" if r.random() < 0.5 else "        device = cp.asarray(host)",
           "        with stream:", "            device *= scale",
           "            total = cp.sum(device, dtype=cp.float64)",
           "        stream.synchronize()", "        results.append(float(total))",
           "    return results", ""]
    return out, {"cupy", "cupyx", "numpy"}


def g_cupy_kernel(r, nm):
    kname, fn = nm.func(), nm.func()
    op = r.choice(["a * x + y", "x * x + a", "max(x, a) - y", "a * (x - y)"])
    out = [f"{kname} = cp.ElementwiseKernel(", "    \"float32 x, float32 y, float32 a\", \"float32 z\",",
           f"    \"z = {op}\",", f"    \"{kname}\")", "", "",
           f"def {fn}(x_host, y_host, a: float = {r.uniform(0.1, 3):.3f}):",
           "    x = cp.asarray(x_host)", "    y = cp.asarray(y_host)",
           "    if x.shape != y.shape:", "        raise ValueError(f\"shape mismatch: {x.shape} vs {y.shape}\")",
           f"    z = {kname}(x, y, np.float32(a))",
           "    return cp.asnumpy(z)" if r.random() < 0.6 else "    return z.get()", ""]
    return out, {"cupy", "numpy"}


def g_cupy_class(r, nm):
    cls, n = nm.cls(), r.choice([256, 1024, 4096, 65536])
    out = [f"class {cls}:", '    """Keeps a host mirror of a device array and syncs it on demand."""', "",
           f"    def __init__(self, size: int = {n}, dtype=np.float32) -> None:",
           "        self.size = size", "        self.host = np.zeros(size, dtype=dtype)",
           "        self.device = cp.zeros(size, dtype=dtype)", "        self.dirty = False",
           "        self.stream = cp.cuda.Stream()", "",
           "    def upload(self) -> None:", "        if not self.dirty:", "            return",
           "        self.device.set(self.host)", "        self.dirty = False", "",
           "    def download(self):", "        self.device.get(out=self.host)", "        return self.host", "",
           "    def update(self, index: int, value: float) -> None:",
           "        if not 0 <= index < self.size:", "            raise IndexError(index)",
           "        self.host[index] = value", "        self.dirty = True", "",
           "    def reduce(self) -> float:", "        self.upload()",
           "        return float(self.device.sum())", ""]
    return out, {"cupy", "numpy"}


def g_numba_kernel(r, nm):
    kname, fn, threads = nm.func(), nm.func(), r.choice([128, 256, 512])
    iters = r.randint(3, 40)
    loop_copy = r.random() < 0.5
    out = ["@cuda.jit", f"def {kname}(x, y, out):", "    i = cuda.grid(1)", "    if i < x.size:",
           "        acc = 0.0", f"        for k in range({r.randint(2, 16)}):",
           "            acc += x[i] * k + y[i]", "        if acc > 0:", "            out[i] = acc",
           "        else:", "            out[i] = -acc", "", "",
           f"def {fn}(n: int = {r.choice(['1 << 20', '1 << 16', '100_000'])}):",
           f"    blocks = (n + {threads} - 1) // {threads}",
           "    x = np.random.rand(n).astype(np.float32)", "    y = np.ones(n, dtype=np.float32)",
           "    out = np.empty(n, dtype=np.float32)", "    d_y = cuda.to_device(y)",
           "    d_out = cuda.device_array(n, dtype=np.float32)", "    totals = []",
           f"    for it in range({iters}):", "        x *= 0.5"]
    if loop_copy:
        out += ["        d_x = cuda.to_device(x)"]
    else:
        out[-2:-2] = ["    d_x = cuda.to_device(x)"]
        out += ["        d_x.copy_to_device(x)"]
    out += [f"        {kname}[blocks, {threads}](d_x, d_y, d_out)", "        d_out.copy_to_host(out)",
            "        totals.append(float(out.sum()))", "    return totals", ""]
    return out, {"numba", "numpy"}


def g_numba_stream(r, nm):
    fn, n = nm.func(), r.choice(["1 << 18", "1 << 20", "65536"])
    pinned = r.random() < 0.6
    alloc = f"cuda.pinned_array({n}, dtype=np.float32)" if pinned else f"np.zeros({n}, dtype=np.float32)"
    out = [f"def {fn}(chunks):", "    stream = cuda.stream()", f"    staging = {alloc}",
           f"    d_buf = cuda.device_array({n}, dtype=np.float32, stream=stream)", "    seen = 0",
           "    for chunk in chunks:", "        m = min(len(chunk), staging.size)", "        staging[:m] = chunk[:m]",
           "        d_buf.copy_to_device(staging, stream=stream)", "        stream.synchronize()",
           "        seen += m", "    result = d_buf.copy_to_host(stream=stream)", "    stream.synchronize()",
           "    return seen, result", ""]
    return out, {"numba", "numpy"}


def g_pycuda_module(r, nm):
    fn, kname, threads = nm.func(), nm.func(), r.choice([128, 256])
    pagelocked_in_loop = r.random() < 0.3
    out = [f"_{kname.upper()}_SRC = SourceModule(r\"\"\"",
           f"__global__ void {kname}(float *dst, const float *src, int n) {{",
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;",
           f"    if (i < n) dst[i] = src[i] * {r.uniform(0.1, 3):.2f}f;", "}", "\"\"\")",
           f"{kname} = _{kname.upper()}_SRC.get_function(\"{kname}\")", "", "",
           f"def {fn}(batches, n: int = {r.choice([4096, 65536, 1 << 20])}):",
           "    src_gpu = drv.mem_alloc(n * 4)", "    dst_gpu = drv.mem_alloc(n * 4)",
           "    stream = drv.Stream()", "    outputs = []"]
    if not pagelocked_in_loop:
        out += ["    host = drv.pagelocked_empty(n, dtype=np.float32)"]
    out += ["    for batch in batches:"]
    if pagelocked_in_loop:
        out += ["        host = drv.pagelocked_empty(n, dtype=np.float32)"]
    out += ["        host[:len(batch)] = batch", "        drv.memcpy_htod_async(src_gpu, host, stream)",
            f"        {kname}(dst_gpu, src_gpu, np.int32(n), block=({threads}, 1, 1),",
            f"              grid=((n + {threads - 1}) // {threads}, 1), stream=stream)",
            "        result = np.empty_like(host)", "        drv.memcpy_dtoh_async(result, dst_gpu, stream)",
            "        stream.synchronize()", "        outputs.append(result)", "    return outputs", ""]
    return out, {"pycuda.autoinit", "pycuda.driver", "pycuda.compiler", "numpy"}


def g_pycuda_gpuarray(r, nm):
    fn = nm.func()
    out = [f"def {fn}(matrix, repeats: int = {r.randint(2, 12)}):", "    a_gpu = gpuarray.to_gpu(matrix)",
           "    norms = []", "    for _ in range(repeats):", "        a_gpu = a_gpu * 2 - 1",
           "        norm = gpuarray.sum(a_gpu * a_gpu).get()", "        if norm == 0:", "            break",
           "        norms.append(float(norm) ** 0.5)", "    return a_gpu.get(), norms", ""]
    return out, {"pycuda.autoinit", "pycuda.gpuarray"}


def g_cudapython(r, nm):
    fn = nm.func()
    use_async = r.random() < 0.5
    out = ["def _check(result):", "    err = result[0]", "    if err != runtime.cudaError_t.cudaSuccess:",
           "        raise RuntimeError(f\"CUDA error: {err!r}\")", "    return result[1:] if len(result) > 2 else (result[1] if len(result) == 2 else None)",
           "", "",
           f"def {fn}(n: int = {r.choice([1 << 16, 1 << 20, 1 << 22])}):", "    nbytes = n * 4",
           "    host = np.arange(n, dtype=np.float32)", "    dptr = _check(runtime.cudaMalloc(nbytes))",
           "    stream = _check(runtime.cudaStreamCreate())", "    try:"]
    if use_async:
        out += ["        err, = runtime.cudaMemcpyAsync(dptr, host.ctypes.data, nbytes,",
                "                                       runtime.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)"]
    else:
        out += ["        err, = runtime.cudaMemcpy(dptr, host.ctypes.data, nbytes,",
                "                                  runtime.cudaMemcpyKind.cudaMemcpyHostToDevice)"]
    out += ["        back = np.empty_like(host)", "        _check(runtime.cudaStreamSynchronize(stream) + (None,))",
            "        err, = runtime.cudaMemcpy(back.ctypes.data, dptr, nbytes,",
            "                                  runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost)",
            "        if not np.array_equal(back, host):", "            raise AssertionError(\"round trip failed\")",
            "        return back", "    finally:", "        runtime.cudaStreamDestroy(stream)",
            "        runtime.cudaFree(dptr)", ""]
    return out, {"cudapython", "numpy"}


def g_torch_module(r, nm):
    cls = nm.cls()
    hidden = r.choice([64, 128, 256, 512])
    out = [f"class {cls}(nn.Module):", "    def __init__(self, inputs: int, outputs: int) -> None:",
           "        super().__init__()", f"        self.fc1 = nn.Linear(inputs, {hidden})",
           f"        self.fc2 = nn.Linear({hidden}, {hidden})", f"        self.head = nn.Linear({hidden}, outputs)",
           f"        self.dropout = nn.Dropout({r.choice([0.0, 0.1, 0.2, 0.5])})", "",
           "    def forward(self, x):", "        x = F.relu(self.fc1(x))", "        x = self.dropout(x)",
           "        if self.training:", "            x = x + 0.01 * torch.randn_like(x)",
           "        x = F.relu(self.fc2(x))", "        return self.head(x)", ""]
    return out, {"torch", "torch.nn", "torch.nn.functional"}


def g_torch_train(r, nm):
    fn, epochs = nm.func(), r.randint(1, 20)
    nb = r.random() < 0.5
    pin_in_loop = r.random() < 0.25
    out = [f"def {fn}(model, batches, lr: float = {r.choice(['1e-3', '3e-4', '1e-2'])}, device=\"cuda\"):",
           "    model = model.to(device)", "    optimizer = torch.optim.Adam(model.parameters(), lr=lr)",
           "    losses = []", f"    for epoch in range({epochs}):", "        running = 0.0",
           "        for inputs, targets in batches:"]
    if pin_in_loop:
        out += ["            inputs = inputs.pin_memory()"]
    out += [f"            inputs = inputs.to(device{', non_blocking=True' if nb else ''})",
            f"            targets = targets.to(device{', non_blocking=True' if nb else ''})",
            "            optimizer.zero_grad()", "            loss = F.cross_entropy(model(inputs), targets)",
            "            loss.backward()", "            optimizer.step()", "            running += loss.item()",
            "        losses.append(running / max(len(batches), 1))",
            f"        if epoch % {r.randint(2, 5)} == 0:",
            "            print(f\"epoch {epoch}: loss {losses[-1]:.4f}\")", "    return losses", ""]
    return out, {"torch", "torch.nn.functional"}


def g_torch_staging(r, nm):
    fn, n = nm.func(), r.choice(["1 << 20", "4096", "1 << 16"])
    pinned = r.random() < 0.5
    out = [f"def {fn}(source, steps: int = {r.randint(4, 32)}):",
           f"    host = torch.empty({n}, dtype=torch.float32{', pin_memory=True' if pinned else ''})",
           f"    result = torch.empty({n}, dtype=torch.float32{', pin_memory=True' if pinned else ''})",
           "    stream = torch.cuda.Stream()", "    totals = []", "    for step in range(steps):",
           "        host.copy_(source(step))", "        with torch.cuda.stream(stream):",
           "            d = host.cuda(non_blocking=True)", "            d = torch.sigmoid(d * 2 - 1)",
           "            result.copy_(d, non_blocking=True)", "        stream.synchronize()",
           "        totals.append(float(result.sum()))", "    return totals", ""]
    return out, {"torch"}


def g_torch_eval(r, nm):
    fn = nm.func()
    out = ["@torch.no_grad()", f"def {fn}(model, loader, device=\"cuda\"):", "    model.eval()",
           "    predictions = []", "    for batch in loader:", "        logits = model(batch.to(device))",
           "        predictions.append(logits.argmax(dim=1).cpu().numpy())",
           "    return np.concatenate(predictions) if predictions else np.empty(0, dtype=np.int64)", ""]
    return out, {"torch", "numpy"}


GPU_LIBS = {
    "cupy": [g_cupy_pipeline, g_cupy_kernel, g_cupy_class],
    "numba": [g_numba_kernel, g_numba_stream],
    "pycuda": [g_pycuda_module, g_pycuda_gpuarray],
    "cudapython": [g_cudapython],
    "torch": [g_torch_module, g_torch_train, g_torch_staging, g_torch_eval],
}
# Weights: PyTorch code is the most common CUDA Python in the wild.
_LIB_WEIGHTS = {"torch": 4, "cupy": 3, "numba": 2, "pycuda": 1, "cudapython": 1}

_GPU_IMPORTS = {
    "numpy": ["import numpy as np"],
    "cupy": ["import cupy as cp"],
    "cupyx": ["import cupyx"],
    "numba": ["from numba import cuda"],
    "pycuda.autoinit": ["import pycuda.autoinit  # noqa: F401"],
    "pycuda.driver": ["import pycuda.driver as drv"],
    "pycuda.gpuarray": ["import pycuda.gpuarray as gpuarray"],
    "pycuda.compiler": ["from pycuda.compiler import SourceModule"],
    "cudapython": ["from cuda.bindings import runtime"],
    "torch": ["import torch"],
    "torch.nn": ["import torch.nn as nn"],
    "torch.nn.functional": ["import torch.nn.functional as F"],
}
_GPU_ORDER = ["numpy", "cupy", "cupyx", "numba", "pycuda.autoinit", "pycuda.driver", "pycuda.gpuarray",
              "pycuda.compiler", "cudapython", "torch", "torch.nn", "torch.nn.functional"]


# ---------------------------------------------------------------------------- files
def _target_lines(r: random.Random) -> int:
    # Most modules are short, a few are long: triangular on 50..400 with its mode at 120.
    return int(r.triangular(50, 400, 120))


def make_file(seed: int, index: int, gpu_fraction: float = 0.2) -> tuple:
    """(text, is_gpu) of file ``index``: a function of (seed, index) only."""
    r = random.Random(f"pinlint-bench:{seed}:{index}")
    nm = Names(r)
    is_gpu = r.random() < gpu_fraction
    target = _target_lines(r)
    body: list = []
    plain_needs: set = set()
    gpu_needs: set = set()
    if is_gpu:
        libs = list(_LIB_WEIGHTS)
        first = r.choices(libs, weights=[_LIB_WEIGHTS[l] for l in libs])[0]
        chosen = [first] + ([r.choice([l for l in libs if l != first])] if r.random() < 0.15 else [])
        templates = [t for lib in chosen for t in GPU_LIBS[lib]]
        # At least one GPU template; then GPU and plain helpers mixed (GPU modules have helpers too).
        while True:
            make = r.choice(templates) if (not body or r.random() < 0.6) else r.choice(PLAIN)
            lines, needs = make(r, nm)
            (gpu_needs if make in templates else plain_needs).update(needs)
            body += lines + [""]
            if len(body) >= target - 12:
                break
    else:
        while True:
            make = r.choice(PLAIN)
            lines, needs = make(r, nm)
            plain_needs.update(needs)
            body += lines + [""]
            if len(body) >= target - 10:
                break
    module = f"{r.choice(_VERBS)}_{r.choice(_NOUNS)}s_{index:05d}"
    domain = r.choice(_DOMAINS).lower()
    header = [
              f'"""{module}: {domain} helpers ({"GPU" if is_gpu else "host-side"} code).',
              "", f"Generated for the pinlint speed benchmark (seed {seed}, file {index}).", '"""', ""]
    imports = sorted({_IMPORT_LINES[n] for n in plain_needs if n in _IMPORT_LINES},
                     key=lambda s: (s.startswith("from"), s))
    for lib in _GPU_ORDER:
        if lib in gpu_needs:
            imports += _GPU_IMPORTS[lib]
    lines = header + imports + [""]
    if "logging" in plain_needs:
        lines += ["logger = logging.getLogger(__name__)", ""]
    lines += [f"VERSION = \"{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 99)}\"",
              f"SEED = {r.randint(0, 2**31)}", "", ""]
    lines += body
    while lines and lines[-1] == "":
        lines.pop()
    if "argparse" in plain_needs:
        lines += ["", "", "if __name__ == \"__main__\":", "    sys.exit(main())"]
    text = "\n".join(lines) + "\n"
    if not is_gpu:
        assert not any(t in text for t in GPU_TRIGGERS), f"plain file {index} names a GPU library"
    return text, is_gpu


def build(dest: Path, n_files: int, seed: int = 0, gpu_fraction: float = 0.2) -> dict:
    """Write the corpus (replacing ``dest``); returns and writes ``dest/corpus.json``, its manifest."""
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    files = lines = gpu = gpu_lines = 0
    for i in range(n_files):
        text, is_gpu = make_file(seed, i, gpu_fraction)
        folder = dest / f"pkg{i // FILES_PER_DIR:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i:05d}.py").write_text(text, encoding="utf-8")
        n = text.count("\n")
        files += 1
        lines += n
        if is_gpu:
            gpu += 1
            gpu_lines += n
    manifest = {"files": files, "lines": lines, "gpu_files": gpu, "gpu_lines": gpu_lines, "seed": seed,
                "gpu_fraction": gpu_fraction, "bytes": sum(p.stat().st_size for p in dest.rglob("*.py"))}
    (dest / "corpus.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dest")
    parser.add_argument("n_files", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpu-fraction", type=float, default=0.2)
    args = parser.parse_args(argv)
    print(json.dumps(build(Path(args.dest), args.n_files, args.seed, args.gpu_fraction)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
