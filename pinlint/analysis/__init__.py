"""The memory-kind analysis: the one place where pinlint's dataflow lives.

``analyze`` turns a parsed module into ``FileFacts``: for the module body and every function, the
events of its execution (allocations, registrations, host<->device copies with their buffer,
direction, asynchrony and stream, CPU reads and writes, synchronizations, kernel launches, escapes)
with their loop and branch context, computed over a control-flow graph to a fixpoint, across the
functions and modules of the checked code. The modules, one job each:

- ``domain``: abstract values with their provenance, join and widening;
- ``state``: the environment and the copies in flight at a point;
- ``cfg``: control-flow graphs; ``solver``: the worklist fixpoint;
- ``evaluator`` and ``transfer``: expressions and statements;
- ``calls``: call resolution by provenance; ``effects``: one handler per API-table effect;
- ``interproc``: calls of the checked code's own functions, per calling context;
- ``project``: modules, classes and the memoised analyses of the checked tree;
- ``facts``: the events and the queries rules and fixers share.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional

import libcst as cst

from ..apitables import Tables, default_tables
from .domain import Function
from .dtypes import canonical_dtype
from .facts import FileFacts, ScopeFacts
from .inert import Screen
from .interproc import function_value
from ..walk import LAMBDA_STAND_IN
from .project import MAX_SOLVES, SOLVES_PER_FUNCTION, ModuleContext, ModuleInfo, Project


def analyze(module: cst.Module, tables: Optional[Tables] = None, imports=None, project: Optional[Project] = None,
            filename: str = "<unknown>", path: Optional[Path] = None, text: str = "") -> FileFacts:
    """Analyse one module (``imports`` is accepted for compatibility and recomputed)."""
    project = project or Project(tables or default_tables())
    project.solves = 0
    project.contexts = {}
    ctx = project.add_module(filename, module, path, text)
    functions = list(functions_of(ctx))
    # The budget grows with the file: a module of a few hundred methods (aphrodite's model runner,
    # 127 functions, 2,141 analyses) ran out of it and lost the findings of its last methods, unless
    # an earlier file's check had already made some of their analyses (survey 54 DF).
    project.max_solves = max(MAX_SOLVES, SOLVES_PER_FUNCTION * len(functions))
    scopes = [ScopeFacts("<module>", module, list(project.module_scope(ctx).events))]
    screen = Screen(ctx) if project.screen else None
    for fn in functions:
        if screen is not None and (screen.skippable(fn) or fn.node.name.value == LAMBDA_STAND_IN and
                                   not screen.lambda_relevant(fn)):
            # Names nothing that can make an event: no finding of its own (``inert``), and its
            # analysis in a caller's context is made when that caller's needs it.
            scopes.append(ScopeFacts(fn.name, fn.node, []))
            continue
        outcome = project.baseline(fn)
        scopes.append(ScopeFacts(fn.name, fn.node, list(outcome.events) if outcome is not None else []))
    _unique_lambda_scopes(scopes)
    # Kept by the project as graphs are built: merging every graph here made each file's check cost
    # grow with the number of functions analysed before it.
    return FileFacts(module, scopes, project, ctx, project.loop_branch_depth)


def _unique_lambda_scopes(scopes: list) -> None:
    """Two lambdas of one function share its name (``f.<locals>.<lambda>``), and so do the sites
    allocated in them: a fix looking up the scope of such a site by name could read the other
    lambda's uses. Their scopes are renamed so that no site finds them (a fix there is unsafe)."""
    counts: dict = {}
    for scope in scopes:
        counts[scope.name] = counts.get(scope.name, 0) + 1
    for index, scope in enumerate(scopes):
        if counts[scope.name] > 1 and scope.name.endswith("<lambda>"):
            scope.name = f"{scope.name}#{index}"


def functions_of(ctx: ModuleContext) -> Iterator[Function]:
    """Every function of a module, methods and nested functions included, depth first."""
    yield from _lambdas_in_block(ctx, ctx.info.module.body, "<module>")
    yield from _functions_in_block(ctx, ctx.info.module.body, "<module>", "")


def _functions_in_block(ctx: ModuleContext, body, scope: str, class_prefix: str) -> Iterator[Function]:
    from ..walk import child_blocks, suite_body
    for node in body:
        if isinstance(node, cst.FunctionDef):
            fn = ctx.function_value(node, scope)
            yield fn
            yield from _lambdas_in_block(ctx, suite_body(node.body), fn.name)
            yield from _functions_in_block(ctx, suite_body(node.body), fn.name, "")
        elif isinstance(node, cst.ClassDef):
            prefix = (f"{scope}.<locals>." if scope != "<module>" else "") + class_prefix
            cls = ctx.class_value(node, prefix=prefix)
            info = ctx.project.class_info(cls)
            for member in info.members.values():
                if member.kind == "nested-class":
                    continue
                fn = function_value(member)
                yield fn
                yield from _lambdas_in_block(ctx, suite_body(member.node.body), fn.name)
                yield from _functions_in_block(ctx, suite_body(member.node.body), fn.name, "")
                if member.kind == "property" and member.setter is not None:
                    # `@x.setter def x(self, v)`: a body of its own (ChI-SOM's codebook upload, survey 34)
                    setter = Function(node=member.setter, module=member.owner.module, name=member.qualified,
                                      klass=member.owner, kind="method")
                    yield setter
                    yield from _functions_in_block(ctx, suite_body(member.setter.body), setter.name, "")
            nested = [m.node for m in info.members.values() if m.kind == "nested-class"]
            yield from _functions_in_block(ctx, nested, scope, f"{cls.name}.")
        elif not isinstance(node, cst.SimpleStatementLine):
            for block in child_blocks(node):
                yield from _functions_in_block(ctx, block, scope, class_prefix)


def _lambdas_in_block(ctx: ModuleContext, body, scope: str) -> Iterator[Function]:
    """The lambdas written in a body (not in its nested definitions) that call something: each is a
    function of its own, analysed as a nested ``def`` is, with what it captures unknown (a lambda
    returned by a factory and called per step, ``lambda f: torch.tensor(f).to(dev, non_blocking=True)``,
    copies memory it makes itself: its calls' analyses leave that to it, as they do for a ``def``)."""
    from ..walk import code_parts
    from .evaluator import _calls_something
    todo = [node for node in reversed(body) if not isinstance(node, (cst.FunctionDef, cst.ClassDef))]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            continue
        if kind is cst.Lambda:
            if _calls_something(item.body):
                yield ctx.lambda_value(item, scope)
            continue  # a lambda in a lambda sees the outer one's parameters: left to its calls
        todo.extend(reversed(code_parts(item)))


__all__ = ["FileFacts", "ModuleContext", "ModuleInfo", "Project", "ScopeFacts", "analyze", "canonical_dtype",
           "functions_of"]
