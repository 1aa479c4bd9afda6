"""What a module's own calls of its functions tell of their parameters: the sizes they are given.

A function analysed for callers at large sees its parameters as unknown, so a buffer it sizes from
one (``np.zeros(2 * k + 2)``) has no size, and the size thresholds cannot apply. Where every call of a
module-level function is in its own module and each gives a parameter an integer the code spells out
(a literal, a module constant, or the parameter's own default), the parameter is one of those
integers (parallel-krylov's solver, whose only caller passes ``k=4``: an 80-byte coefficient vector,
survey 54 DH). Besides integers, only the CPU as a device (``"cpu"``, ``torch.device("cpu")``, or a
name the calling function binds once to one of them): a benchmark helper whose only call times the
CPU (``time_forward(shape, net, torch.device("cpu"))``, ZCls, survey 55 EE) copies nothing to a GPU.
Other flags and devices a caller gives decide what the function does, and that is the calling
context's business (findings at the call). A function the module refers to in any other way (passed
as a value, rebound, decorated) may be called from anywhere: nothing is said.

Only the module itself is read, so a file's findings still depend on nothing but the files it imports
(the cache's key, and the order-independence of a run); calls from other modules are not seen, which
can only leave a size unknown where they pass a larger one, never report a buffer that is not there.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..walk import binding_targets, code_nodes, target_names
from .domain import Const, DeviceSpec, Function, Value
from .interproc import literal

_MAX_SIZES = 8  # different integers a parameter may take and still be known (as a join keeps)


class ModuleCalls:
    """The module's calls of plain names, and the names used in any other way."""

    def __init__(self, module: cst.Module) -> None:
        self.calls: dict = {}       # name -> [Call nodes whose callee is that bare name]
        self.other: set = set()     # names referred to other than as a call's callee
        self.caller: dict = {}      # Call node -> the function it is in (None: the module's body)
        self.spawned: dict = {}     # name -> [`mp.spawn(name, args=(...))` Call nodes]
        stack: list = [(module, None)]
        while stack:
            node, function = stack.pop()
            if isinstance(node, cst.Call) and _spawns_a_name(node):
                # `mp.spawn(_worker, args=(2,))`: a call of `_worker(rank, 2)` in each process
                self.spawned.setdefault(node.args[0].value.value, []).append(node)
                self.caller[node] = function
                stack.extend((arg, function) for arg in node.args[1:])
                continue
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
                self.calls.setdefault(node.func.value, []).append(node)
                self.caller[node] = function
                stack.extend((arg, function) for arg in node.args)
                continue
            if isinstance(node, cst.Name):
                self.other.add(node.value)
                continue
            if isinstance(node, cst.Attribute):
                stack.append((node.value, function))  # `obj.solve` is no reference to a function `solve`
                continue
            if isinstance(node, cst.Arg):
                stack.append((node.value, function))  # `solve(k=4)`: `k` names a parameter, not a value
                continue
            if isinstance(node, cst.FunctionDef):
                stack.extend((decorator, function) for decorator in node.decorators)
                stack.append((node.params, function))
                stack.append((node.body, node))
                if node.returns is not None:
                    stack.append((node.returns, function))
                if node.decorators:
                    self.other.add(node.name.value)  # what runs is what the decorator made of it
                continue
            if isinstance(node, cst.Param):
                self.other.add(node.name.value)
                if node.default is not None:
                    stack.append((node.default, function))
                if node.annotation is not None:
                    stack.append((node.annotation, function))
                continue
            stack.extend((child, function) for child in node.children)


def module_calls(project, ctx) -> ModuleCalls:
    found = project.module_calls.get(ctx)
    if found is None:
        found = project.module_calls[ctx] = ModuleCalls(ctx.info.module)
    return found


def caller_sizes(project, fn: Function) -> dict:
    """Parameter -> the integers every call of ``fn`` in its module gives it (see the module's doc);
    empty where the function is not such a module-level function."""
    cache = project.caller_sizes
    found = cache.get(fn.node)
    if found is None:
        found = cache[fn.node] = _caller_sizes(project, fn)
    return found


