"""PIN002 pinned-alloc-in-loop."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..analysis import FileFacts
from ..analysis.effects import LOADER_BATCH
from ..analysis.invariance import Changes, arithmetic_names, collect_changes, loop_changes, names_read, stepped_names
from ..model import EventType, first_site, scoped_registration, site_order
from ..walk import code_nodes, code_parts, suite_body, target_names
from ..fixers import hoist_allocation
from .base import CheckContext, Report, Rule


# Arguments that never give a size (keywords of the pinning APIs and of a helper's call).
_NOT_SIZES = frozenset({"dtype", "device", "pin_memory", "mem_flags", "flags", "order", "stream", "layout",
                        "requires_grad", "alignment", "portable", "wc", "non_blocking"})


def _literal_of_changing_values(node, loop) -> bool:
    """``torch.tensor([n, len(ids)], pin_memory=True)``: the data is a list or tuple display, and one of
    its elements reads a name the loop binds or changes."""
    if not isinstance(node, cst.Call) or not node.args or node.args[0].keyword is not None or node.args[0].star:
        return False
    data = node.args[0].value
    if not isinstance(data, (cst.List, cst.Tuple)) or not data.elements:
        return False
    if isinstance(loop, (cst.For, cst.While)):
        changes = loop_changes(loop)
    else:
        # a comprehension: its `for` targets change on each element
        changes = Changes()
        clause = getattr(loop, "for_in", None)
        while isinstance(clause, cst.CompFor):
            changes.target(clause.target)
            clause = clause.inner_for_in
    changed = changes.bound | changes.mutated_names
    return any(names_read(element.value) & changed for element in data.elements)


def _size_steps_with(node, loop) -> bool:
    """Whether the allocation's size arguments read a name the loop steps (``stepped_names``): each
    iteration asks for a different size, so there is no one buffer to allocate before the loop."""
    if not isinstance(node, cst.Call):
        return False
    stepped = stepped_names(loop)
    if not stepped:
        return False
    sizes = [arg.value for arg in node.args if arg.keyword is None or arg.keyword.value not in _NOT_SIZES]
    if not sizes and isinstance(node.func, cst.Attribute):
        # `t.pin_memory()`, `torch.randn(n).pin_memory()`: the size of the tensor it copies
        return _sized_by(node.func.value, loop, stepped)
    return any(arithmetic_names(size) & stepped for size in sizes)


_SHAPED_CONSTRUCTORS = frozenset({"empty", "zeros", "ones", "rand", "randn", "full"})


def _sized_by(receiver, loop, stepped: frozenset) -> bool:
    """Whether the tensor ``receiver`` names is made, in the loop, with a size that reads a stepped
    name: ``torch.randn(n, d)`` itself, or a name the loop's body binds to one (``x = torch.randn(n,
    d)`` then ``x.pin_memory()``: thesis's size sweep, survey 49 U)."""
    if isinstance(receiver, cst.Call):
        func = receiver.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        # a constructor whose arguments are its shape (not `torch.tensor(lengths)`, whose are its data)
        return name in _SHAPED_CONSTRUCTORS and any(arithmetic_names(arg.value) & stepped for arg in receiver.args
                                                    if arg.keyword is None or arg.keyword.value not in _NOT_SIZES)
    if not isinstance(receiver, cst.Name) or not isinstance(loop, (cst.For, cst.While)):
        return False
    made = [part.value for part in code_nodes(loop.body, into_definitions=False)
            if isinstance(part, cst.Assign) and len(part.targets) == 1 and
            isinstance(part.targets[0].target, cst.Name) and part.targets[0].target.value == receiver.value]
    return bool(made) and all(isinstance(value, cst.Call) and _sized_by(value, loop, stepped) for value in made)


_DEVICE_KEYWORDS = frozenset({"device", "device_id", "gpu_id"})
_DEVICE_CALLS = frozenset({"set_device", "device", "Device", "cuda", "select_device"})


