"""Loads the per-library API tables (``rules/api/*.toml``) into lookups the analysis queries.

Adding an API is a data change: a new entry in a table, no code.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def rules_dir() -> Path:
    """The ``rules/`` folder: inside the wheel (``pinlint/_rules``) or at the top of a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_rules", here.parent / "rules"):
        if (candidate / "api").is_dir():
            return candidate
    raise FileNotFoundError("pinlint's rules/ folder is missing from this installation")


@dataclass(frozen=True)
class ArgSpec:
    """Where an argument lives: position, keyword, or the receiver of a method (``self``)."""

    pos: Optional[int] = None
    kw: Optional[str] = None
    is_self: bool = False
    is_all: bool = False
    default: Any = None

    @staticmethod
    def parse(raw: Any) -> Optional["ArgSpec"]:
        if raw is None:
            return None
        if raw == "self":
            return ArgSpec(is_self=True)
        if raw == "all":
            return ArgSpec(is_all=True)
        return ArgSpec(pos=raw.get("pos"), kw=raw.get("kw"), default=raw.get("default"))


_ARG_FIELDS = ("shape", "dtype", "like", "nbytes", "flags", "arg", "host", "device", "stream", "out",
               "blocking", "dst", "src", "kind_arg", "target_device", "non_blocking", "async_flag",
               "like_device", "copy")


@dataclass(frozen=True)
class Api:
    """One table entry: what a function or method does to host memory."""

    name: str
    library: str
    effect: str
    args: dict = field(default_factory=dict)  # field name -> ArgSpec
    options: dict = field(default_factory=dict)  # every other key of the entry

    def arg(self, name: str) -> Optional[ArgSpec]:
        return self.args.get(name)

    def opt(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)


@dataclass
class Tables:
    functions: dict[str, Api] = field(default_factory=dict)
    methods: dict[tuple[str, str], Api] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)
    view_attributes: set[str] = field(default_factory=set)
    device_attributes: set[str] = field(default_factory=set)
    null_streams: set[str] = field(default_factory=set)
    kernel_decorators: set[str] = field(default_factory=set)
    pinned_twins: dict = field(default_factory=dict)   # (copying library, numpy allocator) -> entry
    sync_templates: dict = field(default_factory=dict)  # library -> {"stream": ..., "device": ...}
    write_combined_defaults: dict = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)  # import root -> library

    @functools.cached_property
    def call_pattern(self) -> "re.Pattern":
        """Bytes regex for a call of any API a finding needs (``to_device(``, ``.set(``, ``empty_pinned(``).
        Every finding comes from such a call written in the file, so a file without one is skipped."""
        names = {api.name.rsplit(".", 1)[-1] for api in self.functions.values() if _relevant(api)}
        names |= {name for (_, name), api in self.methods.items() if _relevant(api)}
        alternatives = "|".join(sorted(re.escape(n) for n in names))
        return re.compile(rb"\b(?:" + alternatives.encode() + rb")\s*\(")

    @property
    def triggers(self) -> tuple[str, ...]:
        """Substrings at least one of which every file with a finding must contain.

        A finding needs a GPU library's API resolved through an import, and every import of a GPU
        library names its module; so the module names (reduced to the shortest that cover the
        others) are a sound prefilter. NumPy alone cannot produce a finding.
        """
        names = sorted({m for m, lib in self.modules.items() if lib != "numpy"}, key=len)
        kept: list[str] = []
        for name in names:
            if not any(k in name for k in kept):
                kept.append(name)
        return tuple(kept)


# How method receivers are named in messages.
RECEIVER_CLASSES = {
    "host": "ndarray", "torch.host": "Tensor", "torch.device": "Tensor", "cupy.device": "cupy.ndarray",
    "numba.device": "DeviceNDArray", "pycuda.device": "GPUArray", "stream": "Stream", "event": "Event",
    "gpu-device": "Device", "pool": "PageLockedMemoryPool", "device": "array", "any": "object",
}


def _relevant(api: "Api") -> bool:
    """APIs without which no rule can report: copies, registrations, and allocations that can be pinned."""
    if api.effect in ("copy", "register", "loader"):
        return True
    return api.effect == "alloc" and (api.opt("kind") != "pageable" or bool(api.opt("pin_kw")))


def _expand(name: str, prefixes: dict[str, list[str]]) -> list[str]:
    for key, values in prefixes.items():
        token = "{" + key + "}"
        if token in name:
            return [name.replace(token, v) for v in values]
    return [name]


def _entry(raw: dict, name: str, library: str) -> Api:
    # `target` is either a word ("device", "self") or an argument spec.
    arg_keys = [k for k in raw if k in _ARG_FIELDS or (k == "target" and isinstance(raw[k], dict))]
    args = {k: ArgSpec.parse(raw[k]) for k in arg_keys}
    options = {k: v for k, v in raw.items() if k not in arg_keys and k not in ("names", "on")}
    return Api(name=name, library=raw.get("library", library), effect=raw["effect"], args=args,
               options=options)


def load_tables(folder: Optional[Path] = None) -> Tables:
    folder = folder or rules_dir() / "api"
    tables = Tables()
    for path in sorted(folder.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        library = data["library"]
        prefixes = data.get("prefixes", {})
        for module in data.get("modules", []):
            tables.modules[module] = library
        for key, value in data.get("constants", {}).items():
            for name in _expand(key, prefixes):
                tables.constants[name] = value
        for raw in data.get("function", []):
            for pattern in raw["names"]:
                for name in _expand(pattern, prefixes):
                    tables.functions[name] = _entry(raw, name, library)
        for raw in data.get("method", []):
            receivers = [raw["on"]] if isinstance(raw["on"], str) else raw["on"]
            owner = RECEIVER_CLASSES.get(receivers[0], receivers[0])
            for name in raw["names"]:
                for receiver in receivers:
                    tables.methods[(receiver, name)] = _entry(raw, f"{owner}.{name}", library)
        attrs = data.get("attributes", {})
        tables.view_attributes.update(attrs.get("view", []))
        tables.device_attributes.update(attrs.get("device", []))
        tables.null_streams.update(attrs.get("null_streams", []))
        tables.kernel_decorators.update(attrs.get("kernel_decorators", []))
        for twin in data.get("pinned", []):
            tables.pinned_twins[(twin["library"], twin["from"])] = twin
        tables.sync_templates.update(data.get("sync", {}))
        tables.write_combined_defaults.update(data.get("write_combined", {}).get("default", {}))
    return tables


@functools.lru_cache(maxsize=1)
def default_tables() -> Tables:
    return load_tables()