def _caller_sizes(project, fn: Function) -> dict:
    ctx = fn.module
    name = fn.node.name.value
    defined = ctx.defs.get(name)
    if fn.klass is not None or fn.node.asynchronous is not None or \
            not isinstance(defined, Function) or defined.node is not fn.node:
        return {}
    index = module_calls(project, ctx)
    calls = index.calls.get(name, ())
    spawned = index.spawned.get(name, ())
    if not calls and not spawned or name in index.other:
        return {}
    params = fn.node.params
    positional = [*params.posonly_params, *params.params]
    named = {p.name.value: p for p in positional + list(params.kwonly_params)}
    sizes: dict = {}
    cpu: dict = {}
    for call in [*calls, *spawned]:
        given = _given(call, positional, named) if call not in spawned else _spawn_given(ctx, call, positional)
        if given is None:
            return {}
        for param_name, param in named.items():
            expr = given.get(param_name, param.default)
            value = _integers(ctx, expr) if expr is not None else None
            seen = sizes.get(param_name, frozenset())
            sizes[param_name] = None if value is None or seen is None else seen | value
            where = index.caller.get(call) if param_name in given else None
            device = _the_cpu(ctx, expr, where) if expr is not None else None
            seen_device = cpu.get(param_name, device)
            cpu[param_name] = device if device is not None and device == seen_device else None
    found = {k: Const(v) for k, v in sizes.items() if v and len(v) <= _MAX_SIZES}
    if any(device is not None for device in cpu.values()):
        # (a device the body rebinds, `if fmt == "mxfp8" and device == "cpu": device = "cuda"`, follows
        # what else the call gives, which nothing here pins down: left to the calls' contexts)
        rebound = {name for node in code_nodes(fn.node.body, into_definitions=False)
                   for target in binding_targets(node) for name in target_names(target)}
        found.update({k: device for k, device in cpu.items()
                      if device is not None and k not in found and k not in rebound})
    return found


def _the_cpu(ctx, expr, function, depth: int = 0) -> Optional[Value]:
    """The CPU as the call names it: ``"cpu"`` (a string), ``torch.device("cpu")`` (a device), or a name
    the calling function binds once to one of them; None for anything else."""
    if isinstance(expr, cst.SimpleString):
        return Const.of("cpu") if literal(expr) == Const.of("cpu") else None
    if isinstance(expr, cst.Call) and len(expr.args) == 1 and not expr.args[0].keyword and \
            ctx.imports.qualify(expr.func) == "torch.device":
        return DeviceSpec(False) if literal(expr.args[0].value) == Const.of("cpu") else None
    if isinstance(expr, cst.Name) and isinstance(function, cst.FunctionDef) and depth == 0:
        bound = [node for node in code_nodes(function.body, into_definitions=False)
                 if any(expr.value in target_names(target) for target in binding_targets(node))]
        if len(bound) == 1 and isinstance(bound[0], cst.Assign) and len(bound[0].targets) == 1 and \
                isinstance(bound[0].targets[0].target, cst.Name):
            return _the_cpu(ctx, bound[0].value, function, depth + 1)
    return None


def _spawns_a_name(call: cst.Call) -> bool:
    func = call.func
    attr = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return attr in ("spawn", "start_processes") and bool(call.args) and call.args[0].keyword is None and \
        not call.args[0].star and isinstance(call.args[0].value, cst.Name)


def _spawn_given(ctx, call: cst.Call, positional: list) -> Optional[dict]:
    """The expressions ``torch.multiprocessing.spawn(fn, args=(2, rows))`` gives ``fn``'s parameters
    after the process index (which is no integer the call spells out); None where that is not known."""
    if ctx.imports.qualify(call.func) not in ctx.tables.python.get("process_spawners", ()):
        return None
    spelled = next((a.value for a in call.args[1:] if a.keyword is not None and a.keyword.value == "args"), None)
    if spelled is None:
        spelled = call.args[1].value if len(call.args) > 1 and call.args[1].keyword is None else cst.Tuple([])
    if not isinstance(spelled, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in spelled.elements):
        return None
    if len(spelled.elements) + 1 > len(positional):
        return None
    return {positional[i + 1].name.value: element.value for i, element in enumerate(spelled.elements)}


def _given(call: cst.Call, positional: list, named: dict) -> Optional[dict]:
    """Parameter name -> the expression the call gives it; None where the call spreads arguments or
    does not fit the signature."""
    given: dict = {}
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if index >= len(positional):
                return None
            given[positional[index].name.value] = arg.value
            index += 1
        elif arg.keyword.value in named:
            given[arg.keyword.value] = arg.value
        else:
            return None
    return given


def _integers(ctx, expr) -> Optional[frozenset]:
    value: Value = literal(expr)
    if isinstance(expr, cst.Name) and not isinstance(value, Const):
        found = ctx.global_value(expr.value)
        value = found if found is not None else value
    if isinstance(value, Const) and value.values and \
            all(isinstance(v, int) and not isinstance(v, bool) for v in value.values):
        return frozenset(value.values)
    return None
