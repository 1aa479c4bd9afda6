"""Plan builders for the rules' fixes: what each fix rewrites, in the idiom of the library involved.

Each returns a ``Plan`` or None when the code cannot be rewritten safely in form (an unknown
producer, arguments that do not map, a name the fix would need that means something else here).
Whether a plan is safe or unsafe in behaviour is decided here too, from the analysis' events.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from .analysis import FileFacts, ScopeFacts
from .apitables import Tables
from .fixes import SAFE, UNSAFE, Namer, Plan, expression, statement
from .model import Event, Site, first_site
from .walk import target_names


class FixContext:
    """What plan builders need to know about the file, computed lazily and once."""

    def __init__(self, module: cst.Module, text: str, facts: FileFacts, tables: Tables, bindings: dict, parents,
                 qualify=lambda node: None) -> None:
        # ``bindings`` (the file's imports, flat) is kept for the callers; names are spelled through
        # the scope-aware Namer, since an import binds a name only in its own scope.
        self.qualify = qualify
        self.info = facts.info
        self.module = module
        self.facts = facts
        self.tables = tables
        self._parents = parents  # callable: () -> {node: parent}
        self._parent_map = None
        self.namer = Namer(module, self.parent_map)

    def parent_map(self) -> dict:
        if self._parent_map is None:
            self._parent_map = self._parents()
        return self._parent_map

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.parent_map().get(node)

    def statement_of(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The statement (simple line or compound statement) that contains ``node``."""
        current = node
        while current is not None:
            parent = self.parent(current)
            if isinstance(parent, (cst.Module, cst.IndentedBlock)):
                return current
            current = parent
        return None

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def scope_of(self, event: Event) -> Optional[ScopeFacts]:
        return self.facts.scope(event.scope)


# ------------------------------------------------------------------ PIN001 / PIN007: pin the buffer
def _async_uses_are_synchronized(site: Site, fx: FixContext) -> bool:
    """After pinning, every async copy of the buffer becomes truly asynchronous: safe only when no CPU
    access of the buffer can run before a synchronization covering the copy, and when the buffer
    does not leave its scope (code elsewhere could touch it)."""
    scope = fx.facts.scope(site.scope)
    if scope is None or site in scope.escaped():
        return False
    return not scope.unsynchronized_uses(site)


def _pinned_anew_for_each_copy(site: Site, copy: Event) -> bool:
    """The buffer is allocated inside a loop that also runs the copy: a new one each time round."""
    return bool(site.loops) and site.loops[-1] in copy.loops


def pin_allocation(site: Site, copy: Event, fx: FixContext) -> Optional[Plan]:
    call = site.node
    if not isinstance(call, cst.Call) or site.fix is None:
        return None
    if _pinned_anew_for_each_copy(site, copy):
        # Allocated in the loop that copies it: pinned there, it would be a pinned allocation per
        # iteration (PIN002's finding; a raw twin page-locks new memory for each copy, which costs
        # more than the pageable copy it speeds up, PIN008's figures). Hoisting it is the user's call.
        return None
    safe = _async_uses_are_synchronized(site, fx)
    applicability = SAFE if safe else UNSAFE
    family = fx.tables.fix_families.get(site.fix, {})
    if family.get("how") == "keyword":
        keyword = family["keyword"]
        if any(a.star == "**" for a in call.args):
            return None  # the mapping may hold the keyword already: passing it twice is a TypeError
        args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == keyword)]
        new_call = call.with_changes(args=[*_with_trailing_comma(args), cst.Arg(
            keyword=cst.Name(keyword), value=cst.Name("True"),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                  whitespace_after=cst.SimpleWhitespace("")))])
        return Plan(applicability, f"Allocate it pinned: `{keyword}=True`", replace=((call, new_call),))
    twin = fx.tables.pinned_twins.get((copy.library, site.api))
    if twin is None or any(a.star for a in call.args):
        return None
    positional = [a for a in call.args if a.keyword is None]
    keywords = [a for a in call.args if a.keyword is not None]
    if len(positional) > twin["positional"] or any(k.keyword.value not in twin["keywords"] for k in keywords):
        return None  # arguments that do not carry over (order=, like=, ...)
    renames = twin.get("rename", {})
    new_args = [a.with_changes(keyword=cst.Name(renames[a.keyword.value])) if a.keyword is not None and
                a.keyword.value in renames else a for a in call.args]
    if twin.get("default_dtype") and len(positional) < 2 and not any(k.keyword.value == "dtype" for k in keywords):
        new_args = [*_with_trailing_comma(new_args), cst.Arg(
            keyword=cst.Name("dtype"), value=cst.Name(twin["default_dtype"]),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                  whitespace_after=cst.SimpleWhitespace("")))]
    spelled, imports = fx.namer.spell(twin["to"], _preferred(twin.get("import")), at=call)
    if spelled is None:
        return None
    new_call = call.with_changes(func=expression(spelled), args=new_args)
    return Plan(applicability, f"Allocate it pinned: `{spelled}`", replace=((call, new_call),), imports=imports)


