"""Typer (0.2x) turns every parameter's value into its annotated type through a pydantic
TypeAdapter, and builds one for each parameter a command has, given or not: importing pydantic and
building the adapters is most of a small check's start-up. The values pinlint's commands usually get
need no such machinery (nothing given, a default that already has its type, plain strings for
``str`` parameters, an enum's exact value), so those are taken as they are and everything else goes
to typer's own coercion unchanged: its messages and rules stay typer's."""

from __future__ import annotations

import enum
from typing import List, Optional, get_args, get_origin


def _plain(annotation) -> Optional[type]:
    """The element type of ``str``, ``int``, ``bool``, an enum, or a list of them (``Optional`` is stripped by typer)."""
    if get_origin(annotation) in (list, List):
        args = get_args(annotation)
        return _plain(args[0]) if len(args) == 1 else None
    if annotation in (str, int, bool) or (isinstance(annotation, type) and issubclass(annotation, enum.Enum)):
        return annotation
    return None


def _taken_as_is(value, kind: type, info) -> tuple:
    """(True, value) when typer would return ``value`` unchanged (or as this member), else (False, None)."""
    if kind is str:
        return (True, value) if isinstance(value, str) else (False, None)
    if kind is bool:
        return (True, value) if type(value) is bool else (False, None)
    if kind is int:
        ok = type(value) is int and (info.min is None or value >= info.min) and (info.max is None or value <= info.max)
        return (True, value) if ok else (False, None)
    if isinstance(value, kind):
        return True, value
    if isinstance(value, str):
        for member in kind:
            if member.value == value:
                return True, member
    return False, None


def lighten(command) -> None:
    """Give each parameter of a click command built by typer (and of its subcommands) the light
    coercion; a typer without these internals is left as it is."""
    for param in getattr(command, "params", ()):
        _lighten_param(param)
    help_option = getattr(command, "get_help_option", None)
    if help_option is not None:  # -h/--help is made per context, after the command is built
        def get_help_option(ctx, _made=help_option):
            option = _made(ctx)
            if option is not None:
                _lighten_param(option)
            return option
        command.get_help_option = get_help_option
    for sub in getattr(command, "commands", {}).values():
        lighten(sub)


def _lighten_param(param) -> None:
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or not hasattr(param, "_runtime_param") or param._runtime_param is not None:
        return
    kind = _plain(descriptor.annotation)
    if kind is not None and not getattr(descriptor.parameter_info, "parser", None):
        param._runtime_param = _Light(descriptor, kind)


class _Light:
    """Stands in for typer's RuntimeParam: ``coerce(value, param, ctx)``."""

    def __init__(self, descriptor, kind: type) -> None:
        self._descriptor = descriptor
        self._kind = kind
        self._full = None

    def coerce(self, value, param, ctx):
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        items = value if multi and isinstance(value, (list, tuple)) else None
        if items is not None:
            taken = [_taken_as_is(item, self._kind, self._descriptor.parameter_info) for item in items]
            if all(ok for ok, _ in taken):
                return type(value)(item for _, item in taken) if isinstance(value, tuple) else [i for _, i in taken]
        elif not multi:
            ok, item = _taken_as_is(value, self._kind, self._descriptor.parameter_info)
            if ok:
                return item
        return self._typer().coerce(value, param=param, ctx=ctx)

    def _typer(self):
        if self._full is None:
            from typer._coercion import build_runtime_param
            self._full = build_runtime_param(self._descriptor)
        return self._full
