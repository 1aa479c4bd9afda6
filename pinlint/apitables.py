"""Loads the API tables (``rules/api/*.toml``) into the lookups the analysis queries.

Every library fact lives in the tables: which calls allocate, copy, register or synchronize and
how; flag bits and memcpy kinds; dtype sizes; pinned twins for fixes. Each table is checked against
``pinlint.tableschema`` as it loads. Adding an API that fits an existing effect is a table row and
nothing else (rules/api/README.md shows how).
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from . import tableschema as schema
from .tableschema import TableError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["Api", "ArgSpec", "TableError", "Tables", "default_tables", "load_tables", "rules_dir"]


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
    def parse(raw: Any) -> "ArgSpec":
        if raw == "self":
            return ArgSpec(is_self=True)
        if raw == "all":
            return ArgSpec(is_all=True)
        return ArgSpec(pos=raw.get("pos"), kw=raw.get("kw"), default=raw.get("default"))


@dataclass(frozen=True)
class Api:
    """One table entry: what a function or method does to host memory."""

    name: str
    library: str
    effect: str
    args: dict = field(default_factory=dict)     # field name -> ArgSpec
    options: dict = field(default_factory=dict)  # every other key of the entry
    family: str = ""                             # library, or library.prefix (cuda-python's runtime/driver)
    unknown_receiver: Optional[str] = None       # why the signature identifies the library on any receiver
    requires_kw: tuple = ()                      # keywords that must be present for that to hold ("a|b": either)

    def identified_by(self, keywords) -> bool:
        """Whether a call with these keywords has the signature ``requires_kw`` asks for."""
        return all(any(kw in keywords for kw in required.split("|")) for required in self.requires_kw)

    def arg(self, name: str) -> Optional[ArgSpec]:
        return self.args.get(name)

    def opt(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)


@dataclass
class Tables:
    functions: dict = field(default_factory=dict)      # qualified name -> Api
    methods: dict = field(default_factory=dict)        # (receiver, name) -> Api
    unknown_methods: dict = field(default_factory=dict)  # name -> [Api] valid on receivers of unknown provenance
    constants: dict = field(default_factory=dict)
    view_attributes: set = field(default_factory=set)
    device_attributes: set = field(default_factory=set)
    null_streams: set = field(default_factory=set)
    kernel_decorators: set = field(default_factory=set)
    cuda_target_decorators: set = field(default_factory=set)  # kernels only with target="cuda"
    release_methods: set = field(default_factory=set)
    frees_when_dropped: set = field(default_factory=set)  # allocators whose memory is freed, waiting for the device, when its last reference goes
    pinned_twins: dict = field(default_factory=dict)   # (copying library, numpy allocator) -> entry
    sync_templates: dict = field(default_factory=dict)  # family -> {"stream_method": ..., "device_call": ...}
    write_combined_defaults: dict = field(default_factory=dict)
    modules: dict = field(default_factory=dict)        # import root -> library
    receivers: dict = field(default_factory=dict)      # receiver key -> class name shown in messages
    annotations: dict = field(default_factory=dict)    # qualified type -> "host" | "device:<lib>" | ...
    type_predicates: dict = field(default_factory=dict)  # `torch.is_tensor`-like function -> the annotation kind it tests
    host_flavour: dict = field(default_factory=dict)   # library -> "numpy" | "torch"
    numpy_dispatch: set = field(default_factory=set)   # libraries whose arrays NumPy's functions hand back to them (NEP-18)
    array_namespaces: dict = field(default_factory=dict)  # module -> library whose device arrays its functions return
    fixture_prefixes: dict = field(default_factory=dict)  # fixture file prefix -> module to import
    dtypes: dict = field(default_factory=dict)
    cuda: dict = field(default_factory=dict)
    python: dict = field(default_factory=dict)
    fix_families: dict = field(default_factory=dict)
    device_strings: dict = field(default_factory=dict)

    @functools.cached_property
    def module_paths(self) -> frozenset:
        """The library modules the tables' functions live in (`cuda.cudart`, `cupy.cuda.runtime`):
        a name bound to one (`rt = cudart`, `self._rt = cudart`) is that module."""
        paths = set()
        for name in self.functions:
            parts = name.split(".")
            paths.update(".".join(parts[:end]) for end in range(1, len(parts)))
        return frozenset(paths)

    @functools.cached_property
    def call_pattern(self) -> "re.Pattern":
        """Bytes regex for a call of any API a finding needs (``to_device(``, ``.set(``, ``empty_pinned(``).
        A finding in a file's own code comes from such a call written in it (or from
        ``keyword_pins``); the prefilter skips a file without one unless it imports GPU code of the tree."""
        return _names_pattern(self._api_names(_relevant))

    @functools.cached_property
    def keyword_pins(self) -> tuple:
        """(keywords, pattern) for the allocations that pin only when asked by a keyword
        (``torch.zeros(n, pin_memory=True)``): such a call counts only in a file that has one of the
        keywords written in it, or a ``**mapping`` that may hold one (the analysis reads the keyword
        from the call or from the dict it unpacks); without it the call makes a pageable buffer, and what a rule needs of that
        is a copy, whose own name the file then holds. torch's generic ``zeros``, ``empty``,
        ``arange`` names let 15% of cupy's and numba-cuda's files through for nothing."""
        keywords = tuple(sorted({str(api.opt("pin_kw")).encode() for api in self._all_apis() if _pins_by_keyword(api)}))
        return keywords, _names_pattern(self._api_names(_pins_by_keyword))

    @functools.cached_property
    def deciding_keywords(self) -> frozenset:
        """Keywords whose constant value decides what a call makes or does (``pin_memory=``,
        ``non_blocking=``, ``blocking=``): a function that passes its own parameter there behaves
        differently for a caller that leaves the parameter at its default."""
        found = {str(api.opt("pin_kw")) for api in self._all_apis() if api.opt("pin_kw")}
        # `torch.empty(n, device=self.dev)`: the device keyword decides host memory or a GPU's.
        found |= {str(api.opt("device_kw")) for api in self._all_apis() if api.opt("device_kw")}
        for api in self._all_apis():
            for name in ("blocking", "non_blocking", "async_flag"):
                spec = api.arg(name)
                if spec is not None and spec.kw:
                    found.add(spec.kw)
        return frozenset(found)

    def _all_apis(self):
        return [*self.functions.values(), *self.methods.values()]

    def _api_names(self, keep) -> set:
        names = {api.name.rsplit(".", 1)[-1] for api in self.functions.values() if keep(api)}
        return names | {name for (_, name), api in self.methods.items() if keep(api)}

    @property
    def triggers(self) -> tuple[str, ...]:
        """Substrings at least one of which every file with a finding must contain.

        A finding needs a GPU library's API resolved through an import, and every import of a GPU
        library names its module; so the module names (reduced to the shortest that cover the
        others) are a sound prefilter. NumPy alone cannot produce a finding.
        """
        names = sorted({m for m, lib in self.modules.items() if lib not in ("numpy", "python")}, key=len)
        kept: list[str] = []
        for name in names:
            if not any(k in name for k in kept):
                kept.append(name)
        return tuple(kept)

    def library_of(self, qualified: str) -> Optional[str]:
        """The library an imported name belongs to (``cupy.cuda.Stream`` -> ``cupy``), None for others."""
        root = qualified.split(".")[0]
        return self.modules.get(root)

    def receiver_class(self, receiver: str) -> str:
        return self.receivers.get(receiver, receiver)

    # ------------------------------------------------------------------ CUDA constants
    def flag_bit(self, table: str, name: str) -> int:
        return int(self.cuda.get(table, {}).get(name, 0))

    def memcpy_direction(self, code) -> Optional[str]:
        return self.cuda.get("memcpy_kinds", {}).get(str(code))


def _relevant(api: "Api") -> bool:
    """APIs without which no rule can report: copies, registrations, and allocations that pin."""
    if api.effect in ("copy", "register", "loader", "copy-object"):
        return True
    if api.effect == "view" and api.opt("device_kw"):
        return True  # `torch.as_tensor(h, device="cuda")` copies to the GPU
    return api.effect == "alloc" and api.opt("kind") != "pageable"


def _pins_by_keyword(api: "Api") -> bool:
    """A pageable allocation that a keyword pins (``pin_memory=True``)."""
    return api.effect == "alloc" and api.opt("kind") == "pageable" and bool(api.opt("pin_kw"))


def _names_pattern(names) -> "re.Pattern":
    alternatives = "|".join(sorted(re.escape(n) for n in names))
    return re.compile(rb"\b(?:" + alternatives.encode() + rb")\s*\(")


def _expand(name: str, prefixes: dict) -> list[tuple[str, str]]:
    """``{runtime}.cudaMemcpy`` -> one (name, prefix key) per module path the prefix stands for."""
    for key, values in prefixes.items():
        token = "{" + key + "}"
        if token in name:
            return [(name.replace(token, v), key) for v in values]
    return [(name, "")]


def _entry(raw: dict, name: str, library: str, prefix: str) -> Api:
    effect_schema = schema.EFFECTS[raw["effect"]]
    args = {k: ArgSpec.parse(v) for k, v in raw.items() if k in effect_schema.args}  # the table's order, not a set's
    options = {k: v for k, v in raw.items() if k in effect_schema.options}
    lib = raw.get("library", library)
    return Api(name=name, library=lib, effect=raw["effect"], args=args, options=options,
               family=f"{library}.{prefix}" if prefix else library,
               unknown_receiver=raw.get("unknown_receiver"), requires_kw=tuple(raw.get("requires_kw", ())))


_BUILTIN_RECEIVERS = frozenset({"host", "device", "stream", "event", "gpu-device", "pool", "pinned-pool", "kernel-module", "kernel",
                                "loader", "rng", "executor", "graph"})


def _check_top_level(where: str, data: dict) -> None:
    schema.check_keys(where, data, schema.TOP_LEVEL)
    for key, check in schema.TOP_LEVEL.items():
        if key in data:
            schema.check_value(where, key, data[key], check)
    if "library" not in data:
        raise TableError(f"{where}: missing `library`")
    schema.check_keys(f"{where}, [attributes]", data.get("attributes", {}), schema.ATTRIBUTE_KEYS)
    for index, twin in enumerate(data.get("pinned", [])):
        schema.check_keys(f"{where}, [[pinned]] #{index + 1}", twin, schema.PINNED_KEYS)
    for family, templates in data.get("sync", {}).items():
        schema.check_keys(f"{where}, [sync.{family}]", templates, schema.SYNC_KEYS)
    schema.check_keys(f"{where}, [dtypes]", data.get("dtypes", {}), schema.DTYPE_KEYS)
    schema.check_keys(f"{where}, [cuda]", data.get("cuda", {}), schema.CUDA_KEYS)
    schema.check_keys(f"{where}, [python]", data.get("python", {}), schema.PYTHON_KEYS)
    schema.check_keys(f"{where}, [device_strings]", data.get("device_strings", {}), schema.DEVICE_STRING_KEYS)
    for family, spec in data.get("fix_families", {}).items():
        schema.check_keys(f"{where}, [fix_families.{family}]", spec, schema.FIX_FAMILY_KEYS)
    for section, allowed in (("annotations", schema.ANNOTATION_VALUES),
                             ("type_predicates", schema.ANNOTATION_VALUES + schema.PREDICATE_VALUES)):
        for name, kind in data.get(section, {}).items():
            base = kind.split(":")[0] if isinstance(kind, str) else kind
            if base not in allowed:
                raise TableError(f"{where}, [{section}]: {name} = {kind!r} is not one of "
                                 f"{', '.join(allowed)}{schema.hint(str(base), allowed)}")


def load_tables(folder: Optional[Path] = None) -> Tables:
    """Load and check every table in ``folder`` (default: the shipped ``rules/api``)."""
    folder = folder or rules_dir() / "api"
    tables = Tables()
    raw_tables = []
    for path in sorted(folder.glob("*.toml")):
        where = f"rules/api/{path.name}"
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise TableError(f"{where}: {exc}") from None
        _check_top_level(where, data)
        raw_tables.append((where, data))
        library = data["library"]
        tables.receivers.update(data.get("receivers", {}))
        tables.host_flavour[library] = data.get("host_flavour", "numpy")
        if data.get("numpy_dispatch"):
            tables.numpy_dispatch.add(library)
        for module in data.get("array_namespaces", []):
            tables.array_namespaces[module] = library
        if "fixture_prefix" in data:
            tables.fixture_prefixes[data["fixture_prefix"]] = data.get("probe_module", data.get("modules", [library])[0])
        for module in data.get("modules", []):
            tables.modules[module] = library
    receivers = _BUILTIN_RECEIVERS | set(tables.receivers)
    for where, data in raw_tables:
        _load_one(tables, where, data, receivers)
    fix_families = set(tables.fix_families)
    for api in list(tables.functions.values()) + list(tables.methods.values()):
        family = api.opt("fix")
        if family is not None and family not in fix_families:
            raise TableError(f"rules/api: entry {api.name!r}: unknown fix family {family!r}"
                             f"{schema.hint(family, fix_families)}")
    return tables


def _load_one(tables: Tables, where: str, data: dict, receivers: set) -> None:
    library = data["library"]
    prefixes = data.get("prefixes", {})
    for key, value in data.get("constants", {}).items():
        for name, _ in _expand(key, prefixes):
            tables.constants[name] = value
    for key in data.get("none_constants", ()):  # TOML has no None: `np.newaxis`
        for name, _ in _expand(key, prefixes):
            tables.constants[name] = None
    for index, raw in enumerate(data.get("function", [])):
        entry_where = f"{where}: [[function]] {schema.entry_name(raw)!r}"
        schema.check_entry(entry_where, raw)
        if "on" in raw:
            raise TableError(f"{entry_where}: unknown key 'on' (only [[method]] entries have a receiver)")
        for pattern in raw["names"]:
            for name, prefix in _expand(pattern, prefixes):
                tables.functions[name] = _entry(raw, name, library, prefix)
    for raw in data.get("method", []):
        entry_where = f"{where}: [[method]] {schema.entry_name(raw)!r}"
        schema.check_entry(entry_where, raw)
        on = raw.get("on")
        if on is None:
            raise TableError(f"{entry_where}: missing `on` (the receivers the method belongs to)")
        on_list = [on] if isinstance(on, str) else on
        for receiver in on_list:
            if receiver not in receivers:
                raise TableError(f"{entry_where}: unknown receiver {receiver!r}{schema.hint(receiver, receivers)}")
        owner = tables.receiver_class(on_list[0])
        for name in raw["names"]:
            api = _entry(raw, f"{owner}.{name}", library, "")
            for receiver in on_list:
                tables.methods[(receiver, name)] = api
            if api.unknown_receiver:
                tables.unknown_methods.setdefault(name, []).append(api)
    attrs = data.get("attributes", {})
    tables.view_attributes.update(attrs.get("view", []))
    tables.device_attributes.update(attrs.get("device", []))
    tables.null_streams.update(attrs.get("null_streams", []))
    tables.kernel_decorators.update(attrs.get("kernel_decorators", []))
    tables.cuda_target_decorators.update(attrs.get("cuda_target_decorators", []))
    tables.release_methods.update(attrs.get("release_methods", []))
    tables.frees_when_dropped.update(attrs.get("frees_when_dropped", []))
    for twin in data.get("pinned", []):
        tables.pinned_twins[(twin["library"], twin["from"])] = twin
    tables.sync_templates.update(data.get("sync", {}))
    tables.write_combined_defaults.update(data.get("write_combined", {}).get("default", {}))
    tables.annotations.update(data.get("annotations", {}))
    tables.type_predicates.update(data.get("type_predicates", {}))
    for key in ("dtypes", "cuda", "python", "device_strings"):
        for name, value in data.get(key, {}).items():
            getattr(tables, key)[name] = value
    tables.fix_families.update(data.get("fix_families", {}))


@functools.lru_cache(maxsize=1)
def default_tables() -> Tables:
    return load_tables()
