"""What the analysis hands the rules and fixers: per-scope events and the queries they share.

Rules are short queries over these: "a copy whose buffer is definitely pageable and which is
asynchronous", "a CPU read while an asynchronous copy into the same buffer may still run". The
dataflow behind the answers (which copies are still in flight at each access) was computed by the
solver; nothing here walks code.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Iterator, Optional

import libcst as cst

from ..model import Event, EventType, PendingCopy, Site
from ..positions import contains
from ..walk import code_nodes, code_parts, ends_by_leaving, suite_body, target_names
from .invariance import Changes, collect_changes, invariant, loop_changes, names_read

_BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass
class ScopeFacts:
    name: str
    node: cst.CSTNode
    events: list

    def escaped(self) -> frozenset:
        """Sites whose buffers are stored, returned or handed to unknown code somewhere in the scope."""
        return frozenset(s for e in self.events if e.type is EventType.ESCAPE for s in e.sites)

    def races(self, direction: str, access: EventType) -> Iterator[tuple]:
        """(copy, access) pairs: a truly asynchronous copy (pinned buffer, async API) in ``direction``
        still in flight when the CPU accesses (``READ`` or ``WRITE``) its buffer. A pageable buffer
        makes the copy blocking (PIN001's finding), so it cannot race."""
        seen = set()
        for event in self.events:
            if event.type is not access or not event.pending:
                continue
            for copy in sorted(event.pending, key=_copy_order):
                if copy.direction != direction or copy.hypothetical:
                    continue
                if not event.definitely(lambda s: s in copy.sites):
                    continue
                if other_iterations_element(copy, event):
                    continue
                key = (copy.node, event.node, event.type)
                if key not in seen:
                    seen.add(key)
                    yield copy, event

    def unsynchronized_uses(self, site: Site) -> bool:
        """Whether, were ``site`` pinned, a CPU access could race with an asynchronous copy of it:
        some access meets an async copy of the buffer (pinned or pageable today) still in flight."""
        for event in self.events:
            if event.type not in (EventType.READ, EventType.WRITE) or site not in event.sites:
                continue
            wanted = "d2h" if event.type is EventType.READ else "h2d"
            if any(site in p.sites and p.direction == wanted for p in event.pending):
                return True
        return False


def issued_at(copy: PendingCopy, scope: str) -> Optional[tuple]:
    """(node, loops, module) where ``scope`` issued ``copy``: its own copy call, or the call through
    which a callee issued it (`m.upload(stream)` in the loop); None when it came from elsewhere."""
    if copy.scope == scope:
        return copy.node, copy.loops, copy.module
    call = next((c for c in copy.calls if c.scope == scope), None)
    return (call.node, call.loops, call.module) if call is not None else None


def other_iterations_element(copy: PendingCopy, event) -> bool:
    """``hosts[i]`` written, then copied, on each iteration of ``for i``: the copy still in flight at
    the write is the one of an earlier iteration, of another element (``hosts[i - 1]``). Told from
    the source order in one function: the write comes before the copy in the body of a loop in
    which both buffers differ on each iteration, and no loop inside it holds both (where the same
    element would come round again)."""
    place = issued_at(copy, event.scope)
    if place is None:
        return False
    node, loops, module = place
    if module is not event.module or not hasattr(module, "position"):
        return False
    shared = [loop for loop in loops if loop in event.loops]
    if not shared:
        return False
    innermost = shared[-1]
    access, copied = _start(module, event.node), _start(module, node)
    if not access < copied:
        return False
    if innermost in copy.varies and innermost in event.varies_in:
        return True
    # A buffer allocated in the loop's body before the access (`buf = torch.empty(n, pin_memory=True)`,
    # written, then copied): the access is to this iteration's buffer, the copy in flight of an
    # earlier one (a pool does not hand a block back while a copy of it may run).
    return bool(event.sites) and all(innermost in site.loops and site.module is module and
                                     _start(module, site.node) < access for site in event.sites)


def _start(module, node) -> tuple:
    start = module.position(node).start
    return start.line, start.column


def _copy_order(copy: PendingCopy) -> tuple:
    """Copies in source order, so that the copy a finding names does not depend on where the
    interpreter happened to allocate the nodes (it did: one of several copies in flight was named
    at random). Positions are only asked here, for accesses that meet a copy in flight."""
    module = copy.module
    if module is None or not hasattr(module, "position"):
        return ("", 0, 0, id(copy.node))
    start = module.position(copy.node).start
    return (module.filename, start.line, start.column)


@dataclass
class FileFacts:
    module: cst.Module
    scopes: list
    project: object = None
    context: object = None           # the ModuleContext of the checked file
    loop_branch_depth: dict = field(default_factory=dict)  # loop node -> number of if arms around it

    def events(self) -> Iterator[Event]:
        for scope in self.scopes:
            yield from scope.events

    def copies(self) -> Iterator[Event]:
        return (e for e in self.events() if e.type is EventType.COPY)

    def conditional_in_loop(self, event: Event) -> bool:
        """The event sits under an ``if`` inside its innermost loop that may be a lazy set-up (``if buf
        is None:``): one whose test reads something the loop changes (``invariance``). Under an ``if``
        that answers the same on every iteration (``if self.device == "cuda":``) it runs on all of them."""
        if not event.loops:
            return False
        loop = event.loops[-1]
        inner = event.branch[self.loop_branch_depth.get(loop, 0):]
        if not inner:
            return False
        if not isinstance(loop, (cst.For, cst.While)):
            return True
        changes = loop_changes(loop, self.project.changes if self.project is not None else None)
        is_library = self.context.names_library if self.context is not None else (lambda name: False)
        settled = _settled_names(loop, changes, is_library, inner[0][0])
        if settled:
            changes = changes.without(settled)
        elements = _element_names(loop)
        # A test the analysis found constant on every iteration (`if isinstance(x, np.ndarray):` of what
        # is always an array) takes its arm on all of them.
        return not all(isinstance(owner, cst.If) and (owner in event.decided or invariant(owner.test, changes, is_library) or
                                                      _others_leave(owner, arm) or _consumes_its_flag(owner, arm) or
                                                      _filters_elements(owner, elements, changes, is_library))
                       for owner, arm in inner)

    def scope(self, name: str) -> Optional[ScopeFacts]:
        return next((s for s in self.scopes if s.name == name), None)

    @property
    def info(self):
        return self.context.info if self.context is not None else None


def _element_names(loop) -> set:
    """The names a for loop binds to the elements it walks (``name`` of ``for name in names:``,
    ``path`` of ``for i, path in enumerate(paths):``), not to a counter (``range``'s, ``enumerate``'s
    index: ``if i == 0:`` is a one-time set-up)."""
    if not isinstance(loop, cst.For):
        return set()
    target, iterable = loop.target, loop.iter
    func = iterable.func if isinstance(iterable, cst.Call) else None
    name = func.value if isinstance(func, cst.Name) else None
    if name == "range":
        return set()
    if name == "enumerate" and isinstance(target, (cst.Tuple, cst.List)) and target.elements:
        return set(target_names(target)) - set(target_names(target.elements[0].value))
    return set(target_names(target))


def _filters_elements(owner: cst.If, elements: set, changes, is_library) -> bool:
    """``if name.endswith(".png"):`` in ``for name in names:``: a filter on the element, which the body
    under it runs for on every matching element, unlike a lazy set-up whose test reads what the set-up
    changes (``if buf is None:``, ``if key not in cache:``)."""
    if not elements:
        return False
    read = names_read(owner.test)
    changed = changes.bound | changes.mutated_names
    arm = Changes()
    collect_changes(arm, [owner.body])
    return bool(read & elements) and not ((read - elements) & changed) and not (arm.bound & read) and \
        _plain_calls(owner.test, elements, is_library)


def _plain_calls(test, elements: set, is_library) -> bool:
    """Every call in ``test`` is a method of an element (``name.endswith(...)``), a builtin or a library
    function (``os.path.splitext(name)``): none keeps state of its own between iterations."""
    for node in code_nodes(test):
        if isinstance(node, cst.Call):
            root = node.func
            while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
                root = root.value if not isinstance(root, cst.Call) else root.func
            if not isinstance(root, cst.Name) or not (root.value in elements or root.value in _BUILTIN_NAMES or
                                                      is_library(root.value)):
                return False
    return True


def _settled_names(loop, changes, is_library, owner) -> set:
    """Names the loop's body assigns once, in plain statements at its top before the statement holding
    ``owner``, from values that are the same on every iteration (``lf = fmt; is_mx = lf == "mx"``): an
    ``if`` on them answers the same every time, unlike a lazy set-up's flag set after its test."""
    body = suite_body(loop.body)
    holder = next((statement for statement in body if contains(statement, owner)), None)
    if holder is None:
        return set()
    counts: dict = {}
    stack = [loop.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.AsName)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else \
                [node.target] if not isinstance(node, cst.AsName) else [node.name]
            for target in targets:
                for name in target_names(target):
                    counts[name] = counts.get(name, 0) + 1
        stack.extend(code_parts(node))
    settled: set = set()
    for statement in body:
        if statement is holder:
            break
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and
                isinstance(statement.body[0], cst.Assign) and len(statement.body[0].targets) == 1 and
                isinstance(statement.body[0].targets[0].target, cst.Name)):
            continue
        name = statement.body[0].targets[0].target.value
        if counts.get(name) == 1 and invariant(statement.body[0].value, changes.without(settled), is_library):
            settled.add(name)
    return settled


