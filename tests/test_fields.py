"""The fields of a class: a base class's methods run once, and their result is shared by the
subclasses that resolve alike what the run looked up on its object (``pinlint/analysis/fields.py``).

Sharing is a shortcut, never a change of verdict: every program below, the fixtures and the
interprocedural projects give the same findings with sharing turned off; an override of something a
base method calls stops the sharing (the subclass gets its own run); and the number of method runs
grows with the number of classes, not with classes times base methods.
"""

from __future__ import annotations

import textwrap

import pytest

from helpers import FIXTURES, codes, findings, row_of, rows, source

from pinlint import engine
from pinlint.analysis import fields
from pinlint.settings import Settings

# A base whose __init__ asks a hook for its host buffer; subclasses keep or override the hook.
_HOOKED = """
import numpy as np
import cupy as cp
import cupyx


class Base:
    def __init__(self):
        self.h = self.make()
        self.d = cp.empty(4, cp.float32)
        self.s = cp.cuda.Stream(non_blocking=True)

    def make(self):
        return cupyx.empty_pinned(1 << 20, cp.float32)

{first}

{second}
"""
_PINNED = """
class Pinned(Base):
    def push(self):
        self.d.set(self.h, stream=self.s)
"""
_PAGEABLE = """
class Pageable(Base):
    def make(self):
        return np.empty(1 << 20, np.float32)

    def push(self):
        self.d.set(self.h, stream=self.s)  # pageable: PIN001
"""

_PROGRAMS = {
    "hook kept, then overridden": _HOOKED.format(first=_PINNED, second=_PAGEABLE),
    "hook overridden, then kept": _HOOKED.format(first=_PAGEABLE, second=_PINNED),
    "base keeps its object in a field": """
import numpy as np
import cupy as cp

class Base:
    def __init__(self):
        self.me = self
        self.d = cp.empty(4, cp.float32)
        self.s = cp.cuda.Stream(non_blocking=True)

class Child(Base):
    def setup(self):
        self.h = np.empty(1 << 20, np.float32)

    def push(self):
        self.me.d.set(self.h, stream=self.s)

class Other(Base):
    def push(self):
        self.d.set(self.me.d.get(), stream=self.s)
""",
    "subclass adds the method a base method calls": """
import numpy as np
import cupy as cp

class Base:
    def __init__(self):
        self.d = cp.empty(4, cp.float32)
        self.s = cp.cuda.Stream(non_blocking=True)

    def prepare(self):
        self.h = self.load()

class Plain(Base):
    def push(self):
        self.d.set(self.h, stream=self.s)

class Loading(Base):
    def load(self):
        return np.empty(1 << 20, np.float32)

    def push(self):
        self.d.set(self.h, stream=self.s)
""",
    "a property overridden in a subclass": """
import numpy as np
import cupy as cp
import cupyx

class Base:
    @property
    def size(self):
        return 1 << 20

    def __init__(self):
        self.h = self.fresh()
        self.d = cp.empty(4, cp.float32)
        self.s = cp.cuda.Stream(non_blocking=True)

    def fresh(self):
        return cupyx.empty_pinned(1 << 20, cp.float32)

class A(Base):
    def push(self):
        self.d.set(self.h, stream=self.s)

class B(Base):
    def fresh(self):
        return np.zeros(self.size, np.float32)

    def push(self):
        self.d.set(self.h, stream=self.s)
""",
}


def _all(src: str) -> list:
    return [(f.code, f.location.row, f.message) for f in findings(src)]


@pytest.fixture
def no_sharing(monkeypatch):
    def turn_off():
        monkeypatch.setattr(fields.FieldSolver, "_resolves_alike", lambda self, info, share: False)
    return turn_off


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_sharing_changes_no_finding(name, no_sharing):
    src = _PROGRAMS[name]
    shared = _all(src)
    no_sharing()
    assert _all(src) == shared


