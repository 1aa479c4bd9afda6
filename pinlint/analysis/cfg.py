"""Control-flow graphs of function and module bodies.

A graph is a list of blocks; a block is a straight run of *elements* (one simple statement, an ``if``
test, a ``for``'s iterable or target, entering or leaving a ``with``...) ending in edges to its
successors. ``break``, ``continue``, ``return`` and ``raise`` are edges, not lost paths: each goes to
its target through a copy of every ``finally`` body and ``with`` exit it leaves (mypy's binder and
pyright's code-flow graph do the same). Inside a ``try`` body every element also has an edge to the
handlers, so they start from every state the body can be in. Loop heads are marked: the solver widens
there. Each element knows the loops and ``if`` arms around it, which rules read as context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import libcst as cst

from ..walk import ends_by_leaving, has_own_continue, suite_body


@dataclass(eq=False, repr=False)
class Element:
    kind: str             # see ``Builder`` for the kinds and what they carry
    node: cst.CSTNode
    loops: tuple          # loop nodes around the element, outermost first
    branch: tuple         # (if/match/try node, arm) pairs around the element, outermost first
    extra: object = None


@dataclass(eq=False)
class Block:
    index: int
    elements: list = field(default_factory=list)
    succs: list = field(default_factory=list)
    loop_head: Optional[cst.CSTNode] = None  # this block is the head of that loop: widen here
    depth: int = 0         # loops around the block (a loop's head counts as inside its loop)
    conditions: dict = field(default_factory=dict)  # successor -> ((test, truth), ...) an if arm needs

    def __repr__(self) -> str:
        return f"Block({self.index}, {len(self.elements)} elements, -> {[b.index for b in self.succs]})"

    def link(self, other: "Block") -> None:
        if other not in self.succs:
            self.succs.append(other)


@dataclass(eq=False)
class Graph:
    blocks: list
    entry: Block
    exit: Block            # normal exit (return, or falling off the end)
    raise_exit: Block      # an exception leaves the scope
    loop_branch_depth: dict  # loop node -> number of if arms around the loop

    def predecessors(self) -> dict:
        preds: dict = {block: [] for block in self.blocks}
        for block in self.blocks:
            for succ in block.succs:
                preds[succ].append(block)
        return preds


@dataclass(eq=False)
class _Frame:
    """A cleanup a jump must run on its way out: a ``finally`` body or a ``with`` exit."""

    kind: str                      # "finally" | "with"
    node: cst.CSTNode
    body: Sequence = ()            # finally statements
    loops: tuple = ()
    branch: tuple = ()
    copies: dict = field(default_factory=dict)  # target block -> entry block of the copy leading there


@dataclass(eq=False)
class _Loop:
    head: Block
    after: Block
    depth: int  # len(frames) when the loop started


class Builder:
    """Element kinds: "stmt" (a small statement), "test" (an expression for its effects; extra: the
    owning if/while), "iter" (a for's iterable, evaluated once), "bind" (a for's target takes the
    next element; extra: the For), "next" (a for's body ran to its end; extra: the For), "done" (a for
    loop went through every element; extra: the For),
    "enter"/"exit" (a with statement; extra: the WithItem / index),
    "handler" (an except clause binds its name), "handled" (its body ran to its end: the error is
    dealt with), "def"/"class", "case" (a match arm's pattern),
    "return-none" (falling off the end of a function), "comp" (unused here: comprehensions are
    expressions and are handled by the expression evaluator)."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.loops: list[cst.CSTNode] = []
        self.branch: list[tuple] = []
        self.frames: list[_Frame] = []
        self.loop_targets: list[_Loop] = []
        self.handler_targets: list[tuple[Block, int]] = []  # (dispatch block, len(frames) at the try)
        self.loop_branch_depth: dict = {}
        self.exit = self.new_block()
        self.raise_exit = self.new_block()
        self.current: Optional[Block] = None

    # ------------------------------------------------------------------ plumbing
    def new_block(self) -> Block:
        block = Block(len(self.blocks), depth=len(self.loops))
        self.blocks.append(block)
        return block

    def start(self, block: Block) -> None:
        self.current = block

    def add(self, kind: str, node: cst.CSTNode, extra=None) -> None:
        if self.current is None:
            self.current = self.new_block()  # unreachable code still gets analysed (from no state)
        self.current.elements.append(Element(kind, node, tuple(self.loops), tuple(self.branch), extra))
        if self.handler_targets:
            # Any element of a try body may raise: the handlers see the state after it.
            dispatch, depth = self.handler_targets[-1]
            after = self.new_block()
            self._jump_from(self.current, dispatch, depth)
            self.current.link(after)
            self.current = after

    def _jump_from(self, block: Block, target: Block, depth: int) -> None:
        """Link ``block`` to ``target`` through the cleanups entered since ``depth``."""
        for frame in reversed(self.frames[depth:]):
            target = self._cleanup_copy(frame, target)
        block.link(target)

    def _cleanup_copy(self, frame: _Frame, target: Block) -> Block:
        entry = frame.copies.get(target)
        if entry is not None:
            return entry
        saved = (self.current, self.loops, self.branch, self.frames, self.handler_targets, self.loop_targets)
        entry = self.new_block()
        frame.copies[target] = entry
        self.current = entry
        self.loops, self.branch = list(frame.loops), list(frame.branch)
        index = self.frames.index(frame)
        self.frames = self.frames[:index]           # jumps inside the cleanup leave only outer frames
        self.handler_targets = [h for h in self.handler_targets if h[1] <= index]
        self.loop_targets = [t for t in self.loop_targets if t.depth <= index]
        if frame.kind == "finally":
            self.statements(frame.body)
        else:
            self.add("exit", frame.node, "jump")
        if self.current is not None:
            self.current.link(target)
        self.current, self.loops, self.branch, self.frames, self.handler_targets, self.loop_targets = saved
        return entry

    def jump(self, target: Block, depth: int) -> None:
        if self.current is not None:
            self._jump_from(self.current, target, depth)
        self.current = None  # what follows a jump is unreachable

    def raise_target(self) -> tuple[Block, int]:
        return self.handler_targets[-1] if self.handler_targets else (self.raise_exit, 0)

    # ------------------------------------------------------------------ statements
    def statements(self, body: Sequence[cst.CSTNode]) -> None:
        for statement in body:
            self.statement(statement)

    def statement(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small(small)
        elif isinstance(node, cst.If):
            self.if_statement(node)
        elif isinstance(node, cst.For):
            self.for_statement(node)
        elif isinstance(node, cst.While):
            self.while_statement(node)
        elif isinstance(node, cst.With):
            self.with_statement(node)
        elif isinstance(node, (cst.Try, getattr(cst, "TryStar", cst.Try))):
            self.try_statement(node)
        elif isinstance(node, cst.FunctionDef):
            self.add("def", node)
        elif isinstance(node, cst.ClassDef):
            self.add("class", node)
        elif isinstance(node, cst.Match):
            self.match_statement(node)
        elif isinstance(node, cst.IndentedBlock):
            self.statements(node.body)

    def small(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Return):
            self.add("stmt", node)
            self.jump(self.exit, 0)
        elif isinstance(node, cst.Raise) or isinstance(node, cst.Assert) and _always_fails(node):
            self.add("stmt", node)
            target, depth = self.raise_target()
            self.jump(target, depth)
        elif isinstance(node, cst.Break):
            if self.loop_targets:
                loop = self.loop_targets[-1]
                self.jump(loop.after, loop.depth)
            else:
                self.current = None
        elif isinstance(node, cst.Continue):
            if self.loop_targets:
                loop = self.loop_targets[-1]
                self.jump(loop.head, loop.depth)
            else:
                self.current = None
        else:
            self.add("stmt", node)

    def _arms(self, owner: cst.CSTNode, arms: list, fallthrough: bool) -> None:
        """Run each arm from the current block and join them after. ``arms``: (setup, body) pairs,
        where setup adds the arm's own elements (a case pattern) before its body."""
        entry = self.current
        after = self.new_block()
        count = len(arms) + (1 if fallthrough else 0)
        starts = []
        for index, (setup, body) in enumerate(arms):
            block = self.new_block()
            starts.append(block)
            if entry is not None:
                entry.link(block)
            self.current = block
            self.branch.append((owner, index))
            if setup is not None:
                setup()
            self.statements(body)
            self.branch.pop()
            if self.current is not None:
                self.current.link(after)
        if fallthrough and entry is not None:
            self.branch.append((owner, count - 1))
            empty = self.new_block()
            self.branch.pop()
            entry.link(empty)
            empty.link(after)
            starts.append(empty)
        self.current = after
        return entry, starts

    def if_statement(self, node: cst.If) -> None:
        arms: list = []
        current: object = node
        tests = []
        while isinstance(current, cst.If):
            tests.append(current.test)
            arms.append((None, suite_body(current.body)))
            current = current.orelse
        # All tests are evaluated up front (their effects happen before the arms run in Python too,
        # as far as the analysis is concerned: tests rarely copy or allocate).
        for test in tests:
            self.add("test", test, node)
        has_else = isinstance(current, cst.Else)
        if has_else:
            arms.append((None, suite_body(current.body)))
        entry, starts = self._arms(node, arms, fallthrough=not has_else)
        if entry is not None:
            # Arm k runs when tests 0..k-1 are false and test k is true; the last, when all are false.
            for index, start in enumerate(starts):
                entry.conditions[start] = tuple((t, False) for t in tests[:index]) + \
                    ((tests[index], True),) if index < len(tests) else tuple((t, False) for t in tests)

    def match_statement(self, node: cst.Match) -> None:
        self.add("test", node.subject, node)
        arms = []
        for case in node.cases:
            def setup(case=case):
                self.add("case", case, node.subject)  # what a class pattern narrows
            arms.append((setup, suite_body(case.body)))
        self._arms(node, arms, fallthrough=True)

    def _loop(self, node, header, body_setup, has_exit: bool) -> None:
        self.loop_branch_depth[node] = len(self.branch)
        if header is not None:
            header()
        head = self.new_block()
        head.loop_head = node
        head.depth += 1
        if self.current is not None:
            self.current.link(head)
        after = self.new_block()
        body = self.new_block()
        body.depth = head.depth  # inside the loop: it settles before the code after the loop runs
        head.link(body)
        orelse = self.new_block()
        if has_exit:
            head.link(orelse)
            if isinstance(node, cst.While):
                # The loop ends when its test is false (a `break` leaves by another edge): `while
                # cudaEventQuery(e)[0] == cudaErrorNotReady:` ends with the event complete.
                head.conditions[orelse] = ((node.test, False),)
        # A body that always leaves (`...; break` after one batch, a search that returns) runs once:
        # what it does is no more repeated than straight-line code, so it is in no loop.
        repeats = comes_round(node)
        if repeats:
            self.loops.append(node)
        self.loop_targets.append(_Loop(head, after, len(self.frames)))
        self.current = body
        body_setup()
        self.statements(suite_body(node.body))
        if self.current is not None and isinstance(node, cst.For):
            self.add("next", node.target, node)
        if self.current is not None:
            self.current.link(head)
        self.loop_targets.pop()
        if repeats:
            self.loops.pop()
        self.current = orelse
        if isinstance(node, cst.For):
            self.add("done", node.target, node)
        if node.orelse is not None:
            self.statements(suite_body(node.orelse.body))
        if self.current is not None:
            self.current.link(after)
        self.current = after

    def for_statement(self, node: cst.For) -> None:
        def header():
            self.add("iter", node.iter, node)

        def setup():
            self.add("bind", node.target, node)
        self._loop(node, header, setup, has_exit=True)

    def while_statement(self, node: cst.While) -> None:
        forever = isinstance(node.test, cst.Name) and node.test.value == "True" or \
            isinstance(node.test, cst.Integer) and node.test.value not in ("0",)

        def setup():
            self.add("test", node.test, node)
        # The test runs at the head of every iteration; evaluating it at the start of the body is
        # the same for the analysis (its effects come before the body's).
        self._loop(node, None, setup, has_exit=not forever)

    def with_statement(self, node: cst.With) -> None:
        for index, item in enumerate(node.items):
            self.add("enter", item, (node, index))
        frame = _Frame("with", node, loops=tuple(self.loops), branch=tuple(self.branch))
        self.frames.append(frame)
        self.statements(suite_body(node.body))
        self.frames.pop()
        if self.current is not None:
            self.add("exit", node, "normal")

    def try_statement(self, node) -> None:
        frame = None
        if node.finalbody is not None:
            frame = _Frame("finally", node, body=suite_body(node.finalbody.body), loops=tuple(self.loops),
                           branch=tuple(self.branch))
            self.frames.append(frame)
        dispatch = self.new_block()
        entry = self.new_block()
        if self.current is not None:
            self.current.link(entry)
        self.current = entry
        body = suite_body(node.body)
        if cannot_raise(body) and not _catches_name_errors(node):
            # `try: return hasattr(x, "__cuda_array_interface__") except Exception: return False`: the
            # handlers never run (they are still analysed, from no state)
            self.statements(body)
        else:
            entry.link(dispatch)  # the first statement may raise
            self.handler_targets.append((dispatch, len(self.frames)))
            self.statements(body)
            self.handler_targets.pop()
        if node.orelse is not None and self.current is not None:
            self.statements(suite_body(node.orelse.body))
        normal_ends = [self.current] if self.current is not None else []
        for handler in node.handlers:
            block = self.new_block()
            dispatch.link(block)
            self.current = block
            self.branch.append((handler, 0))
            self.add("handler", handler)
            self.statements(suite_body(handler.body))
            if self.current is not None:
                self.add("handled", handler, node)  # the handler goes on past the try
            self.branch.pop()
            if self.current is not None:
                normal_ends.append(self.current)
        # An exception no handler takes propagates, through this try's finally, to the next handler.
        target, depth = self.raise_target()
        unhandled = self.new_block()
        dispatch.link(unhandled)
        self._jump_from(unhandled, target, depth)
        if frame is not None:
            self.frames.pop()
        after = self.new_block()
        for end in normal_ends:
            end.link(after)
        self.current = after
        if frame is not None:
            self.statements(frame.body)


# Builtins that raise nothing for any arguments a plain name or constant can hold.
_NON_RAISING_BUILTINS = frozenset({"hasattr", "isinstance", "callable", "id", "type"})


def cannot_raise(statements: Sequence[cst.CSTNode]) -> bool:
    """Whether a try body is only ``return``/``x =``/expression statements of names, constants and
    non-raising builtins (``hasattr``, ``isinstance``), joined by ``not``/``and``/``or``/``is``."""
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, cst.Return):
                value = small.value
            elif isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Name) for t in small.targets):
                value = small.value
            elif isinstance(small, cst.Expr) and not isinstance(small.value, cst.Name):
                value = small.value  # not `try: unicode / except NameError:`
            elif isinstance(small, cst.Pass):
                continue
            else:
                return False
            if value is not None and not _pure(value):
                return False
    return True


