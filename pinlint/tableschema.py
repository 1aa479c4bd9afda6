"""The schema of the API tables (``rules/api/*.toml``): every key each part of a table may hold.

The loader checks every table against it, so a misspelled key, effect, mode or argument field is an
error naming the file, the entry and the key (with a did-you-mean hint) instead of a row that
silently does nothing. The analysis has one handler per effect listed here (``pinlint.analysis.
effects`` checks that the two agree when it is imported). Kept free of libcst: the prefilter loads
the tables before any file is parsed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

KINDS = ("pageable", "pinned", "pinned+write-combined", "mapped", "mapped+write-combined", "managed", "device")
ASYNC_MODES = ("always", "never", "stream", "stream-or-remembered", "blocking-false", "unless-blocking-true",
               "non-blocking", "flag")
DIRECTIONS = ("h2d", "d2h", "kind-arg")
ANNOTATION_VALUES = ("host", "torch-host", "device", "tensor", "stream")
# What a `[type_predicates]` function may test besides a type: whether memory is page-locked.
PREDICATE_VALUES = ("pinned-memory",)


class TableError(ValueError):
    """A table that does not fit the schema; the message names file, entry and key."""


def hint(word: str, allowed) -> str:
    close = difflib.get_close_matches(word, sorted(allowed), n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ------------------------------------------------------------------------------ value checks
def _is_bool(value) -> bool:
    return isinstance(value, bool)


def _is_size(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _is_str(value) -> bool:
    return isinstance(value, str)


def _is_str_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _one_of(*choices) -> Callable:
    def check(value) -> bool:
        return value in choices
    check.choices = choices  # type: ignore[attr-defined]
    return check


def _is_str_dict(value) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


@dataclass(frozen=True)
class EffectSchema:
    """What an entry of one effect may say: argument fields (where an argument lives in the call)
    and options (everything else), each option with a check of its value."""

    args: frozenset = frozenset()
    options: dict = field(default_factory=dict)
    doc: str = ""


_RETURNS_TUPLE = _one_of("err-tuple")
EFFECTS: dict[str, EffectSchema] = {
    "alloc": EffectSchema(
        frozenset({"shape", "dtype", "like", "nbytes", "flags", "like_device", "data", "into", "columns",
                   "pad", "pad_of", "joined"}),
        {"kind": _one_of(*KINDS), "pooled": _is_bool, "pooled_when_pinned": _is_bool, "fix": _is_str,
         "pin_kw": _is_str, "device_kw": _is_str, "reads": _is_bool, "pointer": _is_bool, "returns": _RETURNS_TUPLE,
         "uninitialized": _is_bool, "shape_varargs": _is_bool, "legacy_data": _is_bool, "tensor_alias": _is_bool, "shape_last": _is_bool, "range_args": _is_bool, "range_float_dtype": _is_str,
         "size": _is_size,
         "scalar_items": _is_bool, "copies_data": _is_bool, "grows": _is_bool, "square": _is_bool,
         "same_if_pinned": _is_bool, "cross": _is_bool, "python_numbers": _is_bool,
         "scalar_without_size": _one_of("int", "number", "element")},
        "a new host buffer (or device memory, when a device keyword says so)"),
    "device": EffectSchema(frozenset({"stream"}), {"library": _is_str, "returns": _RETURNS_TUPLE,
                                                  "remembers_stream": _is_bool}, "device memory"),
    "view": EffectSchema(frozenset({"arg", "dtype"}), {"device_kw": _is_str, "otherwise": _one_of("unknown", "pageable"), "pointer": _is_bool,
                                             "library": _is_str, "returns": _RETURNS_TUPLE, "shape_args": _is_bool,
                                             "each": _is_bool, "pieces": _is_bool, "movable": _is_bool,
                                             "otherwise_like": _is_str, "ndarray_arg": _is_bool, "cpu_only": _is_bool},
                         "the same memory as its argument, seen another way (with `each`: a tuple, one view "
                         "of each argument)"),
    "convert": EffectSchema(frozenset({"dtype", "copy", "source"}), {"targets": _is_str_dict, "copies": _is_bool,
                                                          "in_place": _is_bool},
                            "a dtype conversion: new pageable memory unless nothing changes"),
    "contiguous": EffectSchema(frozenset({"arg"}), {}, "a view when contiguous already, else a pageable copy"),
    "copy": EffectSchema(
        frozenset({"host", "device", "stream", "out", "blocking", "dst", "src", "kind_arg", "target_device",
                   "non_blocking", "async_flag", "copy_flag"}),
        {"direction": _one_of(*DIRECTIONS), "async": _one_of(*ASYNC_MODES), "staged": _is_bool,
         "returns": _one_of("device", "host-dest", "self"), "library": _is_str, "dest_kind_when_async": _one_of(*KINDS),
         "remembers_stream": _is_bool, "needs_device_side": _is_bool, "host_from_sequence": _is_bool,
         "device_receiver": _is_bool},
        "a host<->device copy"),
    "sync": EffectSchema(frozenset({"target_arg"}), {"target": _one_of("device", "self", "arg"), "computes": _is_bool},
                         "waits for a stream or the whole device (`computes`: an operation on its receiver "
                         "whose result stays where the receiver is)"),
    "stream": EffectSchema(frozenset(), {"returns": _RETURNS_TUPLE}, "a new (non-default) stream"),
    "default-stream": EffectSchema(frozenset(), {}, "a default stream"),
    "capture-begin": EffectSchema(frozenset(), {}, "starts recording a stream into a CUDA graph: copies "
                                  "issued until `capture-end` are recorded, not run"),
    "capture-end": EffectSchema(frozenset(), {"returns": _one_of("graph", "err-graph")},
                                "ends a stream capture (`returns`: the graph object it gives)"),
    "graph-launch": EffectSchema(frozenset({"stream"}), {}, "launches a CUDA graph: the copies recorded "
                                 "into graphs run now, on its stream"),
    "gpu-run": EffectSchema(frozenset(), {}, "true in every run that uses a GPU (`torch.cuda.is_available()`): "
                            "as `non_blocking=` or `pin_memory=` it is asynchronous or pinned there"),
    "current-stream": EffectSchema(frozenset(), {}, "the current stream"),
    "stream-context": EffectSchema(frozenset({"arg"}), {}, "a context manager making a stream current"),
    "use-stream": EffectSchema(frozenset(), {}, "makes the receiver the current stream from here on"),
    "sync-on-exit": EffectSchema(frozenset(), {}, "a context manager synchronizing the receiver when it ends"),
    "event": EffectSchema(frozenset(), {}, "an event object"),
    "gpu-device": EffectSchema(frozenset(), {}, "a device object"),
    "pool": EffectSchema(frozenset(), {}, "a pinned memory pool"),
    "pinned-pool": EffectSchema(frozenset(), {}, "CuPy's pinned memory pool (its `malloc` takes a block)"),
    "copy-object": EffectSchema(frozenset(), {}, "a copy described by setters and run by calling it "
                                "(PyCUDA's `Memcpy2D`: `set_src_host(h)`, `set_dst_host(h)`, then `copy(stream)`)"),
    "rng": EffectSchema(frozenset(), {}, "a random number generator whose methods make new arrays"),
    "executor": EffectSchema(frozenset(), {}, "a thread pool whose methods run functions beside the caller"),
    "run-later": EffectSchema(frozenset({"arg"}), {"each": _is_bool, "unpack": _is_bool},
                              "runs its function argument beside the caller with the call's other arguments "
                              "(with `each`: once per element of each of them; with `unpack`, each element "
                              "is a tuple of arguments: `starmap`)"),
    "kernel": EffectSchema(frozenset(), {}, "a GPU kernel object: calling it launches"),
    "kernel-module": EffectSchema(frozenset(), {}, "a module of GPU kernels"),
    "launch": EffectSchema(frozenset({"arg"}), {}, "launches a kernel on its argument(s)"),
    "device-spec": EffectSchema(frozenset({"arg"}), {}, "a torch device"),
    "table": EffectSchema(frozenset(), {"gives": _one_of("table", "column", "row", "cells", "cell", "cell-list", "rows", "indexed-rows")},
                          "a table of scalars read from text, or a column, row or cell of one (`gives`)"),
    "labelled-dataset": EffectSchema(frozenset({"target"}), {},
                                     "a dataset whose items are (sample, Python int class index), unless its "
                                     "`target` argument (a target transform) is given"),
    "loader": EffectSchema(frozenset(), {"pin_kw": _is_str, "fix": _is_str, "collate_kw": _is_str}, "a torch DataLoader"),
    "register": EffectSchema(frozenset({"arg", "flags"}), {"kind": _one_of(*KINDS), "context": _is_bool,
                                                          "returns": _one_of("view"), "waits": _one_of("device")},
                             "page-locks existing memory (for a with block when `context`; `waits`: the "
                             "block's end, unregistering it, waits for the whole device)"),
    "free": EffectSchema(frozenset({"arg"}), {"waits": _one_of("device")},
                         "releases memory: neither a use nor an escape (`waits`: the release waits for "
                         "the whole device, as a synchronize)"),
    "same-items": EffectSchema(frozenset({"arg"}), {}, "an iterable yielding what its argument yields "
                               "(a progress bar around a DataLoader: `for batch in tqdm(loader)`)"),
    "read": EffectSchema(frozenset({"arg"}), {"reduces": _is_bool},
                         "a CPU read of its argument (`reduces`: a reduction, a number when no axis is given)"),
    "write": EffectSchema(frozenset({"arg"}), {}, "a CPU write to its argument"),
    "array-module": EffectSchema(frozenset(), {"host_module": _is_str, "device_module": _is_str},
                                 "the array module of its arguments: `host_module` when all are host arrays, "
                                 "`device_module` when one is the library's device array"),
    "deserialize": EffectSchema(frozenset({"location"}), {"default_cpu": _is_bool},
                                "loads saved tensors (`torch.load`): host tensors of unknown structure, pageable, "
                                "where its `location` argument puts them on the CPU (with `default_cpu`: also "
                                "where it is not given); unknown elsewhere"),
    "elementwise": EffectSchema(frozenset(), {},
                                "an elementwise result (a ufunc, `t.div(255)`): new pageable memory the size "
                                "of its host array argument (its `out=` when given); nothing known of any other"),
}

ENTRY_KEYS = frozenset({"names", "on", "effect", "library", "unknown_receiver", "requires_kw", "note"})
ARG_SPEC_KEYS = frozenset({"pos", "kw", "default"})
ARG_WORDS = ("self", "all")

TOP_LEVEL = {
    "library": _is_str, "modules": _is_str_list, "prefixes": dict, "constants": dict, "none_constants": _is_str_list,
    "function": list,
    "method": list, "attributes": dict, "pinned": list, "sync": dict, "write_combined": dict, "receivers": dict,
    "annotations": dict, "type_predicates": dict, "host_flavour": _one_of("numpy", "torch"), "fixture_prefix": _is_str,
    "probe_module": _is_str, "dtypes": dict, "cuda": dict, "python": dict, "fix_families": dict,
    "device_strings": dict, "numpy_dispatch": lambda v: isinstance(v, bool),
    "array_namespaces": _is_str_list,
}
ATTRIBUTE_KEYS = frozenset({"view", "device", "null_streams", "kernel_decorators", "cuda_target_decorators",
                            "release_methods",
                            "frees_when_dropped"})
PINNED_KEYS = frozenset({"library", "from", "to", "positional", "keywords", "rename", "default_dtype", "import"})
SYNC_KEYS = frozenset({"stream_method", "stream_call", "device_call"})
DTYPE_KEYS = frozenset({"sizes", "attributes", "codes", "python", "modules"})
CUDA_KEYS = frozenset({"host_alloc_flags", "host_register_flags", "memcpy_kinds"})
PYTHON_KEYS = frozenset({"reading_builtins", "non_storing_builtins", "pure_builtins", "container_mutators", "dict_types", "dict_types_with_factory",
                         "copying_methods", "device_address_libraries", "torch_compute_namespaces", "library_modules", "library_class_bases", "process_spawners", "returns_self", "buffer_registrars", "call_runs", "returns_arguments", "index_grids",
                         "coroutine_runners", "non_retaining_builtins", "record_factories",
                         "torch_non_tensor_results", "torch_new_results", "torch_layer_namespaces", "torch_non_layers",
                         "torch_same_size_results", "table_attributes", "number_modules",
                         "number_tuple_functions"})
FIX_FAMILY_KEYS = frozenset({"how", "keyword"})
DEVICE_STRING_KEYS = frozenset({"cuda", "cpu", "other"})


def check_keys(where: str, found, allowed) -> None:
    for key in found:
        if key not in allowed:
            raise TableError(f"{where}: unknown key {key!r}{hint(key, allowed)}")


def check_value(where: str, key: str, value: Any, check) -> None:
    if isinstance(check, type):
        ok = isinstance(value, check)
    else:
        ok = check(value)
    if not ok:
        choices = getattr(check, "choices", None)
        expected = f"one of {', '.join(map(repr, choices))}" if choices else \
            (check.__name__ if isinstance(check, type) else check.__name__.replace("_is_", "a "))
        extra = hint(str(value), choices) if choices and isinstance(value, str) else ""
        raise TableError(f"{where}: {key} = {value!r} is not {expected}{extra}")


def check_arg_spec(where: str, key: str, raw: Any) -> None:
    if isinstance(raw, str):
        if raw not in ARG_WORDS:
            raise TableError(f"{where}: {key} = {raw!r} is not an argument spec ({{pos = N, kw = \"name\"}}, "
                             f"\"self\" or \"all\"){hint(raw, ARG_WORDS)}")
        return
    if not isinstance(raw, dict):
        raise TableError(f"{where}: {key} must be an argument spec ({{pos = N, kw = \"name\"}}, \"self\" or \"all\")")
    check_keys(f"{where}, {key}", raw, ARG_SPEC_KEYS)
    if "pos" in raw and not (isinstance(raw["pos"], int) and not isinstance(raw["pos"], bool) and raw["pos"] >= 0):
        raise TableError(f"{where}, {key}: pos must be a non-negative integer")
    if "kw" in raw and not isinstance(raw["kw"], str):
        raise TableError(f"{where}, {key}: kw must be a string")


def entry_name(raw: dict) -> str:
    names = raw.get("names")
    if isinstance(names, list) and names and isinstance(names[0], str):
        return names[0]
    return "?"


def check_entry(where: str, raw: dict, receivers: Optional[set] = None) -> EffectSchema:
    """Check one [[function]] or [[method]] entry; returns its effect's schema."""
    if not isinstance(raw, dict):
        raise TableError(f"{where}: an entry must be a table")
    if not _is_str_list(raw.get("names")) or not raw.get("names"):
        raise TableError(f"{where}: `names` must be a non-empty list of strings")
    effect = raw.get("effect")
    if effect not in EFFECTS:
        raise TableError(f"{where}: unknown effect {effect!r}{hint(str(effect), EFFECTS)}")
    schema = EFFECTS[effect]
    allowed = ENTRY_KEYS | schema.args | set(schema.options)
    check_keys(where, raw, allowed)
    for key in schema.args & set(raw):
        check_arg_spec(where, key, raw[key])
    for key, check in schema.options.items():
        if key in raw:
            check_value(where, key, raw[key], check)
    if "unknown_receiver" in raw and not (isinstance(raw["unknown_receiver"], str) and raw["unknown_receiver"].strip()):
        raise TableError(f"{where}: unknown_receiver must give the reason the signature is unique to one library")
    if "requires_kw" in raw and not _is_str_list(raw["requires_kw"]):
        raise TableError(f"{where}: requires_kw must be a list of keyword names")
    return schema