@pytest.mark.slow
def test_sharing_changes_no_finding_in_the_fixtures_and_projects(no_sharing):
    from interproc_projects import PROJECTS

    sources = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))]
    sources += [textwrap.dedent(text) for files in PROJECTS.values() for text in files.values()]
    shared = [_all(src) for src in sources]
    no_sharing()
    assert [_all(src) for src in sources] == shared
    assert sum(map(len, shared)) > 50


@pytest.mark.parametrize("name", ["hook kept, then overridden", "hook overridden, then kept"])
def test_an_overridden_hook_gets_its_own_run(name):
    src = _PROGRAMS[name]
    assert rows(src, "PIN001") == [n + 1 for n, line in enumerate(source(src).splitlines()) if "PIN001" in line]


def test_a_subclass_adding_the_called_method_gets_its_own_run():
    src = _PROGRAMS["subclass adds the method a base method calls"]
    lines = source(src).splitlines()
    loading_push = max(n for n, line in enumerate(lines) if "self.d.set" in line) + 1
    assert rows(src, "PIN001") == [loading_push]


def _method_runs(src: str) -> int:
    project = engine.start_project()
    try:
        result = engine.lint_text(source(src), "t.py", Settings())
        assert result.error is None
        return project.fields.runs
    finally:
        engine.end_project()


def _many_subclasses(count: int, override: bool) -> str:
    base = ["import numpy as np", "import cupy as cp", "", "class Base:",
            "    def __init__(self):", "        self.s = cp.cuda.Stream(non_blocking=True)",
            "        self.d = cp.empty(4, cp.float32)"]
    for k in range(10):
        base += [f"    def setup{k}(self):", f"        self.h{k} = np.empty(1 << 20, np.float32)"]
    for n in range(count):
        base += [f"class T{n}(Base):", "    def push(self):", "        self.d.set(self.h0, stream=self.s)"]
        if override:
            base += ["    def setup0(self):", "        self.h0 = np.empty(1 << 21, np.float32)"]
    return "\n".join(base) + "\n"


def test_base_methods_run_once_for_all_subclasses():
    few, many = _method_runs(_many_subclasses(2, False)), _method_runs(_many_subclasses(20, False))
    # 11 base methods set fields; each subclass adds one method of its own (push reads only).
    assert many - few <= 18 * 1, (few, many)
    assert len(findings(_many_subclasses(20, False))) == 20   # every subclass's push is still reported


def test_subclasses_that_override_what_a_base_method_sets_still_share_the_rest():
    few, many = _method_runs(_many_subclasses(2, True)), _method_runs(_many_subclasses(20, True))
    # Each subclass runs its own setup0; the base's other methods do not look it up, so they are shared.
    assert many - few <= 18 * 2, (few, many)
    assert len(findings(_many_subclasses(20, True))) == 20


def _hook_program(count: int, base_runs_hook: bool) -> str:
    use = "self.h = self.hook()" if base_runs_hook else "atexit.register(self.hook)"
    lines = ["import atexit", "import numpy as np", "import cupy as cp", "", "class Base:",
             "    def __init__(self):", "        self.s = cp.cuda.Stream(non_blocking=True)",
             "        self.d = cp.empty(4, cp.float32)", f"        {use}",
             "    def hook(self):", "        return None"]
    for k in range(6):
        lines += [f"    def setup{k}(self):", f"        self.g{k} = np.empty(1 << 20, np.float32)"]
    for n in range(count):
        lines += [f"class T{n}(Base):", "    def hook(self):", "        return np.empty(1 << 20, np.float32)",
                  "    def push(self):", "        self.d.set(self.g0, stream=self.s)"]
    return "\n".join(lines) + "\n"