def _preferred(spec) -> Optional[tuple]:
    if not spec:
        return None
    module = spec[0]
    name = spec[1] if len(spec) > 1 and spec[1] else None
    asname = spec[2] if len(spec) > 2 and spec[2] else None
    return module, name, asname


def _with_trailing_comma(args: list) -> list:
    if not args:
        return []
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        return list(args)
    return [*args[:-1], last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))]


# ------------------------------------------------------------------ PIN002: hoist out of the loop
def hoist_allocation(event: Event, loop_node: cst.CSTNode, fx: FixContext) -> Optional[Plan]:
    if not isinstance(loop_node, (cst.For, cst.While)):
        return None  # a comprehension: nothing to move the allocation out of
    line = fx.statement_of(event.node)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    assign = line.body[0]
    if not isinstance(assign, cst.Assign) or assign.value is not event.node or len(assign.targets) != 1 \
            or not isinstance(assign.targets[0].target, cst.Name):
        return None
    if fx.parent(line) is not loop_node.body:
        return None  # only a statement directly in the loop's body moves
    changing = _assigned_in(loop_node)
    if _names_in(event.node) & changing or not _only_simple_expressions(event.node, fx.tables):
        return None
    name = assign.targets[0].target.value
    if sum(1 for assigned in _assigned_in(loop_node, count=True) if assigned == name) > 1:
        return None  # the name is rebound elsewhere in the loop
    if _released_in(loop_node, name, fx):
        return None  # freed or deleted every iteration: hoisting would free it again and again
    # Reusing the buffer is the same program when it starts uninitialized anyway and no async copy
    # of it can still be running when the next iteration touches it.
    site = first_site(event.sites)
    safe = site.uninitialized and _async_uses_are_synchronized(site, fx)
    return Plan(SAFE if safe else UNSAFE,
                "Allocate it once, before the loop (the buffer is then reused across iterations)",
                insert_before=((fx.statement_of(loop_node), (line,)),), remove=(line,))


def _released_in(loop: cst.CSTNode, name: str, fx: FixContext) -> bool:
    """`del name`, `name.free()` or a table "free" API given `name` (or `name.ptr`...) in the loop."""
    released = False

    class Visitor(cst.CSTVisitor):
        def visit_Del(self, node: cst.Del) -> None:
            nonlocal released
            released = released or name in _names_in(node.target)

        def visit_Call(self, node: cst.Call) -> None:
            nonlocal released
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in fx.tables.release_methods and \
                    name in _names_in(func.value):
                released = True
            qualified = fx.qualify(func)
            api = fx.tables.functions.get(qualified) if qualified else None
            if api is not None and api.effect == "free" and any(name in _names_in(a.value) for a in node.args):
                released = True

    loop.visit(Visitor())
    return released


def _assigned_in(loop: cst.CSTNode, count: bool = False):
    names: list = []

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            pass

        def visit_AssignTarget(self, node) -> None:
            names.extend(target_names(node.target))

        def visit_AugAssign(self, node) -> None:
            names.extend(target_names(node.target))

        def visit_AnnAssign(self, node) -> None:
            names.extend(target_names(node.target))

        def visit_For(self, node) -> None:
            names.extend(target_names(node.target))

        def visit_NamedExpr(self, node) -> None:
            names.extend(target_names(node.target))

        def visit_AsName(self, node) -> None:
            names.extend(target_names(node.name))

        def visit_CompFor(self, node) -> None:
            names.extend(target_names(node.target))

    loop.visit(Visitor())
    return names if count else set(names)