def _per_device(loop) -> bool:
    """A loop over GPUs: its body picks a device with the loop's variable (``device=f"cuda:{g}"``,
    ``torch.cuda.set_device(g)``, ``with cp.cuda.Device(g):``, ``Stream(device=g)``). Each device (and
    the memory node near it) needs a buffer of its own: there is no one buffer to hoist."""
    if not isinstance(loop, cst.For):
        return False
    names = set(target_names(loop.target))
    if not names:
        return False

    def picks(expr) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in names
        if isinstance(expr, cst.FormattedString):
            text = "".join(p.value for p in expr.parts if isinstance(p, cst.FormattedStringText))
            return "cuda" in text and any(picks(p.expression) for p in expr.parts
                                          if isinstance(p, cst.FormattedStringExpression))
        return False

    stack = [loop.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            func = node.func
            attr = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in _DEVICE_KEYWORDS and picks(arg.value) or \
                        arg.keyword is None and attr in _DEVICE_CALLS and picks(arg.value) or \
                        isinstance(arg.value, cst.FormattedString) and picks(arg.value):
                    return True
        stack.extend(code_parts(node))
    return False


def _configurations(node, loops, module: cst.Module) -> bool:
    """A call that passes the target of a loop over a literal list of constants (``for fp8 in [True,
    False]:``, ``for mode in ("a", "b"):``, or a module's ``BLOCK_COUNTS = [64, 128]``), or a name the
    loop's body makes from it (``layout = make_layout(blocks)``): a test or benchmark running the
    helper once per configuration, each of which may allocate differently; there is no one buffer
    to hoist. A loop inside the configuration's that repeats the call (`for split in ["train", "val"]:
    for k in range(eval_iters): get_batch(split)`, nanoGPT's evaluation) runs it again and again with
    one configuration: that is a loop like any other."""
    if not isinstance(node, cst.Call):
        return False
    passed = {arg.value.value for arg in node.args if isinstance(arg.value, cst.Name)}
    for depth, loop in enumerate(loops):  # outermost first
        if not _over_constants(loop, module):
            continue
        if not all(_over_constants(inner, module) for inner in loops[depth + 1:]):
            continue
        # `for path, streaming in [(out_a, True), (out_b, False)]:` too: one run per settings tuple
        if any(passed & _made_from(loop, target) for target in target_names(loop.target)):
            return True
    return False


def _over_constants(loop, module: cst.Module) -> bool:
    return isinstance(loop, cst.For) and isinstance(loop.target, (cst.Name, cst.Tuple, cst.List)) and \
        _constant_list(loop.iter, module)


def _constant_list(node, module: cst.Module) -> bool:
    """A literal list or tuple of constants, or a module-level name bound once to one."""
    if isinstance(node, cst.Name):
        lines = _top_level_lines(module)
        bound = [statement.value for line in lines if isinstance(line, cst.SimpleStatementLine)
                 for statement in line.body if isinstance(statement, (cst.Assign, cst.AnnAssign, cst.AugAssign))
                 and node.value in _statement_targets(statement)]
        if len(bound) != 1 or any(node.value in _bound_in(line) for line in lines
                                  if not isinstance(line, cst.SimpleStatementLine)):
            return False
        node = bound[0]
    return isinstance(node, (cst.List, cst.Tuple)) and bool(node.elements) and \
        all(_literal(e.value) or _settings(e.value) for e in node.elements)


def _settings(node) -> bool:
    """A tuple of settings: constants and names (`(out_streaming, True)`)."""
    return isinstance(node, cst.Tuple) and bool(node.elements) and \
        all(_literal(e.value) or isinstance(e.value, cst.Name) for e in node.elements)


def _top_level_lines(module: cst.Module) -> list:
    """The module's statements, those of its ``if __name__ == "__main__":`` block among them (a
    script's sweep list is often bound there: Sparse-vLLM's bandwidth probe, survey 57 GH)."""
    lines: list = []
    for line in module.body:
        if isinstance(line, cst.If) and line.orelse is None and _main_guard(line.test):
            lines.extend(_arms_flattened(suite_body(line.body)))
        else:
            lines.append(line)
    return lines


def _arms_flattened(body) -> list:
    """A block's statements, those of its ``if`` arms among them (``if torch.cuda.is_available():
    sizes = [...]`` in the main block)."""
    lines: list = []
    for line in body:
        if isinstance(line, cst.If):
            lines.extend(_arms_flattened(suite_body(line.body)))
            orelse = line.orelse
            if isinstance(orelse, cst.If):
                lines.extend(_arms_flattened([orelse]))
            elif orelse is not None:
                lines.extend(_arms_flattened(suite_body(orelse.body)))
        else:
            lines.append(line)
    return lines


def _main_guard(test) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 or \
            not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(isinstance(a, cst.Name) and a.value == "__name__" for a in sides) and \
        any(isinstance(b, cst.SimpleString) and b.evaluated_value == "__main__" for b in sides)


def _statement_targets(statement) -> set:
    """The plain names an assignment statement binds (``A = B = [...]``, ``A: list = [...]``)."""
    targets = [t.target for t in statement.targets] if isinstance(statement, cst.Assign) else [statement.target]
    return {t.value for t in targets if isinstance(t, cst.Name)}


def _bound_in(statement) -> frozenset:
    changes = Changes()
    collect_changes(changes, [statement])
    return frozenset(changes.bound)


def _made_from(loop: cst.For, target: str) -> set:
    """The loop's target and the names its body binds, by a plain assignment, from it or from such a
    name (``layout = make_layout(blocks)``; ``cfg = Config(n=blocks)``)."""
    made = {target}
    assignments = []
    stack = [loop.body]
    while stack:
        item = stack.pop()
        if isinstance(item, cst.Assign) and len(item.targets) == 1 and isinstance(item.targets[0].target, cst.Name):
            assignments.append((item.targets[0].target.value, names_read(item.value)))
        elif isinstance(item, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(code_parts(item))
    grew = True
    while grew:
        grew = False
        for name, reads in assignments:
            if name not in made and reads & made:
                made.add(name)
                grew = True
    return made


def _literal(node) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    return isinstance(node, cst.Name) and node.value in ("True", "False", "None")


def _made_from_this_iteration(node, loop) -> bool:
    """The allocating call reads an object a call of the iteration builds (``make_io(engine)`` after
    ``engine = build(name)``): each iteration's buffers belong to another object, sized by it. (Data of
    the iteration, `batch["pixel_values"]`, usually keeps its size: its buffers could be made once.)"""
    if not isinstance(node, cst.Call) or not isinstance(loop, (cst.For, cst.While)):
        return False
    built = {item.targets[0].target.value for item in code_nodes(loop.body, into_definitions=False)
             if isinstance(item, cst.Assign) and len(item.targets) == 1 and isinstance(item.targets[0].target, cst.Name)
             and isinstance(item.value, cst.Call)}
    return any(names_read(arg.value) & built for arg in node.args)


def _reused_in_an_inner_loop(events, alloc) -> bool:
    """The buffer is copied in a loop inside the iteration that allocates it (one pinning per model,
    then a transfer per image of an inner loop: Ensemble-Model-Inference, survey 33): its cost is
    spread over that loop's transfers, not paid for one transfer. (A buffer of the same making on every
    iteration, `cuda.pinned_array(1024)` per epoch, could be made once: reported.)"""
    depth = len(alloc.loops)
    return any(e.type is EventType.COPY and e.sites & alloc.sites and len(e.loops) > depth and
               e.loops[:depth] == alloc.loops for e in events)


class PinnedAllocInLoop(Rule):
    code = "PIN002"
    name = "pinned-alloc-in-loop"
    summary = "Pinned allocation or registration whose buffer lives for one iteration of a loop"

    def check(self, facts: FileFacts, ctx: CheckContext) -> Iterator[Report]:
        # A call that pins several buffers for the iteration (a helper registering each of its
        # arguments) is one finding there, naming how many.
        at: dict = {}
        for found in self._found(facts, ctx):
            at.setdefault(id(found[0].node), []).append(found)
        for group in at.values():
            # the finding names the first pinning in the code, whatever order the events came in
            event, site, plan = group[0] if len(group) == 1 else \
                min(group, key=lambda found: (site_order(found[1]), found[0].api))
            sites = frozenset().union(*(e.sites for e, _, _ in group))
            yield Report(event.node, self._message(event, site, ctx, more=len(group) - 1), sites, plan,
                         trace=event.trace)

    def _found(self, facts: FileFacts, ctx: CheckContext) -> Iterator[tuple]:
        """(event, its site, the fix plan) of each pinning that lives for one iteration."""
        for scope in facts.scopes:
            escaped = scope.escaped()
            for event in scope.events:
                if event.type not in (EventType.ALLOC, EventType.REGISTER) or not event.loops:
                    continue
                if not event.definitely(lambda s: s.kind.is_pinned) or facts.conditional_in_loop(event):
                    continue
                if event.definitely(lambda s: s.metadata_block and s.fresh_pool_block):
                    # `torch.tensor(lengths, pin_memory=True).cuda(non_blocking=True)` each step: the
                    # idiom for an asynchronous upload of values built in Python (``Site.metadata_block``);
                    # `t.pin_memory()` copies a tensor on every iteration, and stays reported.
                    continue
                if event.definitely(lambda s: all(o.pooled and o.python_numbers and o.nbytes is None for o in s.origins())):
                    # `torch.tensor(offsets).pin_memory()` each step (torchrec's _pin_and_move): a pool
                    # block for a tensor of Python numbers, one per Python object, copied from its list;
                    # the same per-step metadata idiom as above, with one copy of a few bytes more (a
                    # literal of constants, the same each step, could be hoisted: it stays reported).
                    continue
                if event.loops and _literal_of_changing_values(event.node, event.loops[-1]) and \
                        event.definitely(lambda s: s.fresh_pool_block and
                                         all(o.from_values and o.python_numbers for o in s.origins())):
                    # `torch.tensor([parts[r].numel()], pin_memory=True)` each step: the same idiom, of a
                    # literal whose numbers the loop changes (there is no one tensor to make before it)
                    continue
                if event.definitely(lambda s: all(o.variant == "dest" for o in s.origins())):
                    # `t.to("cpu", non_blocking=True)` returned by a helper: the library made the pinned
                    # destination of its own copy (from its host pool), as it does for the same call
                    # written in the loop, which is no allocation of the code's either
                    continue
                if event.definitely(lambda s: all(o.variant == LOADER_BATCH for o in s.origins())):
                    # A helper handing on a loader's batch (`return next(self.loader_iter)`): the loader
                    # pinned it in its own thread, as for `for batch in loader`; no pinning of this call's
                    continue
                if event.definitely(lambda s: s.variant == "call-inside" and s.fresh_pool_block and
                                    all(o.nbytes is None for o in s.origins())):
                    # A helper that takes a pool block of a size it works out for its own use and drops
                    # it (a scheduler step building index metadata): the pool makes that cheap after the
                    # first call, and the caller has no buffer to hoist. A helper's `t.pin_memory()`
                    # copies every time; a block of a size the helper fixes could be the caller's.
                    continue
                # Buffers that outlive the iteration (appended, stored, returned) are set-up, not waste.
                if any(site in escaped or site.via & escaped for site in event.sites):
                    continue  # (or the buffer a call's site stands for: `layers.append(layer)` after `layer.load()`)
                site = first_site(event.sites)
                if any(loop not in site.loops for loop in event.loops):
                    continue  # allocated before the loop; this event is a use of it
                loop = event.loops[-1]
                if event.type is EventType.REGISTER and not scoped_registration(site) and \
                        (loop in event.varies_in or _size_steps_with(event.node, loop)):
                    continue  # each buffer of a list registered once, and kept registered: a set-up
                if event.type is EventType.ALLOC and not site.via and _size_steps_with(event.node, loop):
                    # A size sweep (`for n in sizes`, `size *= 2`): no one buffer to hoist. (A
                    # registration's arguments are the buffers, not sizes: `for buf in bufs: with
                    # cuda.pinned(buf):` page-locks each for one iteration, and again on every call.)
                    continue
                if site.via and _configurations(event.node, event.loops, facts.module):
                    continue  # `for fp8 in [True, False]: export(..., fp8=fp8)`: a run per configuration
                if _per_device(loop):
                    continue  # `for g in gpus: ... device=f"cuda:{g}"`: a buffer per device
                if _reused_in_an_inner_loop(scope.events, event) and _made_from_this_iteration(event.node, loop):
                    continue  # `for model in models: bufs = make_io(engine); for img in images: copy`
                # (an allocation inside a comprehension cannot be hoisted by a rewrite of its statement)
                plan = ctx.plan(hoist_allocation, event, loop) if event.type is EventType.ALLOC and not site.via \
                    and not event.trace and isinstance(loop, (cst.For, cst.While)) else None
                yield event, site, plan

    @staticmethod
    def _message(event, site, ctx, more: int = 0) -> str:
        what = "registration" if event.type is EventType.REGISTER else "allocation"
        verb = "registers" if event.type is EventType.REGISTER else "allocates"
        via = f" (it {verb} with `{first_site(site.via).api}`)" if site.via else ctx.via(event.trace)
        if site.pooled:
            cost = ("pooled, so it avoids cudaHostAlloc, but every iteration still takes and returns a "
                    "pool block and the pool grows to the largest request")
        else:
            cost = ("page-locking memory is slow: allocating and freeing 64 MiB took 52 ms with cudaHostAlloc "
                    "against 15 ms for pageable memory on an H200")
        advice = "register it once before the loop and keep it registered" if event.type is EventType.REGISTER \
            else "allocate it once before the loop and reuse it"
        others = f" (and {more} more pinned buffer{'s' if more > 1 else ''} through this call)" if more else ""
        return f"Pinned {what} `{event.api}`{via}{others} inside a loop, used for one iteration only: {cost}; {advice}"

    VALID = (
        # Allocated once, before the loop.
        """
import numpy as np
from numba import cuda
h = cuda.pinned_array(1 << 20, dtype=np.float32)
for i in range(10):
    d = cuda.to_device(h)
""",
        # TensorRT's per-binding set-up: the buffers outlive the loop.
        """
import pycuda.driver as cuda
import numpy as np
inputs = []
for binding in range(4):
    host_mem = cuda.pagelocked_empty(1024, np.float32)
    device_mem = cuda.mem_alloc(host_mem.nbytes)
    inputs.append((host_mem, device_mem))
""",
        # A comprehension producing buffers.
        """
import cupyx
buffers = [cupyx.empty_pinned(1 << 20) for _ in range(4)]
""",
        # Lazy set-up inside the loop.
        """
import torch
buf = None
for batch in range(10):
    if buf is None:
        buf = torch.empty(1 << 20, pin_memory=True)
""",
        # The allocation in a for's iterable runs once.
        """
from numba import cuda
for x in cuda.pinned_array(16):
    pass
""",
    )
    INVALID = (
        """
import numpy as np
from numba import cuda
for i in range(10):
    h = cuda.pinned_array(1 << 20, dtype=np.float32)
    d = cuda.to_device(h)
""",
        """
import torch
for step in range(100):
    x = torch.randn(1 << 20).pin_memory()
    y = x.to("cuda", non_blocking=True)
""",
        """
import numpy as np
import pycuda.driver as drv
while True:
    h = drv.pagelocked_empty(1 << 20, np.float32)
    drv.memcpy_htod(0, h)
""",
        """
from cuda.bindings import runtime as rt
for i in range(8):
    err, ptr = rt.cudaMallocHost(1 << 26)
    rt.cudaFreeHost(ptr)
""",
        # One level of calls: the local helper allocates pinned memory on every call.
        """
import cupyx
def staging(n):
    return cupyx.empty_pinned(n)
for i in range(10):
    h = staging(1 << 20)
""",
    )