def test_a_method_only_taken_as_a_value_does_not_stop_the_sharing():
    # `atexit.register(self.hook)`: whichever class's hook it is, the run gives the same fields.
    taken = _method_runs(_hook_program(20, False)) - _method_runs(_hook_program(2, False))
    # `self.h = self.hook()`: every subclass's hook runs, so the base's __init__ runs for each.
    run = _method_runs(_hook_program(20, True)) - _method_runs(_hook_program(2, True))
    assert taken < 2 * 18, taken       # at most about one run per subclass (its own methods)
    assert run >= 5 * 18, run          # the base's seven methods again for each subclass
    assert len(findings(_hook_program(3, True))) == 3   # push of each subclass: g0 is pageable


# ------------------------------------------------------------------ fields filled in place by another method
_FILLED = """
import numpy as np
import pycuda.driver as cuda


class HostDeviceMem:
    def __init__(self, host, device):
        self.host = host
        self.device = device


class Model:
    def __init__(self):
        self.inputs = []
        self.stream = cuda.Stream()

    def allocate_buffers(self, size):
        host = {host}
        self.inputs.append(HostDeviceMem(host, cuda.mem_alloc(host.nbytes)))

    def infer(self):
        for inp in self.inputs:
            cuda.memcpy_htod_async(inp.device, inp.host, self.stream)  {mark}
        self.stream.synchronize()
"""


@pytest.mark.parametrize("host, expected", [
    ("np.empty(size, np.float32)", True),                  # pageable: the copy is PIN001
    ("cuda.pagelocked_empty(size, np.float32)", False),   # pinned: quiet
])
def test_a_list_kept_in_init_and_filled_by_another_method_holds_what_was_appended(host, expected):
    src = _FILLED.format(host=host, mark="# PIN001" if expected else "")
    lines = source(src).splitlines()
    assert rows(src, "PIN001") == ([n + 1 for n, line in enumerate(lines) if "# PIN001" in line] if expected else [])


def test_a_holder_filled_in_place_then_overwritten_by_a_callers_pageable_batch():
    """A holder list made in __init__, filled with pinned buffers by allocate_buffers, and one of its
    holders given the caller's batch in infer: the caller's pageable batch is reported where it is
    passed; a pinned batch is not."""
    body = _FILLED.format(host="cuda.pagelocked_empty(size, np.float32)", mark="") + """

    def infer_batch(self, batch):
        self.inputs[0].host = batch
        [cuda.memcpy_htod_async(inp.device, inp.host, self.stream) for inp in self.inputs]
        self.stream.synchronize()


class Detection(Model):
    def run(self, images):
        self.infer_batch(np.array(images, dtype=np.float32))  # PIN001

    def run_pinned(self, n):
        self.infer_batch(cuda.pagelocked_empty(n, np.float32))
"""
    lines = source(body).splitlines()
    assert rows(body, "PIN001") == [n + 1 for n, line in enumerate(lines) if "# PIN001" in line]


def test_a_dict_kept_in_init_and_filled_by_key_in_another_method():
    src = """
import numpy as np
import cupy as cp


class Buffers:
    def __init__(self):
        self.host = {}
        self.d = cp.empty(1 << 20, cp.float32)
        self.s = cp.cuda.Stream(non_blocking=True)

    def prepare(self, name):
        self.host[name] = np.empty(1 << 20, np.float32)

    def push(self, name):
        self.d.set(self.host[name], stream=self.s)  # PIN001
"""
    lines = source(src).splitlines()
    assert rows(src, "PIN001") == [n + 1 for n, line in enumerate(lines) if "# PIN001" in line]


def test_the_run_again_of_a_base_method_filling_a_field_is_shared_by_the_subclasses():
    def program(count: int) -> str:
        src = _FILLED.format(host="np.empty(size, np.float32)", mark="")
        return source(src) + "".join(f"\n\nclass M{n}(Model):\n    def name(self):\n        return {n}\n"
                                     for n in range(count))
    few, many = _method_runs(program(2)), _method_runs(program(20))
    assert many - few <= 2, (few, many)   # unshared, each subclass ran allocate_buffers again: 18 more