def _catches_name_errors(node: cst.Try) -> bool:
    """`except NameError:` (`try: x = basestring`): a name the body reads may be unbound."""
    for handler in node.handlers:
        kinds = handler.type
        names = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
        if any(isinstance(n, cst.Name) and n.value in ("NameError", "UnboundLocalError") for n in names):
            return True
    return False


def _pure(node: cst.BaseExpression, operand: bool = False) -> bool:
    if isinstance(node, cst.Name):
        # an operand of a test or a call; a name alone (`x = y`) is the usual probe of a name
        return operand or node.value in ("True", "False", "None")
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return _pure(node.expression, True)
    if isinstance(node, cst.BooleanOperation):
        return _pure(node.left, True) and _pure(node.right, True)
    if isinstance(node, cst.Comparison):
        return all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in node.comparisons) and \
            _pure(node.left, True) and all(_pure(c.comparator, True) for c in node.comparisons)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in _NON_RAISING_BUILTINS:
        if any(arg.keyword is not None or arg.star for arg in node.args):
            return False
        # `isinstance(x, (cupy.ndarray, np.ndarray))`: a class named through a module may be missing
        # only where the module is, and then no value the analysis knows is one of its arrays
        # (`return self.cache` may raise: attributes are no operands)
        classes = node.args[1:] if node.func.value == "isinstance" else ()
        return all(_pure(arg.value, True) for arg in node.args if arg not in classes) and \
            all(_class_names(arg.value) for arg in classes)
    return False