def _consumes_its_flag(owner: cst.If, arm: int) -> bool:
    """``if self.msg is not None: ...; self.msg = None``: a polling loop's arm that takes what arrived
    and clears it, to run again each time something (a callback, another thread) sets it: not a
    lazy set-up, whose arm sets what its test reads the other way, once (depth_anything_ros's node
    pinning new buffers for every frame, survey 50 AH)."""
    if arm != 0:
        return False
    from ..imports import dotted
    test = owner.test
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and \
            isinstance(test.comparisons[0].operator, cst.IsNot) and \
            isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None":
        flag = dotted(test.left)
    elif isinstance(test, (cst.Name, cst.Attribute)):
        flag = dotted(test)
    else:
        return False
    if flag is None:
        return False
    for statement in suite_body(owner.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and \
                    small.value.value in ("None", "False") and any(dotted(t.target) == flag for t in small.targets):
                return True
    return False


def _others_leave(owner: cst.If, arm: int) -> bool:
    """Every other arm of the ``if`` leaves the loop (``if ok: ... else: break``, the video-reading
    loop): each iteration that goes on takes this arm, so what it allocates is allocated on every one."""
    bodies, current = [], owner
    while isinstance(current, cst.If):
        bodies.append(current.body)
        current = current.orelse
    if not isinstance(current, cst.Else):
        return False  # no else: the iterations that skip the arm go on
    bodies.append(current.body)
    return all(ends_by_leaving(suite_body(body)) for index, body in enumerate(bodies) if index != arm)


def on_one_iteration(branch: tuple, loop) -> bool:
    """An event with these ``if`` arms around it sits under one inside ``loop`` that holds on one
    iteration at most: the loop's counter equal to a constant (``if k == 0:``, ``if cfg.warm and step
    == 0:``); what it does is not repeated by that loop."""
    if not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name):
        return False
    inside = _ifs_in(loop)
    return any(isinstance(owner, cst.If) and arm == 0 and owner in inside and
               _pins(owner.test, loop.target.value) for owner, arm in branch)


_IFS: dict = {}


def _ifs_in(loop) -> frozenset:
    found = _IFS.get(loop)
    if found is None:
        found = _IFS[loop] = frozenset(node for node in code_nodes(loop.body, into_definitions=False)
                                       if isinstance(node, cst.If))
    return found


def _pins(test, name: str) -> bool:
    """``name == <literal>`` (either way round), alone or as one side of an ``and``."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _pins(test.left, name) or _pins(test.right, name)
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and
            isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(isinstance(a, cst.Name) and a.value == name and isinstance(b, (cst.Integer, cst.SimpleString))
               for a, b in (sides, sides[::-1]))