# ------------------------------------------------------------------ a dict kept in a list, changed by key
_DICT_HOLDERS = """
import numpy as np
import pycuda.driver as cuda


class BaseEngine:
    def __init__(self, size):
        self.inputs = []
        self.stream = cuda.Stream()
        host = cuda.pagelocked_empty(size, np.float32)
        self.inputs.append({"host": host, "device": cuda.mem_alloc(host.nbytes)})

    def infer(self, img):
        self.inputs[0]["host"] = np.ravel(img)
        for inp in self.inputs:
            cuda.memcpy_htod_async(inp["device"], inp["host"], self.stream)
        self.stream.synchronize()

    def run(self, n):
        self.infer(np.ascontiguousarray(np.ones((3, n)), dtype=np.float32))  # PIN001

    def run_pinned(self, n):
        self.infer(cuda.pagelocked_empty(n, np.float32))
"""


def test_a_dict_in_a_list_changed_by_key_holds_the_new_buffer():
    """``self.inputs[0]["host"] = np.ravel(img)`` replaces the pinned buffer of the first holder (a dict
    kept in a list, as TensorRT YOLO engines keep them) by a view of the caller's array: a caller's
    pageable array is reported where it is passed, a pinned one is not."""
    lines = source(_DICT_HOLDERS).splitlines()
    assert rows(_DICT_HOLDERS, "PIN001") == [n + 1 for n, line in enumerate(lines) if "# PIN001" in line]


def test_a_classmethod_called_through_the_object_leaves_the_object_alone():
    """`self._probe()` of a classmethod that sets a class attribute: `cls` is the class, not the
    object `self` names (taking the class for the object, then joining the two, recursed without
    end and the whole file was skipped as "nested too deeply")."""
    from helpers import codes, row_of, rows
    src = """
import torch
class Loader:
    HAS = None
    @classmethod
    def _probe(cls):
        cls.HAS = True
    def __init__(self, flag):
        if flag:
            self._probe()
        self.buf = torch.empty(1 << 24)
    def push(self):
        self.buf.to("cuda", non_blocking=True)
def main():
    h = torch.empty(1 << 24)
    h.to("cuda", non_blocking=True)
    return Loader(True)
"""
    assert rows(src, "PIN001") == [row_of(src, "self.buf.to("), row_of(src, "h.to(")]
    assert "PIN000" not in codes(src)


def test_an_object_and_its_class_are_two_alternatives():
    from pinlint.analysis.domain import Alternatives, ClassRef, Instance, join
    import libcst as cst
    klass = ClassRef(node=cst.parse_statement("class Loader: pass"), name="Loader")
    both = join(Instance(klass, ()), klass)
    assert isinstance(both, Alternatives) and len(both.options) == 2
    assert join(both, Instance(klass, ())) == both


# ------------------------------------------------------------------ a field that may be None
# A buffer field set to None by __init__ (or set by no constructor at all) and later by a method is
# "the buffer, or None": a memo guard on it (`if self.x is not None: return`, `if self.x is None:`)
# is not decided, so the copy after it is seen (exllamav2's `prep_tp` idiom).
_MEMO = """
import torch

class Params:
{init}
    def prep(self):
{guard}
        x = torch.randn(4096, 4096)
        self.cached = x.to("cuda", non_blocking=True)
"""

_GUARDS = {
    "early return": "        if self.cached is not None:\n            return",
    "early return, is": "        if self.cached is None:\n            pass\n        else:\n            return",
}
_INITS = {
    "None in __init__": "    def __init__(self):\n        self.cached = None\n",
    "class attribute": "    cached = None\n",
    "no constructor sets it": "",
}


@pytest.mark.parametrize("guard", sorted(_GUARDS))
@pytest.mark.parametrize("init", sorted(_INITS))
def test_a_memo_guard_on_a_field_does_not_hide_the_copy(init, guard):
    src = _MEMO.format(init=_INITS[init], guard=_GUARDS[guard])
    assert rows(src, "PIN001") == [row_of(src, "x.to(")]