def _names_in(node: cst.CSTNode) -> set:
    names: set = set()

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            names.add(n.value)

    node.visit(Visitor())
    return names


def _only_simple_expressions(call: cst.Call, tables: Tables) -> bool:
    """Arguments without calls (other than len/int/...), so evaluating them earlier changes nothing."""
    ok = True
    pure = set(tables.python.get("pure_builtins", ()))

    class Visitor(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            nonlocal ok
            if node is not call and not (isinstance(node.func, cst.Name) and node.func.value in pure):
                ok = False
            return True

        def visit_Await(self, node) -> None:
            nonlocal ok
            ok = False

        def visit_Yield(self, node) -> None:
            nonlocal ok
            ok = False

    call.visit(Visitor())
    return ok


# ------------------------------------------------------------------ PIN003: drop the write-combined flag
def drop_write_combined(site: Site, imports_qualify, fx: FixContext) -> Optional[Plan]:
    call = site.node
    api = fx.tables.functions.get(site.api)
    if not isinstance(call, cst.Call) or api is None or api.arg("flags") is None:
        return None
    spec = api.arg("flags")
    arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == spec.kw), None)
    if arg is None:
        positional = [a for a in call.args if a.keyword is None]
        arg = positional[spec.pos] if spec.pos is not None and spec.pos < len(positional) else None
    if arg is None:
        return None

    def is_wc(node) -> bool:
        name = imports_qualify(node)
        return name is not None and fx.tables.constants.get(name) == 4

    flags = arg.value
    if is_wc(flags):
        name = imports_qualify(flags)
        default = fx.tables.write_combined_defaults.get(name)
        replacement = flags.with_changes(attr=cst.Name(default)) if default and isinstance(flags, cst.Attribute) \
            else cst.Integer("0")
        new = replacement
    elif isinstance(flags, cst.BinaryOperation) and isinstance(flags.operator, cst.BitOr):
        new = _without_flag(flags, is_wc)
        if new is None:
            return None
    else:
        return None  # a flag through a variable: the fix would have to edit its definition
    return Plan(SAFE, "Drop the write-combined flag", replace=((flags, new),))


def _without_flag(node: cst.BaseExpression, is_wc):
    """``A | WC | B`` -> ``A | B``; None when no operand is the flag."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        if is_wc(node.right):
            return node.left
        if is_wc(node.left):
            return node.right
        left = _without_flag(node.left, is_wc)
        if left is not None:
            return node.with_changes(left=left)
    return None


# ------------------------------------------------------------------ PIN005 / PIN006: synchronize first
def insert_sync(copy: Event, access: Event, fx: FixContext) -> Optional[Plan]:
    if access.trace:
        # The access is inside a function this line calls (the race is reported at the call): a
        # synchronize before the call would come before the copy too, and fix nothing.
        return None
    anchor = fx.statement_of(access.node)
    if anchor is None:
        return None
    module = copy.api.rpartition(".")[0]
    templates = fx.tables.sync_templates.get(copy.family) or fx.tables.sync_templates.get(copy.library)
    if templates is None:
        return None
    stream = copy.stream_node if copy.module is None or copy.module is fx.info else None
    if isinstance(stream, cst.Name) and stream.value in ("None", "True", "False"):
        stream = None  # `stream=None`: the current stream, which only a device-wide synchronize names
    if stream is not None and not isinstance(stream, (cst.Name, cst.Attribute)):
        return None  # a stream made inline cannot be named again
    if stream is not None and fx.namer.index.scope_of(stream) is not fx.namer.index.scope_of(anchor):
        # The copy ran in another function (a callee, a nested function, a method): its stream's name
        # means nothing, or something else, where the access is. Synchronize the device instead.
        stream = None
    imports: tuple = ()
    if stream is not None and "stream_method" in templates:
        text = f"{fx.code(stream)}.{templates['stream_method']}()"  # the stream is in scope already
    else:
        key = "stream_call" if stream is not None else "device_call"
        spelled, imports = fx.namer.spell(templates[key].format(module=module), at=anchor)
        if spelled is None:
            return None
        text = f"{spelled}({fx.code(stream) if stream is not None else ''})"
    return Plan(UNSAFE, f"Synchronize before the access: `{text}`",
                insert_before=((anchor, (statement(text),)),), imports=imports, group=copy.node)