def _class_names(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Tuple):
        return all(not isinstance(e, cst.StarredElement) and _class_names(e.value) for e in node.elements)
    return _dotted_name(node)


def _dotted_name(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def build(body: Sequence[cst.CSTNode], function: bool) -> Graph:
    builder = Builder()
    entry = builder.new_block()
    builder.start(entry)
    builder.statements(body)
    if builder.current is not None:
        if function:
            builder.add("return-none", body[-1] if body else cst.Pass())
        builder.current.link(builder.exit)
    return Graph(builder.blocks, entry, builder.exit, builder.raise_exit, builder.loop_branch_depth)


def comes_round(loop) -> bool:
    """Whether a loop's body can run a second time when nothing fails: not when its last statement
    always leaves (`break`, `return`, `raise`) and no `continue` of its own goes back to the head,
    nor when it is a retry (`while True: try: ...; break / except E: adjust`): the body comes round
    only after an error a handler took."""
    body = suite_body(loop.body)
    if not body:
        return True
    if ends_by_leaving(body):
        return has_own_continue(body)
    last = body[-1]
    if not isinstance(last, cst.Try) or not last.handlers:
        return True
    attempt = suite_body(last.body)
    orelse = suite_body(last.orelse.body) if last.orelse is not None else []
    leaves = ends_by_leaving(orelse) if orelse else bool(attempt) and ends_by_leaving(attempt)
    # a `continue` outside the handlers goes round without an error
    return not leaves or has_own_continue(body[:-1]) or has_own_continue(attempt) or has_own_continue(orelse)


def _always_fails(node: cst.Assert) -> bool:
    """``assert False`` (or ``0``, ``None``): raises wherever it is reached, as mypy and pyright read
    it (a function disabled by one at its top runs nothing after it). Under ``python -O`` it would
    not, but code is not written to be run only that way."""
    test = node.test
    if isinstance(test, cst.Name):
        return test.value in ("False", "None")
    return isinstance(test, cst.Integer) and test.evaluated_value == 0