def test_a_field_the_constructor_fills_is_not_none():
    # __init__ gives the field a buffer: `is None` is decided, the dead arm's copy is not reported.
    src = source("""
        import torch

        class Params:
            def __init__(self):
                self.cached = torch.empty(4, device="cuda")

            def prep(self):
                if self.cached is None:
                    x = torch.randn(4096, 4096)
                    self.cached = x.to("cuda", non_blocking=True)
        """)
    assert rows(src, "PIN001") == []


def test_an_object_a_method_returns_as_self_holds_what_the_method_set():
    # A builder (`Series(s).fill(b)` returning self): the returned object has the fields fill set.
    src = source("""
        import numpy as np
        import pycuda.autoinit
        import pycuda.driver as drv
        import pycuda.gpuarray as gpuarray

        class Series:
            def __init__(self, stream, **kwargs):
                self.stream = stream
                self.h = kwargs.get("h", None)   # nothing here tells what a caller passes
                self.d = None

            def fill(self, values):
                self.h = np.asarray(values).astype(np.float32)
                self.d = gpuarray.zeros(len(self.h), np.float32)
                return self

            def upload(self):
                self.d.set_async(self.h, stream=self.stream)

        def chained(b):
            Series(drv.Stream()).fill(b).upload()   # chained

        def kept(b):
            o = Series(drv.Stream()).fill(b)
            o.upload()   # kept
        """)
    assert rows(src, "PIN001") == [row_of(src, "# chained"), row_of(src, "# kept")]


@pytest.mark.parametrize("flag, reported", [("False", False), ("True", True)])
def test_a_constant_the_constructor_stores_decides_a_methods_branch(flag, reported):
    # Slot(n, writeback=False): the object's field is False, so load() never runs flush()'s D2H copy.
    src = source(f"""
        import numpy as np
        import cupy as cp

        class Slot:
            def __init__(self, nbytes, writeback=False):
                self.writeback = writeback
                self.host = None

            def flush(self, stream):
                if self.host is not None:
                    cp.cuda.runtime.memcpyAsync(self.host.ctypes.data, 0, 8, 2, stream.ptr)

            def load(self, host, stream):
                if self.writeback:
                    self.flush(stream)
                self.host = host

        def use():
            s = cp.cuda.Stream(non_blocking=True)
            a = np.ones((1024, 1024), np.float32)
            slot = Slot(a.nbytes, writeback={flag})
            slot.load(a, s)
            slot.load(a, s)   # second
        """)
    assert rows(src, "PIN001") == ([row_of(src, "# second")] if reported else [])


def test_a_field_of_one_of_two_objects_is_what_either_holds():
    # `A() if fast else B()`: the attribute and the method are looked up on each (in an order that
    # does not depend on writing out the objects, whose buffers' loops made that take minutes).
    src = source("""
        import numpy as np
        import cupy as cp

        class A:
            def __init__(self):
                self.buf = np.zeros(1 << 20, np.float32)
            def size(self):
                return self.buf.nbytes

        class B:
            def __init__(self):
                self.buf = np.ones(1 << 20, np.float32)
            def size(self):
                return self.buf.nbytes

        def upload(fast):
            holder = A() if fast else B()
            holder.size()
            d = cp.empty(1 << 20, np.float32)
            d.set(holder.buf, stream=cp.cuda.Stream(non_blocking=True))   # copy
        """)
    assert rows(src, "PIN001") == [row_of(src, "# copy")]


_LATE_HOLDER = """
import numpy as np
import pycuda.driver as drv


class HostDev:
    def __init__(self, host, dev):
        self.host = host
        self.dev = dev


class Binding:
{init}
    def allocate(self, count):
        h = {host}(count, np.float32)
        self._hd = HostDev(host=h, dev=drv.mem_alloc(h.nbytes))

    def push(self, stream):
        drv.memcpy_htod_async(self._hd.dev, self._hd.host, stream=stream)   # push
{guard}
"""


@pytest.mark.parametrize("init", ["    def __init__(self):\n        self._hd = None\n", "    _hd = None\n", ""])
@pytest.mark.parametrize("host, reported", [("np.zeros", True), ("drv.pagelocked_empty", False)])
def test_a_holder_built_by_a_method_after_none_in_init_holds_its_buffers(init, host, reported):
    # The field is None until `allocate()` builds the holder: where `push` reads `self._hd.host` the
    # field holds the holder (None would have raised), and the array is the caller's `np.zeros`.
    src = _LATE_HOLDER.format(init=init, host=host, guard="")
    found = [f for f in findings(src) if f.code == "PIN001"]
    assert [f.location.row for f in found] == ([row_of(src, "# push")] if reported else [])
    if reported:
        # the method's own allocation, not the construction that only keeps what it is handed
        assert "allocated by `np.zeros` at line" in found[0].message


def test_a_none_guard_on_a_late_holder_keeps_both_arms():
    # `if self._hd is None: self.allocate(n)` in the method that may build it: both arms can run.
    guard = ("    def ensure(self, n, stream):\n        if self._hd is None:\n            self.allocate(n)\n"
             "        drv.memcpy_htod_async(self._hd.dev, self._hd.host, stream=stream)   # ensure\n")
    src = _LATE_HOLDER.format(init="    def __init__(self):\n        self._hd = None\n", host="np.zeros", guard=guard)
    assert rows(src, "PIN001") == [row_of(src, "# push"), row_of(src, "# ensure")]


_WIRED = """
import numpy as np
import pycuda.driver as cuda

dev = cuda.mem_alloc(1 << 22)
stream = cuda.Stream()


class Handler:
    def predict(self, img):
        cuda.memcpy_htod_async(dev, img, stream)


class Worker:
    def __init__(self, handler):
        self.handler = handler

    def process(self, frame):
        x = np.array(frame, dtype="float32")
        return self.handler.predict(x)


def main(frame):
    worker = Worker(HANDLER)
    return worker.process(frame)   # call
"""


@pytest.mark.parametrize("handler, reported", [("Handler()", True), ("make()", False)])
def test_an_object_a_constructor_stores_from_its_parameter_runs_its_methods(handler, reported):
    # `Worker(Handler())` keeps the handler in a field; `process` calling `self.handler.predict(x)` runs
    # the handler's method on its own pageable array (face-mask-ssd-trt, survey 33). An object nothing
    # explains (`make()` of another package) leaves the field unknown.
    src = _WIRED.replace("HANDLER", handler)
    assert rows(src, "PIN001") == ([row_of(src, "# call")] if reported else [])


@pytest.mark.parametrize("test, reported", [
    ("self.device_map == 'auto' and self.num_gpus == 1", True),   # the other path keeps "auto"
])
def test_a_field_stored_on_one_path_keeps_its_value_on_the_other(test, reported):
    # RetrievalAttention's init_model (survey 34): a field set in one arm of an `if` still holds what
    # it held before on the other arm; the multi-GPU arm after it runs where "auto" stays.
    src = f"""
import torch
class Model:
    def __init__(self, n, device_map="auto"):
        self.n = n
        self.device_map = device_map
    def init_model(self):
        self.num_gpus = torch.cuda.device_count() if self.device_map == 'auto' else 1
        if {test}:
            self.device_map = 'cuda:0'
        if self.device_map != "auto":
            self.ids = torch.arange(0, self.n).to(self.device_map, non_blocking=True)
        else:
            self.ids = torch.arange(0, self.n).to("cuda:1", non_blocking=True)   # multi
def main():
    Model(4096).init_model()
"""
    assert (row_of(src, "# multi") in rows(src, "PIN001")) == reported


def test_a_property_assignment_in_init_keeps_the_fields_stored_before_it():
    # ChI-SOM's trainer (survey 34): `self._stream` is stored, then `self.codebook = cb` runs a setter;
    # a device array made on `self._stream` afterwards still remembers that stream, so the no-argument
    # `copy_to_host()` is an asynchronous copy into new pageable memory.
    src = source("""
        import numpy as np
        from numba import cuda

        class Trainer:
            def __init__(self, codebook):
                self._stream = cuda.stream()
                self.codebook = codebook
                self.part = cuda.device_array((32, 48), np.int32, stream=self._stream)

            @property
            def codebook(self):
                return self._codebook

            @codebook.setter
            def codebook(self, cb):
                self._codebook = cb

            def dump(self):
                return self.part.copy_to_host()   # copy
        """)
    assert rows(src, "PIN001") == [row_of(src, "# copy")]


_FORWARDED = """
import numpy as np
import pycuda.driver as drv


class Base:
    def __init__(self, engine, count):
        self.engine = engine
        self.count = count


class Engine:
    def __init__(self):
        self.stream = {stream}


class Buffer(Base):
    def __init__(self, engine, count):
        {init}
        self.dev = drv.mem_alloc(count * 4)

    def put(self, host):
        drv.memcpy_htod_async(self.dev, host, self.engine.stream)


def run(n):
    Buffer(Engine(), n).put(np.ones(1 << 20, dtype=np.float32))
"""


@pytest.mark.parametrize("init", ["super().__init__(engine, count)", "super(Buffer, self).__init__(engine, count)",
                                  "Base.__init__(self, engine, count)", "super().__init__(engine, count=count)"])
def test_an_object_handed_to_the_base_class_constructor_is_the_field_it_sets(init):
    # neon (survey 40): the backend reaches each tensor through `super().__init__(backend, ...)`, and its
    # stream is None everywhere: `memcpy_htod_async(d, h, None)` asks for no overlap.
    assert codes(_FORWARDED.format(init=init, stream="None")) == []
    assert codes(_FORWARDED.format(init=init, stream="drv.Stream()")) == ["PIN001"]


def test_an_object_stays_of_its_class_after_its_base_constructor_ran_on_it():
    # robotplan (a regression of 36c2faa): `super(CudaAgent, self).__init__(vehicle)` made the agent an
    # object of the base class, so `agent.run_step()` ran the base's method, not the subclass's copies.
    src = """
import numpy as np
from numba import cuda


class Base:
    def __init__(self, name):
        self.name = name

    def upload(self):
        return None


class Agent(Base):
    def __init__(self, name, host):
        super().__init__(name)
        self.host = host

    def upload(self):
        return cuda.to_device(self.host, stream=cuda.stream())


agent = Agent("a", np.zeros(1 << 20))
agent.upload()
"""
    assert rows(src, "PIN001") == [row_of(src, "agent.upload()")]


@pytest.mark.parametrize("placeholder", ["self.stream = None", "pass"])
def test_a_field_a_called_method_sets_replaces_the_value_set_before_the_call(placeholder):
    # `self.stream = None` then `self._setup()` setting it to a stream: after the call the field is the
    # stream, not the None the constructor wrote first (Real-Time-Multi-Model-AI-Pipeline's face
    # recognizer, survey 43: the copy looked synchronous and its pageable batch went unreported).
    src = source(f"""
        import numpy as np
        import pycuda.driver as cuda


        class Recognizer:
            def __init__(self):
                {placeholder}
                self._setup()

            def _setup(self):
                self._make_stream()
                self.d_in = cuda.mem_alloc(1 << 22)

            def _make_stream(self):
                self.stream = cuda.Stream()

            def infer(self, batch):
                cuda.memcpy_htod_async(self.d_in, batch, self.stream)
                self.stream.synchronize()


        def process(n):
            crops = np.empty((n, 3, 112, 112), dtype=np.float32)
            Recognizer().infer(crops)
        """)
    assert rows(src, "PIN001") == [row_of(src, "Recognizer().infer")]
    default = src.replace("self.stream = cuda.Stream()", "self.stream = None")
    assert rows(default, "PIN001") == []


def test_a_property_set_on_an_object_a_nested_function_captures_is_no_internal_error():
    # NanoLLM's auto-prompt plugin (survey 45): `panel.layout = value` in a function nested in the
    # `__main__` block, `panel` bound outside it; the setter's object is the captured one. This raised
    # AttributeError inside the analysis (exit 2, "internal error") before.
    src = source("""
        import cupy as cp


        class Panel:
            def __init__(self):
                self._layout = "grid"
                self.buf = cp.zeros(4)

            @property
            def layout(self):
                return self._layout

            @layout.setter
            def layout(self, value):
                self._layout = value


        if __name__ == "__main__":
            panel = Panel()

            def relayout(value):
                panel.layout = value

            relayout("row")
        """)
    assert codes(src) == []


# ------------------------------------------------------------------ a flag that picks the array library
_BACKEND = """
import importlib
from dataclasses import dataclass
import numpy as np
import cupy


@dataclass
class Settings:
    use_cuda: bool = {default}


class Backend:
    def __init__(self, cuda=False):
        if cuda:
            self._xp = importlib.import_module("cupy")
        else:
            self._xp = np


class Block(Backend):
    def __init__(self, count, cuda=False):
        super().__init__(cuda)
        self.data = np.zeros(count)


class Filter(Backend):
    def __init__(self, cuda=False):
        super().__init__(cuda)

    def run(self, sig):
        return self._xp.asarray(sig)


def main():
    cfg = Settings()
    blk = Block(1 << 20, cuda=cfg.use_cuda)
    flt = Filter(cuda={flag})
    while True:
        flt.run(blk.data)
"""


@pytest.mark.parametrize("default, flag, reported", [
    # one flag, off: NumPy's asarray moves nothing (radio-core, survey 51 AX)
    ("False", "cfg.use_cuda", False),
    ("False", "False", False),
    # on: CuPy's asarray copies the pageable block to the GPU on every pass
    ("True", "cfg.use_cuda", True),
    ("False", "True", True),
])
def test_a_constant_handed_to_a_base_constructor_picks_the_array_library(default, flag, reported):
    src = _BACKEND.format(default=default, flag=flag)
    assert ("PIN007" in codes(src)) == reported, src


_ANNOTATED_SETTINGS = """
from dataclasses import dataclass
import numpy as np
import cupy as cp


@dataclass
class Settings:
    use_cuda: bool = False


def upload(cfg: Settings):
    h = np.zeros(1 << 20)
    d = cp.zeros(1 << 20)
    for i in range(10):
        if {test}:
            d.set(h)
"""


@pytest.mark.parametrize("test", ["cfg.use_cuda", "not cfg.use_cuda"])
def test_a_dataclass_field_of_an_object_built_elsewhere_is_its_default_or_anything(test):
    """`cfg: Settings` may have been built as `Settings(use_cuda=True)`: both arms can run."""
    src = _ANNOTATED_SETTINGS.format(test=test)
    assert rows(src, "PIN007") == [row_of(src, "d.set(h)")]


def test_a_dataclass_built_here_with_its_defaults_has_them():
    src = _ANNOTATED_SETTINGS.format(test="cfg.use_cuda") + "\n\ndef main():\n    upload(Settings())\n"
    assert rows(src, "PIN007") == [row_of(src, "d.set(h)")]  # the function's own analysis: both arms
    src = src.replace("def upload(cfg: Settings):", "def upload(cfg):").replace(
        "    upload(Settings())", "    cfg = Settings()\n    h = np.zeros(1 << 20)\n    d = cp.zeros(1 << 20)\n"
        "    for i in range(10):\n        if cfg.use_cuda:\n            d.set(h)  # main")
    assert row_of(src, "d.set(h)  # main") not in rows(src, "PIN007")
