"""Shared fuzzing machinery for the reliability tests and ``bench/fuzz.py``.

Three sources of programs, all deterministic for a given ``random.Random``:

- ``ProgramGenerator`` writes CUDA Python programs from the real API tables (``rules/api/*.toml``):
  every allocator, copy (with its stream / ``non_blocking`` / ``blocking`` / ``async_`` arguments),
  synchronization, registration, stream and kernel entry the tables know, imported under random
  aliases (``import cupy as cp``, ``from numba import cuda``, ``import torch as T``,
  ``from cuda.bindings import runtime as rt``...), through views (slices, ``reshape``, ``.T``,
  ``np.asarray``), with CPU reads and writes, nested in for/while/if/with/try/def/class. Many of them
  produce findings and fixes, which is the point: the fixer is exercised, not only the parser.
- ``mutate`` splices such fragments (API calls, syncs, loops, branches, alias renames, deletions and
  duplications) into existing valid programs: the bundled fixtures, the fix cases and the rules'
  embedded examples (``seed_corpus``).
- hypothesmith (optional; ``tests/test_reliability.py`` skips its test when it is missing) writes
  arbitrary valid Python from the grammar.

``check_program`` states the properties every program must have and returns what broke:
linting never raises nor reports an internal error; a program that compiles is never PIN000;
fixing (safe, and with unsafe fixes) never raises, always yields text that parses and compiles,
converges (fixing the fixed text changes nothing), leaves every line that no finding points at
untouched, uses no name that nothing binds where it is used (``symtable``) and adds no import that
runs when the module loads (``ast``: a library not imported then, or one imported only under a
guard); ``--add-noqa``'s text compiles, keeps every string's value and suppresses every finding.
Generated programs import their libraries at module level, under ``try: ... except ImportError:``
or only inside ``main()``.
"""

from __future__ import annotations

import ast
import difflib
import random
import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

import libcst as cst

from pinlint.apitables import Api, default_tables
from pinlint.engine import fix_text, lint_text
from pinlint.settings import Settings

import safety_props

REPO = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------- the API tables, grouped
_LIBRARY_OF_ROOT = {"cupy": "cupy", "cupyx": "cupy", "numba": "numba", "pycuda": "pycuda", "cuda": "cuda-python",
                    "torch": "torch", "numpy": "numpy", "ctypes": "numpy"}
# Aliases people use (and a few odd ones); a local name is bound to one thing per program.
_ALIASES = {
    "numpy": ["np", "numpy", "onp", "N"],
    "cupy": ["cp", "cupy", "xp", "cpy"],
    "cupyx": ["cupyx", "cpx", "cx"],
    "numba": ["numba", "nb"],
    "numba.cuda": ["cuda", "nbcuda", "ncuda"],
    "torch": ["torch", "T", "th", "pt"],
    "pycuda.driver": ["drv", "cuda_drv", "driver"],
    "pycuda.gpuarray": ["gpuarray", "ga"],
    "pycuda": ["pycuda"],
    "cuda.bindings.runtime": ["rt", "cudart", "runtime"],
    "cuda.bindings.driver": ["drv_api", "cu", "cuda_driver"],
    "cuda.cudart": ["cudart", "rt"],
    "cuda.cuda": ["cuda_api", "cuda"],
    "cupy.cuda": ["cuda", "cpcuda"],
    "cupy.cuda.runtime": ["runtime", "cprt"],
    "torch.utils.data": ["data", "tud"],
}
_DEVICE_TYPE = {"cupy": "cupy.device", "numba": "numba.device", "pycuda": "pycuda.device", "torch": "torch.device",
                "cuda-python": "cuda.device"}


def _library(name: str) -> str:
    return _LIBRARY_OF_ROOT.get(name.split(".")[0], "other")


@dataclass
class ApiCatalog:
    """The table entries the generator draws from, by what they do."""

    functions: dict                      # effect -> [Api]
    methods: dict                        # effect -> [(receiver, method name, Api)]
    constants: dict                      # qualified constant name -> value

    @staticmethod
    def load() -> "ApiCatalog":
        tables = default_tables()
        functions: dict = {}
        for api in tables.functions.values():
            functions.setdefault(api.effect, []).append(api)
        methods: dict = {}
        for (receiver, name), api in tables.methods.items():
            methods.setdefault(api.effect, []).append((receiver, name, api))
        for group in functions.values():
            group.sort(key=lambda a: a.name)
        for group in methods.values():
            group.sort(key=lambda m: (m[0], m[1]))
        return ApiCatalog(functions, methods, dict(sorted(tables.constants.items())))

    def flags_for(self, api_name: str) -> list:
        """Constants that make sense as the flags argument of an allocator / registration."""
        root = api_name.split(".")[0]
        wanted = ("HostAlloc", "hostAlloc", "host_alloc_flags", "MEMHOSTALLOC", "HostRegister", "MEMHOSTREGISTER",
                  "mem_host_register_flags")
        same_module = [c for c in self.constants if c.split(".")[0] == root and any(w in c for w in wanted)]
        return same_module

    def memcpy_kinds(self, api_name: str) -> list:
        prefix = api_name.rsplit(".", 1)[0]
        return [c for c in self.constants if c.startswith(prefix) and ("emcpy" in c.rsplit(".", 1)[-1])]


_CATALOG: Optional[ApiCatalog] = None


def catalog() -> ApiCatalog:
    global _CATALOG
    if _CATALOG is None:
        _CATALOG = ApiCatalog.load()
    return _CATALOG


# --------------------------------------------------------------------------- spelling names through imports
class Imports:
    """Random import styles for the qualified names a program uses; one binding per local name."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.bindings: dict = {}      # local name -> qualified target
        self.lines: list = []
        self.reserved: set = set()

    def _free(self, candidates: Iterable[str]) -> Optional[str]:
        for name in candidates:
            if name not in self.bindings and name not in self.reserved:
                return name
        return None

    def spell(self, qualified: str) -> str:
        """An expression naming ``qualified``, through an existing import when one covers it."""
        covering = [(local, target) for local, target in self.bindings.items()
                    if qualified == target or qualified.startswith(target + ".")]
        if covering and self.rng.random() < 0.97:
            local, target = self.rng.choice(sorted(covering))
            return local + qualified[len(target):]
        return self._new_import(qualified)

    def _new_import(self, qualified: str) -> str:
        parts = qualified.split(".")
        # Where to cut: import a module prefix, spell the rest as attributes.
        cuts = list(range(1, len(parts)))
        if not cuts:  # a bare top-level name (never happens with the tables)
            cuts = [1]
        rng = self.rng
        for _ in range(8):
            cut = rng.choice(cuts)
            module = ".".join(parts[:cut])
            rest = parts[cut:]
            style = rng.choice(["import", "import-as", "import-as", "from", "from-as"] if cut > 1 else
                               ["import", "import-as", "import-as"])
            if style == "import":
                local = parts[0]
                target = parts[0]
                if self.bindings.get(local, target) != target or local in self.reserved:
                    continue
                self.bindings[local] = target
                self.lines.append(f"import {module}")
                return ".".join(parts)
            if style == "import-as":
                local = self._free(rng.sample(_ALIASES.get(module, []), len(_ALIASES.get(module, [])))
                                   + [f"{parts[cut - 1]}_{rng.randrange(100)}"])
                if local is None:
                    continue
                self.bindings[local] = module
                self.lines.append(f"import {module} as {local}" if local != module else f"import {module}")
                return ".".join([local, *rest])
            parent, name = ".".join(parts[:cut - 1]), parts[cut - 1]
            if style == "from":
                local = name if name not in self.bindings and name not in self.reserved else None
            else:
                local = self._free(rng.sample(_ALIASES.get(module, []), len(_ALIASES.get(module, [])))
                                   + [f"{name}_{rng.randrange(100)}"])
            if local is None:
                continue
            self.bindings[local] = module
            self.lines.append(f"from {parent} import {name}" + (f" as {local}" if local != name else ""))
            return ".".join([local, *rest])
        # Fall back to the plain dotted name through `import root`... unless the root is taken.
        local = self._free([f"{parts[0]}_mod{len(self.bindings)}"])
        self.bindings[local] = parts[0]
        self.lines.append(f"import {parts[0]} as {local}")
        return ".".join([local, *parts[1:]])

    def render(self) -> list:
        lines = list(dict.fromkeys(self.lines))
        self.rng.shuffle(lines)
        if self.rng.random() < 0.2:  # several imports on one line
            joined = [l for l in lines if l.startswith("import ") and " as " not in l]
            if len(joined) > 1:
                lines = [l for l in lines if l not in joined] + ["import " + ", ".join(l[7:] for l in joined)]
        return lines


# --------------------------------------------------------------------------- generating programs
@dataclass
class Var:
    name: str
    type: str            # "host", "torch.host", "cupy.device", ..., "stream", "event", "pool", "ptr", "mem", "kernel"
    library: str = ""


class ProgramGenerator:
    """Random CUDA Python programs built from the API tables (see the module docstring)."""

    def __init__(self, rng: random.Random, max_depth: int = 3, max_statements: int = 14) -> None:
        self.rng = rng
        self.cat = catalog()
        self.max_depth = max_depth
        self.max_statements = max_statements

    # ---- one program
    def program(self) -> str:
        rng = self.rng
        self.imports = Imports(rng)
        self.vars: list = []
        self.counter = 0
        self.helpers: list = []
        self.last_host: Optional[Var] = None
        self.imports.reserved |= {"n", "i", "j", "k", "flag", "self", "result", "dev", "ds", "loader"}
        body = ["n = 1 << 20" if rng.random() < 0.8 else "n = 4096", "flag = True"]
        focus = rng.sample(["cupy", "numba", "pycuda", "cuda-python", "torch"], rng.choice([1, 1, 1, 2, 3]))
        self.focus = focus
        # A few buffers and device arrays first, so copies have something to copy.
        for _ in range(rng.randint(1, 3)):
            body += self.host_alloc()
        for _ in range(rng.randint(0, 2)):
            body += self.device_alloc()
        body += self.block(0, rng.randint(3, self.max_statements), in_loop=False, in_def=False)
        lines = self.imports.render() + self.helpers + body
        placement = rng.random()
        if placement < 0.12:
            # Optional libraries: every import under `try: ... except ImportError:` (a fix may add
            # imports only there).
            imports = self.imports.render()
            lines = ["try:", *("    " + line for line in imports), "except ImportError:", "    pass", *self.helpers, *body]
        elif placement < 0.24:
            # Libraries imported only when main() runs: a fix may not import one when the module loads.
            lines = ["def main():", *("    " + line for line in self.imports.render() + self.helpers + body), "",
                     "", "main()"]
        if rng.random() < 0.1:
            # Imports bound only inside another function: they bind nothing anywhere else.
            lines = ["def _probe():", "    import cupyx", "    from numba import cuda", "    import pycuda.driver as drv",
                     "    return cupyx, cuda, drv", "", *lines]
        lines = self._continued(lines)
        if rng.random() < 0.1:
            lines.insert(0, '"""A generated program."""')
        if rng.random() < 0.15:
            # anywhere but after a backslash continuation, where a comment line ends the statement
            spots = [i for i in range(len(lines) + 1) if i == 0 or not lines[i - 1].endswith("\\")]
            lines.insert(rng.choice(spots), "# a comment line")
        indent = rng.choice(["    ", "    ", "  ", "\t"])
        text = "\n".join(line.replace("    ", indent) if indent != "    " else line for line in lines) + "\n"
        return text

    def _continued(self, lines: list) -> list:
        """Some calls split by a backslash continuation, some statements followed by a string that
        spans lines (where a comment about the line cannot go)."""
        rng = self.rng
        out = []
        for line in lines:
            simple = "(" in line and not line.rstrip().endswith((":", ",", "(", "[")) and \
                not line.lstrip().startswith(("@", "def ", "class ", "#", "return", "import", "from"))
            if simple and ", " in line and rng.random() < 0.04:
                indent = line[:len(line) - len(line.lstrip())]
                head, _, tail = line.partition(", ")
                out += [f"{head}, \\", f"{indent}    {tail}"]
            elif simple and rng.random() < 0.02:
                out.append(f'{line}; _doc = """a string\nspanning lines?"""'.replace("\\n", "\n"))
            else:
                out.append(line)
        return out

    # ---- names and variables
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        name = f"{prefix}{self.counter}"
        self.imports.reserved.add(name)
        return name

    def pick(self, *types: str) -> Optional[Var]:
        found = [v for v in self.vars if v.type in types]
        return self.rng.choice(found) if found else None

    def spell(self, qualified: str) -> str:
        return self.imports.spell(qualified)

    def np(self, attr: str) -> str:
        return self.spell(f"numpy.{attr}")

    def dtype(self, library: str = "numpy") -> str:
        if library == "torch":
            return self.spell("torch." + self.rng.choice(["float32", "float16", "int64", "uint8"]))
        return self.rng.choice([self.np("float32"), self.np("float64"), self.np("int8"), '"float32"', "float"])

    def shape(self) -> str:
        return self.rng.choice(["n", "(n,)", "1 << 20", "(4, 1024)", "1024", "n // 2", "[n]", "(64, 64, 4)"])

    def nbytes(self, host: Optional[Var] = None) -> str:
        options = ["n * 4", "1 << 20", "4096", "n"]
        if host is not None and host.type in ("host", "torch.host"):
            options.append(f"{host.name}.nbytes")
        return self.rng.choice(options)

    def host_expr(self, pointer: bool = False) -> Optional[str]:
        """A host buffer, possibly seen through a view (which keeps its memory kind)."""
        var = self.pick("host", "torch.host", "ptr", "mem")
        if var is None:
            return None
        self.last_host = var
        if var.type in ("ptr", "mem"):
            return var.name
        name = var.name
        rng = self.rng
        if pointer and var.type == "host":
            return rng.choice([f"{name}.ctypes.data", f"{name}.ctypes.data", name])
        if pointer and var.type == "torch.host":
            return f"{name}.data_ptr()"
        views = [name] * 5 + [f"{name}[1:]", f"{name}[::2]", f"{name}.reshape(-1)", f"{name}.T", f"{name}[:n // 2]"]
        if var.type == "host":
            views += [f"{self.np('asarray')}({name})", f"{name}.view()", f"{self.np('ravel')}({name})"]
        else:
            views += [f"{name}.view(-1)", f"{name}.numpy()" if rng.random() < 0.3 else name]
        return rng.choice(views)

    def device_expr(self, library: Optional[str] = None) -> Optional[str]:
        types = [_DEVICE_TYPE[library]] if library in _DEVICE_TYPE and self.rng.random() < 0.8 else \
            list(_DEVICE_TYPE.values())
        var = self.pick(*types)
        return var.name if var else None

    def stream_expr(self) -> Optional[str]:
        var = self.pick("stream")
        return var.name if var else None

    # ---- argument values from the table's argument specs
    def value(self, field_name: str, api: Api) -> Optional[str]:
        rng = self.rng
        pointer = bool(api.opt("pointer")) or api.library == "cuda-python" or "runtime" in api.name
        if field_name in ("host", "out", "arg", "like"):
            if field_name == "out" and rng.random() < 0.5:
                return None
            return self.host_expr(pointer=pointer and field_name != "like")
        if field_name in ("device", "like_device"):
            return self.device_expr(api.library)
        if field_name in ("src", "dst"):
            return None  # chosen together with kind_arg
        if field_name == "stream":
            if rng.random() < 0.2:
                return None
            return rng.choice([self.stream_expr() or "None", self.stream_expr() or "0", "None"])
        if field_name in ("blocking", "non_blocking", "async_flag", "copy"):
            return rng.choice(["True", "False", "True"]) if rng.random() < 0.85 else None
        if field_name == "shape":
            return self.shape()
        if field_name == "dtype":
            return self.dtype(api.library) if rng.random() < 0.7 else None
        if field_name == "nbytes":
            return self.nbytes(self.pick("host"))
        if field_name == "flags":
            flags = self.cat.flags_for(api.name)
            if not flags or rng.random() < 0.25:
                return rng.choice(["0", "2", "4", "6", "1 | 4"]) if rng.random() < 0.6 else None
            chosen = rng.sample(flags, min(len(flags), rng.choice([1, 1, 2])))
            return " | ".join(self.spell(c) for c in chosen)
        if field_name == "target_device":
            return rng.choice(['"cuda"', '"cuda:0"', f'{self.spell("torch.device")}("cuda")', '"cpu"', "dev", '"cuda"'])
        if field_name == "kind_arg":
            kinds = self.cat.memcpy_kinds(api.name)
            return self.spell(rng.choice(kinds)) if kinds else rng.choice(["1", "2"])
        if field_name == "target":
            return self.stream_expr()
        return rng.choice(["n", "None", "0"])

    def call(self, callee: str, api: Api, skip: Iterable[str] = ("target",), extra: Optional[dict] = None) -> str:
        """``callee(args)`` with every argument the entry describes, positionally or by keyword."""
        rng = self.rng
        values: dict = dict(extra or {})
        for field_name, spec in api.args.items():
            if field_name in skip or field_name in values or spec is None or spec.is_self or spec.is_all:
                continue
            value = self.value(field_name, api)
            if value is not None:
                values[field_name] = value
        # Arguments by position up to a random cut, by keyword after it (Python's own rule).
        by_position = {spec.pos: name for name, spec in api.args.items()
                       if spec is not None and spec.pos is not None and not spec.is_self}
        last = max([api.arg(n).pos for n in values if api.arg(n) is not None and api.arg(n).pos is not None],
                   default=-1)
        cut = rng.randint(0, last + 1) if last >= 0 else 0
        if any(api.arg(n) is not None and api.arg(n).kw is None and api.arg(n).pos is not None for n in values):
            cut = last + 1  # an argument without a keyword can only be passed by position
        args: list = []
        for index in range(cut):
            field_name = by_position.get(index)
            if field_name in values:
                args.append(values[field_name])
            elif field_name is None:
                args.append(rng.choice(["n * 4", "n", "0"]))  # a size, an offset: what the table leaves out
            else:
                args.append(self.value(field_name, api) or "None")
        keywords: list = []
        for field_name, value in values.items():
            spec = api.arg(field_name)
            if spec is None or (spec.pos is not None and spec.pos < cut):
                continue
            if spec.kw is not None:
                keywords.append(f"{spec.kw}={value}")
        if not args and not keywords and api.effect == "alloc":
            args = [self.shape()]  # allocators the table describes without a size still take one
        return f"{callee}({', '.join(args + keywords)})"

    # ---- statements
    def host_alloc(self) -> list:
        rng = self.rng
        allocs = [a for a in self.cat.functions.get("alloc", []) if _library(a.name) in self.focus + ["numpy"]]
        if rng.random() < 0.85:
            # Mostly buffers of a size the program chooses: fixed-size scalars (ctypes.c_int) are too
            # small for the size-gated rules, and there are many of them in the tables.
            allocs = [a for a in allocs if not a.opt("size")] or allocs
        numpy_allocs = [a for a in allocs if a.library == "numpy"]
        api = rng.choice(numpy_allocs if (numpy_allocs and rng.random() < 0.45) else allocs or numpy_allocs)
        callee = self.spell(api.name)
        library = _library(api.name)
        extra: dict = {}
        if api.opt("pin_kw") and rng.random() < 0.4:
            extra["pin"] = None
        text = self.call(callee, api, extra={k: v for k, v in extra.items() if v})
        if api.opt("pin_kw") and "pin" in extra:
            text = text[:-1] + (", " if not text.endswith("()") else "") + f"{api.opt('pin_kw')}=True)"
        if api.opt("device_kw") and rng.random() < 0.15:
            text = text[:-1] + (", " if not text.endswith("()") else "") + f'{api.opt("device_kw")}="cuda")'
            name = self.fresh("d")
            self.vars.append(Var(name, "torch.device", "torch"))
            return [f"{name} = {text}"]
        returns = api.opt("returns")
        if returns == "err-tuple":
            name = self.fresh("p")
            self.vars.append(Var(name, "ptr", library))
            return [f"err, {name} = {text}"]
        if api.opt("pointer"):
            name = self.fresh("p")
            self.vars.append(Var(name, "ptr", library))
            return [f"{name} = {text}"]
        if "PinnedMemory" in api.name or "alloc_pinned_memory" in api.name:
            mem = self.fresh("mem")
            name = self.fresh("h")
            self.vars.append(Var(name, "host", library))
            return [f"{mem} = {text}", f"{name} = {self.np('frombuffer')}({mem}, {self.np('float32')}, n)"]
        if "ctypes" in api.name:
            name = self.fresh("buf")
            self.vars.append(Var(name, "mem", library))
            return [f"{name} = {text}"]
        name = self.fresh("h")
        self.vars.append(Var(name, "torch.host" if library == "torch" else "host", library))
        return [f"{name} = {text}"]

    def device_alloc(self) -> list:
        rng = self.rng
        devices = [a for a in self.cat.functions.get("device", []) if _library(a.name) in self.focus]
        if not devices:
            return []
        api = rng.choice(devices)
        library = _library(api.name)
        args = rng.choice(["n", "(n,)", "1 << 20"])
        if library in ("cupy", "numba", "pycuda") and rng.random() < 0.7:
            args += f", dtype={self.np('float32')}"
        if "_like" in api.name:
            args = self.host_expr() or "n"
        text = f"{self.spell(api.name)}({args})"
        if api.opt("returns") == "err-tuple":
            name = self.fresh("dp")
            self.vars.append(Var(name, "cuda.device", library))
            return [f"err, {name} = {text}"]
        name = self.fresh("d")
        self.vars.append(Var(name, _DEVICE_TYPE.get(library, "device"), library))
        if library == "torch":
            return []
        return [f"{name} = {text}"]

    def torch_device(self) -> list:
        host = self.pick("torch.host")
        name = self.fresh("d")
        self.vars.append(Var(name, "torch.device", "torch"))
        if host is not None and self.rng.random() < 0.5:
            return [f"{name} = {host.name}.cuda()"]
        return [f'{name} = {self.spell("torch.empty")}({self.shape()}, device="cuda")']

    def stream(self) -> list:
        rng = self.rng
        streams = [a for a in self.cat.functions.get("stream", []) + self.cat.functions.get("current-stream", [])
                   if _library(a.name) in self.focus]
        if not streams:
            return []
        api = rng.choice(streams)
        kwargs = ""
        if "cupy" in api.name and "Stream" in api.name and "External" not in api.name and rng.random() < 0.7:
            kwargs = "non_blocking=True"
        if "ExternalStream" in api.name:
            kwargs = "0"
        name = self.fresh("s")
        self.vars.append(Var(name, "stream", _library(api.name)))
        if api.opt("returns") == "err-tuple":
            return [f"err, {name} = {self.spell(api.name)}({'0' if 'Flags' in api.name else ''})"]
        return [f"{name} = {self.spell(api.name)}({kwargs})"]

    def copy(self) -> list:
        rng = self.rng
        functions = [a for a in self.cat.functions.get("copy", []) if _library(a.name) in self.focus]
        methods = [m for m in self.cat.methods.get("copy", []) if m[2].library in self.focus + ["numpy", "common"]
                   or m[0] == "any"]
        if methods and (not functions or rng.random() < 0.5):
            receiver_type, method, api = rng.choice(methods)
            if receiver_type == "torch.host" or (receiver_type == "any" and "torch" in self.focus and rng.random() < .3):
                receiver = self.pick("torch.host")
            elif receiver_type in ("host",):
                receiver = self.pick("host")
            elif receiver_type == "any":
                receiver = self.pick(*_DEVICE_TYPE.values(), "host")
            else:
                receiver = self.pick(receiver_type)
            if receiver is None:
                return self.host_alloc() if receiver_type in ("host", "torch.host") else self.device_alloc()
            text = self.call(f"{receiver.name}.{method}", api)
            return self._result(text, api)
        if not functions:
            return []
        api = rng.choice(functions)
        extra: dict = {}
        if api.arg("kind_arg") is not None:
            d2h = rng.random() < 0.5
            host = self.host_expr(pointer=True) or "0"
            device = self.device_expr(api.library) or "0"
            if d2h:
                extra.update(dst=host, src=device)
            else:
                extra.update(dst=device, src=host)
            kinds = self.cat.memcpy_kinds(api.name)
            wanted = [k for k in kinds if ("DeviceToHost" if d2h else "HostToDevice") in k]
            if wanted and rng.random() < 0.9:
                extra["kind_arg"] = self.spell(rng.choice(wanted))
        text = self.call(self.spell(api.name), api, extra=extra)
        return self._result(text, api)

    def _result(self, text: str, api: Api) -> list:
        returns = api.opt("returns")
        if returns in ("device", "host-dest") and self.rng.random() < 0.8:
            name = self.fresh("r")
            if returns == "device":
                self.vars.append(Var(name, _DEVICE_TYPE.get(api.library, "device"), api.library))
            else:
                self.vars.append(Var(name, "torch.host" if api.library == "torch" else "host", api.library))
            return [f"{name} = {text}"]
        return [text]

    def copy_then_access(self) -> list:
        """A copy, then at once a CPU read or write of its host buffer (races when the copy is async),
        sometimes with a synchronization in between."""
        self.last_host = None
        lines = self.copy()
        host = self.last_host
        if not lines or host is None or host.type not in ("host", "torch.host"):
            return lines
        if self.rng.random() < 0.3:
            lines += self.sync()
        saved = self.vars
        self.vars = [host]
        lines += self.cpu_read() if self.rng.random() < 0.5 else self.cpu_write()
        self.vars = saved
        return lines

    def sync(self) -> list:
        rng = self.rng
        functions = [a for a in self.cat.functions.get("sync", []) if _library(a.name) in self.focus]
        stream = self.pick("stream")
        if stream is not None and rng.random() < 0.5:
            return [f"{stream.name}.{rng.choice(['synchronize', 'synchronize', 'sync' if stream.library == 'pycuda' else 'synchronize'])}()"]
        if not functions:
            return []
        api = rng.choice(functions)
        target = api.arg("target")
        if target is not None and not target.is_self:
            return [f"{self.spell(api.name)}({self.stream_expr() or '0'})"]
        return [f"{self.spell(api.name)}()"]

    def register(self) -> list:
        rng = self.rng
        registers = [a for a in self.cat.functions.get("register", []) if _library(a.name) in self.focus]
        if not registers:
            return []
        api = rng.choice(registers)
        if api.opt("context"):
            hosts = [v.name for v in self.vars if v.type == "host"]
            if not hosts:
                return []
            return [f"with {self.spell(api.name)}({', '.join(rng.sample(hosts, min(len(hosts), 2)))}):",
                    *("    " + line for line in self.simple_statement(in_loop=False))]
        host = self.pick("host")
        if host is None:
            return []
        if api.library == "pycuda":
            name = self.fresh("h")
            self.vars.append(Var(name, "host", "pycuda"))
            return [f"{name} = {self.spell(api.name)}({host.name})"]
        flags = self.value("flags", api) or "0"
        return [f"{self.spell(api.name)}({host.name}.ctypes.data, {host.name}.nbytes, {flags})"]

    def cpu_read(self) -> list:
        rng = self.rng
        var = self.pick("host", "torch.host", "mem")
        if var is None:
            return []
        h = var.name
        return [rng.choice([f"print({h}[0])", f"total = {h}.sum()", f"x = {h}[1]", f"for v in {h}[:4]:\n    pass",
                            f"m = {self.np('mean')}({h})", f"y = {h} + 1", f"total = float({h}.max())",
                            f"print({h})", f"acc = 0\nacc += {h}[0]", f"z = {h}.tolist()"])]

    def cpu_write(self) -> list:
        rng = self.rng
        var = self.pick("host", "torch.host")
        if var is None:
            return []
        h = var.name
        options = [f"{h}[:] = 1", f"{h}[0] = 2", f"{h}.fill(0)", f"{h} += 1", f"{self.np('copyto')}({h}, 0)"]
        if var.type == "torch.host":
            options = [f"{h}[:] = 1", f"{h}.fill_(0)", f"{h}.zero_()", f"{h}.add_(1)", f"{h}.copy_({h})"]
        return [rng.choice(options)]

    def view(self) -> list:
        rng = self.rng
        var = self.pick("host", "torch.host")
        if var is None:
            return []
        name = self.fresh("v")
        self.vars.append(Var(name, var.type, var.library))
        options = [f"{var.name}[1:]", f"{var.name}.reshape(-1)", f"{var.name}.T", f"{var.name}[::2]"]
        if var.type == "host":
            options += [f"{self.np('asarray')}({var.name})", f"{self.np('ascontiguousarray')}({var.name})",
                        f"{var.name}.copy()", f"{var.name}.astype({self.np('float64')})", f"{var.name} * 2"]
            if "torch" in self.focus:
                self.vars[-1].type = "torch.host" if rng.random() < 0.5 else "host"
                if self.vars[-1].type == "torch.host":
                    return [f"{name} = {self.spell('torch.from_numpy')}({var.name})"]
        else:
            options += [f"{var.name}.numpy()", f"{var.name}.float()", f"{var.name}.contiguous()"]
        return [f"{name} = {rng.choice(options)}"]

    def kernel(self) -> list:
        """A kernel reading host memory (mapped memory re-read by kernels is PIN004)."""
        rng = self.rng
        var = self.pick("host", "ptr")
        if var is None:
            return []
        if "numba" in self.focus and rng.random() < 0.5:
            name = self.fresh("kern")
            decorator = self.spell("numba.cuda.jit")
            grid = self.spell("numba.cuda.grid")
            self.helpers += [f"@{decorator}", f"def {name}(a):", f"    i = {grid}(1)", "    a[i] += 1", ""]
            return [f"{name}[1, 32]({var.name})"]
        if "cupy" in self.focus:
            name = self.fresh("kern")
            self.helpers.append(f'{name} = {self.spell("cupy.RawKernel")}(r"extern \\"C\\" __global__ void f(float* a) {{}}", "f")')
            return [f"{name}((1,), (32,), ({var.name},))"]
        if "pycuda" in self.focus:
            module = self.fresh("mod")
            name = self.fresh("kern")
            self.helpers += [f'{module} = {self.spell("pycuda.compiler.SourceModule")}("__global__ void f(float* a) {{}}")',
                             f'{name} = {module}.get_function("f")']
            return [f"{name}({var.name}, block=(32, 1, 1), grid=(1, 1))"]
        return []

    def loader(self) -> list:
        if "torch" not in self.focus:
            return []
        call = f"{self.spell('torch.utils.data.DataLoader')}(ds, batch_size=4{', pin_memory=True' if self.rng.random() < .3 else ''})"
        return [f"loader = {call}", "for batch in loader:", f"    batch = batch.cuda(non_blocking={self.rng.choice(['True', 'False'])})"]

    def free(self) -> list:
        var = self.pick("ptr")
        frees = [a for a in self.cat.functions.get("free", []) if _library(a.name) == var.library] if var else []
        if not frees:
            return []
        return [f"{self.spell(self.rng.choice(frees).name)}({var.name})"]

    def simple_statement(self, in_loop: bool) -> list:
        rng = self.rng
        makers = [(self.host_alloc, 5), (self.copy, 6), (self.copy_then_access, 4), (self.sync, 3), (self.cpu_read, 4), (self.cpu_write, 3),
                  (self.view, 3), (self.stream, 2), (self.device_alloc, 2), (self.register, 1), (self.kernel, 1),
                  (self.free, 1), (self.loader, 0.4)]
        if "torch" in self.focus:
            makers.append((self.torch_device, 1))
        while True:
            maker = rng.choices([m for m, _ in makers], weights=[w for _, w in makers])[0]
            lines = maker()
            if lines:
                out = []
                for line in lines:
                    out.extend(line.split("\n"))
                if in_loop and rng.random() < 0.03:
                    out.append(rng.choice(["continue", "break"]))
                return out

    def block(self, depth: int, count: int, in_loop: bool, in_def: bool) -> list:
        rng = self.rng
        lines: list = []
        for _ in range(count):
            if depth < self.max_depth and rng.random() < 0.3:
                lines += self.compound(depth, in_loop, in_def)
            else:
                lines += self.simple_statement(in_loop)
            if rng.random() < 0.05:
                lines.append("")
        return lines or ["pass"]

    def compound(self, depth: int, in_loop: bool, in_def: bool) -> list:
        rng = self.rng
        kind = rng.choice(["for", "for", "while", "if", "if-else", "with", "try", "def", "class", "for-else"])
        inner = rng.randint(1, 4)

        def indented(lines: list) -> list:
            return ["    " + line if line else line for line in lines]

        if kind in ("for", "for-else"):
            target = rng.choice(["i", "j", "_", "k"])
            iterable = rng.choice(["range(10)", "range(n // 1024)", "range(3)", "[1, 2, 3]"])
            out = [f"for {target} in {iterable}:", *indented(self.block(depth + 1, inner, True, in_def))]
            if kind == "for-else":
                out += ["else:", *indented(self.block(depth + 1, 1, in_loop, in_def))]
            return out
        if kind == "while":
            counter = self.fresh("c")
            return [f"{counter} = 0", f"while {counter} < 3:",
                    *indented(self.block(depth + 1, inner, True, in_def) + [f"{counter} += 1"])]
        if kind in ("if", "if-else"):
            out = [f"if {rng.choice(['flag', 'n > 10', 'not flag', 'n % 2 == 0'])}:",
                   *indented(self.block(depth + 1, inner, in_loop, in_def))]
            if kind == "if-else":
                out += ["else:", *indented(self.block(depth + 1, rng.randint(1, 3), in_loop, in_def))]
            return out
        if kind == "with":
            contexts = [a for a in self.cat.functions.get("stream-context", []) if _library(a.name) in self.focus]
            stream = self.pick("stream")
            if stream is not None and contexts and rng.random() < 0.5:
                header = f"with {self.spell(contexts[0].name)}({stream.name}):"
            elif stream is not None and stream.library == "cupy":
                header = f"with {stream.name}:"
            else:
                header = "with open('/dev/null') as fh:"
            return [header, *indented(self.block(depth + 1, inner, in_loop, in_def))]
        if kind == "try":
            out = ["try:", *indented(self.block(depth + 1, inner, in_loop, in_def)),
                   "except Exception as exc:", *indented(self.block(depth + 1, 1, in_loop, in_def))]
            if rng.random() < 0.4:
                out += ["finally:", *indented(self.sync() or ["pass"])]
            return out
        if kind == "def":
            name = self.fresh("step")
            params = rng.choice(["", "x=None", "*args, **kwargs"])
            body = self.block(depth + 1, inner, False, True)
            if rng.random() < 0.3:
                body.append("return " + (self.pick("host", "torch.host") or Var("None", "")).name)
            return [f"def {name}({params}):", *indented(body), f"{name}()"]
        # A class whose __init__ keeps buffers on self and whose method copies them.
        name = self.fresh("Worker")
        saved = list(self.vars)
        init = self.host_alloc() + self.device_alloc() + (self.stream() if rng.random() < 0.6 else [])
        fields = self.vars[len(saved):]
        renamed = []
        for line in init:
            for v in fields:
                line = re.sub(rf"(?<![\w.]){v.name}\b", f"self.{v.name}", line)
            renamed.append(line)
        for v in fields:
            v.name = f"self.{v.name}"
        method = self.block(depth + 1, inner, False, True)
        self.vars = saved  # self.x is only meaningful inside the class
        instance = self.fresh("w")
        return [f"class {name}:", "    def __init__(self):", *indented(indented(renamed or ["pass"])),
                "", "    def step(self):", *indented(indented(method)), f"{instance} = {name}()", f"{instance}.step()"]


# --------------------------------------------------------------------------- mutating existing programs
def seed_corpus() -> list:
    """(name, text) of the valid programs the mutation fuzzer starts from: fixtures, fix cases, rule examples."""
    from pinlint.checks import ALL_RULES
    corpus = []
    for path in sorted((REPO / "fixtures").glob("PIN*/*.py")) + sorted((REPO / "tests" / "fix_cases").glob("*.py")):
        corpus.append((path.name, path.read_text(encoding="utf-8")))
    for rule in ALL_RULES:
        for index, text in enumerate(rule.INVALID + rule.VALID):
            corpus.append((f"{rule.code}-example-{index}", text))
    return corpus


class _Blocks(cst.CSTVisitor):
    def __init__(self) -> None:
        self.blocks: list = []

    def visit_Module(self, node: cst.Module) -> None:
        self.blocks.append(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.blocks.append(node)


class _ReplaceBody(cst.CSTTransformer):
    def __init__(self, target, body: list) -> None:
        self.target = target
        self.body = body

    def on_leave(self, original, updated):
        if original is self.target:
            return updated.with_changes(body=self.body)
        return updated


class _Rename(cst.CSTTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def leave_Name(self, original, updated):
        return updated.with_changes(value=self.new) if updated.value == self.old else updated


class _Toggle(cst.CSTTransformer):
    """Flip True/False of copy keywords, or drop a stream= argument."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def leave_Arg(self, original, updated):
        keyword = updated.keyword.value if updated.keyword else None
        if keyword in ("non_blocking", "blocking", "async_", "pin_memory") and isinstance(updated.value, cst.Name) \
                and self.rng.random() < 0.5:
            flipped = "False" if updated.value.value == "True" else "True"
            return updated.with_changes(value=cst.Name(flipped))
        return updated


def _statements(code: str) -> list:
    return list(cst.parse_module(code).body)


def _fragment(rng: random.Random, generator: ProgramGenerator) -> tuple:
    """(import lines, statement code) of a small generated fragment, to splice into another program:
    a buffer or two, then copies, syncs, reads, writes, streams and views of them."""
    generator.program()  # a fresh program: its first buffers and imports are the fragment's context
    prologue = generator.host_alloc()
    makers = [generator.copy, generator.copy_then_access, generator.sync, generator.host_alloc, generator.cpu_read,
              generator.cpu_write, generator.stream, generator.view]
    lines: list = list(prologue)
    for _ in range(rng.randint(1, 3)):
        lines += rng.choice(makers)()
    return generator.imports.render(), "\n".join(lines) + "\n"


_WRAPPERS = [
    "for _fz in range(4):\n    pass\n",
    "while flag_fz:\n    pass\n",
    "if flag_fz:\n    pass\n",
    "if flag_fz:\n    pass\nelse:\n    pass\n",
    "try:\n    pass\nexcept Exception:\n    pass\n",
    "try:\n    pass\nfinally:\n    pass\n",
    "with ctx_fz:\n    pass\n",
    "def fn_fz():\n    pass\n",
    "class Cls_fz:\n    pass\n",
    "async def afn_fz():\n    pass\n",
]


def mutate(rng: random.Random, text: str, generator: Optional[ProgramGenerator] = None, rounds: int = 3) -> str:
    """Splice API calls, syncs, loops, branches and alias changes into ``text`` (valid Python in, valid
    Python out: a mutation whose result does not compile is dropped)."""
    generator = generator or ProgramGenerator(rng)
    module = cst.parse_module(text)
    for _ in range(rounds):
        for _attempt in range(5):
            candidate = _mutate_once(rng, module, generator)
            if candidate is None:
                continue
            if not _compiles(candidate.code):
                continue
            module = candidate
            break
    return module.code


def _mutate_once(rng: random.Random, module: cst.Module, generator: ProgramGenerator) -> Optional[cst.Module]:
    visitor = _Blocks()
    module.visit(visitor)
    block = rng.choice(visitor.blocks)
    body = list(block.body)
    op = rng.choice(["splice", "splice", "splice", "wrap", "wrap", "sync", "rename", "delete", "duplicate",
                     "toggle", "move"])
    if op in ("splice", "sync"):
        if op == "sync":
            generator.program()
            code = "\n".join(generator.sync() or ["pass"]) + "\n"
            imports = generator.imports.render()
        else:
            imports, code = _fragment(rng, generator)
        try:
            new = _statements(code)
        except cst.ParserSyntaxError:
            return None
        at = rng.randint(0, len(body))
        body[at:at] = new
        module = module.visit(_ReplaceBody(block, body)) if block is not module else module.with_changes(body=body)
        if imports:
            module = module.with_changes(body=[*_statements("\n".join(imports) + "\n"), *module.body])
        return module
    if op == "wrap" and body:
        start = rng.randrange(len(body))
        end = rng.randint(start + 1, min(len(body), start + 4))
        template = cst.parse_module(rng.choice(_WRAPPERS))
        wrapper = template.body[0]
        wrapped = body[start:end]
        inner = wrapper.body.with_changes(body=[s.with_changes(leading_lines=()) if hasattr(s, "leading_lines") else s
                                                for s in wrapped])
        wrapper = wrapper.with_changes(body=inner)
        extra = list(template.body[1:])
        if isinstance(wrapper, cst.FunctionDef) and not wrapper.asynchronous:
            extra = _statements("fn_fz()\n")
        body[start:end] = [wrapper, *extra]
        if block is module:
            return module.with_changes(body=body)
        return module.visit(_ReplaceBody(block, body))
    if op == "rename":
        aliases = [(a.asname.name.value, a) for statement in module.body if isinstance(statement, cst.SimpleStatementLine)
                   for small in statement.body if isinstance(small, (cst.Import, cst.ImportFrom))
                   and not isinstance(small.names, cst.ImportStar)
                   for a in small.names if a.asname is not None and isinstance(a.asname.name, cst.Name)]
        if not aliases:
            return None
        old, _ = rng.choice(aliases)
        new = rng.choice(["alias_fz", "X", "lib", "m", old + "2"])
        if re.search(rf"\b{re.escape(new)}\b", module.code):
            return None
        return module.visit(_Rename(old, new))
    if op == "delete" and body:
        del body[rng.randrange(len(body))]
        if not body and block is not module:
            body = _statements("pass\n")
        return module.visit(_ReplaceBody(block, body)) if block is not module else module.with_changes(body=body)
    if op == "duplicate" and body:
        index = rng.randrange(len(body))
        body.insert(index, body[index])
        return module.visit(_ReplaceBody(block, body)) if block is not module else module.with_changes(body=body)
    if op == "move" and len(body) > 1:
        index = rng.randrange(len(body))
        statement = body.pop(index)
        body.insert(rng.randrange(len(body) + 1), statement)
        return module.visit(_ReplaceBody(block, body)) if block is not module else module.with_changes(body=body)
    if op == "toggle":
        return module.visit(_Toggle(rng))
    return None


# --------------------------------------------------------------------------- properties
CRASH, INTERNAL, SPURIOUS_PIN000, UNCHECKED, UNPARSABLE, NON_CONVERGING, NON_LOCAL, SLOW = (
    "crash", "internal-error", "spurious-PIN000", "unchecked", "unparsable-fix", "non-converging-fix",
    "non-local-edit", "slow")
# A fix uses a name nothing binds where it is used; a fix adds an import that runs when the module
# loads (a library it did not import then, or one it imported only under a guard); `--add-noqa`
# writes a comment that breaks the file, changes a string or does not suppress the finding.
UNBOUND, NEW_IMPORT, BROKEN_NOQA = "unbound-name", "new-load-time-import", "broken-noqa"


@dataclass
class Problem:
    kind: str
    detail: str


@dataclass
class Checked:
    findings: int = 0
    fixable: int = 0
    fixed_lines: int = 0                         # lines changed by the unsafe fix
    codes: set = field(default_factory=set)
    problems: list = field(default_factory=list)
    seconds: float = 0.0


def _compiles(text: str) -> bool:
    """Python would run this text as a file: compiled after universal-newline translation, as the
    interpreter reads files (``compile()`` of a str alone accepts a few things a file may not, such as
    a backslash continuation followed by CR LF at the very end)."""
    import warnings

    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings of odd but valid programs
        try:
            compile(normalized, "program.py", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def _statement_rows(text: str) -> list:
    """(first, last) rows of every simple statement and compound statement header, from ``ast``."""
    spans = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.stmt):
            end = node.end_lineno or node.lineno
            body = getattr(node, "body", None)
            if isinstance(body, list) and body:  # a compound statement: its header only
                end = max(node.lineno, body[0].lineno - 1)
            spans.append((node.lineno, end))
    return spans


def _import_rows(text: str) -> set:
    rows: set = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            rows |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return rows


def allowed_rows(text: str, findings: list) -> set:
    """Rows a fix of these findings may rewrite: the findings' own rows and their allocation sites,
    widened to whole statements, and the imports."""
    rows: set = set(_import_rows(text))
    for finding in findings:
        rows |= set(range(finding.location.row, finding.end_location.row + 1))
        for related in finding.related:
            rows |= set(range(related.location.row, related.end_location.row + 1))
    for first, last in _statement_rows(text):
        if rows & set(range(first, last + 1)):
            rows |= set(range(first, last + 1))
    # Blank and comment lines right above a rewritten statement belong to it (libcst's leading_lines):
    # a hoisted statement takes them along.
    lines = [line.rstrip("\r\n") for line in source_lines(text)]
    for row in sorted(rows):
        above = row - 1
        while above >= 1 and above not in rows and (not lines[above - 1].strip() or lines[above - 1].lstrip().startswith("#")):
            rows.add(above)
            above -= 1
    return rows


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str) -> list:
    """Lines as Python counts them (CR LF, CR or LF; not str.splitlines' form feeds or U+2028), with ends."""
    return _LINE.findall(text)


def changed_rows(old: str, new: str) -> set:
    """Rows of ``old`` that are replaced or deleted in ``new`` (insertions change no old row); a line
    whose ending changed counts as changed."""
    old_lines = source_lines(old)
    matcher = difflib.SequenceMatcher(a=old_lines, b=source_lines(new), autojunk=False)
    rows: set = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            rows |= set(range(i1 + 1, i2 + 1))
    return rows


LINT_SETTINGS = Settings()
FIX_SETTINGS = Settings(render_fixes=False) if "render_fixes" in Settings.__dataclass_fields__ else Settings()


def check_program(text: str, name: str = "fuzz.py", modes: tuple = (True, False), slow_seconds: float = 60.0,
                  locality: bool = True) -> Checked:
    """Run every property on one program; never raises (an exception of pinlint is a ``crash``)."""
    checked = Checked()
    started = time.perf_counter()
    compiles = _compiles(text)

    def crash(where: str) -> None:
        checked.problems.append(Problem(CRASH, f"{where}: {traceback.format_exc(limit=-3).strip()}"))

    try:
        result = lint_text(text, name, LINT_SETTINGS)
    except Exception:  # noqa: BLE001 - that is the finding
        crash("lint_text")
        return checked
    if getattr(result, "error", None):
        checked.problems.append(Problem(INTERNAL, result.error))
    checked.findings = len(result.findings)
    checked.codes = {f.code for f in result.findings}
    checked.fixable = sum(1 for f in result.findings if f.fix is not None)
    if compiles and getattr(result, "warning", None):
        checked.problems.append(Problem(UNCHECKED, f"a program Python compiles was skipped: {result.warning}"))
    if compiles and "PIN000" in checked.codes:
        message = next(f.message for f in result.findings if f.code == "PIN000")
        checked.problems.append(Problem(SPURIOUS_PIN000, f"a program Python compiles is reported PIN000: {message}"))
    for unsafe in modes:
        label = "unsafe" if unsafe else "safe"
        try:
            once = fix_text(text, name, FIX_SETTINGS, unsafe=unsafe)
        except Exception:  # noqa: BLE001
            crash(f"fix_text ({label})")
            continue
        if once.error:
            kind = UNPARSABLE if "invalid code" in once.error else INTERNAL
            checked.problems.append(Problem(kind, f"{label}: {once.error}"))
        if once.text == text:
            continue
        try:
            cst.parse_module(once.text)
        except Exception as exc:  # noqa: BLE001
            checked.problems.append(Problem(UNPARSABLE, f"{label}: libcst cannot parse the fixed text: {exc}"))
            continue
        if compiles and not _compiles(once.text):
            checked.problems.append(Problem(UNPARSABLE, f"{label}: the fixed text does not compile:\n{once.text}"))
            continue
        try:
            twice = fix_text(once.text, name, FIX_SETTINGS, unsafe=unsafe)
        except Exception:  # noqa: BLE001
            crash(f"fix_text of the fixed text ({label})")
            continue
        if twice.text != once.text:
            checked.problems.append(Problem(NON_CONVERGING, f"{label}: fixing the fixed text changes it again:\n"
                                            + "".join(difflib.unified_diff(once.text.splitlines(True),
                                                                           twice.text.splitlines(True), "once", "twice"))))
        _check_bindings(checked, label, text, once.text)
        if unsafe:
            checked.fixed_lines = len(changed_rows(text, once.text)) or 1
        if locality and compiles:
            lines = [line.rstrip("\r\n") for line in source_lines(text)]
            # Blank lines may move with the statement they precede (libcst's leading_lines): not code.
            outside = {row for row in changed_rows(text, once.text) - allowed_rows(text, result.findings)
                       if lines[row - 1].strip()}
            if outside:
                checked.problems.append(Problem(NON_LOCAL, f"{label}: rows {sorted(outside)} changed, which no finding "
                                                "points at:\n" + "".join(difflib.unified_diff(
                                                    [repr(l)[1:-1] + "\n" for l in source_lines(text)],
                                                    [repr(l)[1:-1] + "\n" for l in source_lines(once.text)],
                                                    "old", "new"))))
    if compiles and any(f.code != "PIN000" for f in result.findings):
        _check_noqa(checked, text, name, result.findings)
    checked.seconds = time.perf_counter() - started
    if checked.seconds > slow_seconds:
        checked.problems.append(Problem(SLOW, f"{checked.seconds:.1f} s for {len(text)} characters"))
    return checked


def _python_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check_bindings(checked: Checked, label: str, old: str, new: str) -> None:
    """symtable and ast on both texts: no name newly unbound, no new load-time import."""
    old, new = _python_newlines(old), _python_newlines(new)
    unbound = safety_props.new_unbound_names(old, new)
    if unbound:
        checked.problems.append(Problem(UNBOUND, f"{label}: " + ", ".join(
            f"`{name}` in {'.'.join(path) or 'the module'}" for path, name in sorted(unbound)) + f":\n{new}"))
    imports = safety_props.new_load_time_imports(old, new)
    if imports:
        checked.problems.append(Problem(NEW_IMPORT, f"{label}: " + ", ".join(
            f"{library} under {' > '.join(guards) or 'nothing'}" for library, guards in sorted(imports)) + f":\n{new}"))


def _check_noqa(checked: Checked, text: str, name: str, findings: list) -> None:
    from pinlint.runner import add_noqa_text
    try:
        new, _ = add_noqa_text(text, findings)
        if not _compiles(new):
            checked.problems.append(Problem(BROKEN_NOQA, f"the commented text does not compile:\n{new}"))
            return
        if safety_props.string_values(_python_newlines(new)) != safety_props.string_values(_python_newlines(text)):
            checked.problems.append(Problem(BROKEN_NOQA, f"a comment changed a string's value:\n{new}"))
        left = [f for f in lint_text(new, name, LINT_SETTINGS).findings if f.code != "PIN000"]
        if left:
            checked.problems.append(Problem(BROKEN_NOQA, "not suppressed by the added comments: " + ", ".join(
                f"{f.code} at {f.location.row}" for f in left) + f":\n{new}"))
    except Exception:  # noqa: BLE001 - that is the finding
        checked.problems.append(Problem(CRASH, f"add_noqa: {traceback.format_exc(limit=-3).strip()}"))


# --------------------------------------------------------------------------- program streams
# Line endings of the programs, and how often each is drawn.
NEWLINES = (("\n", 0.8), ("\r\n", 0.15), ("\r", 0.05))


def with_newlines(text: str, key: str, newlines: tuple = NEWLINES) -> str:
    """``text`` with its line endings drawn from ``newlines`` (chosen by ``key`` alone, so the program
    itself is the same whatever the endings)."""
    choice = random.Random(f"{key}:newline").choices([n for n, _ in newlines], weights=[w for _, w in newlines])[0]
    return text if choice == "\n" or "\r" in text else text.replace("\n", choice)


def generated(seed: int, count: int, newlines: tuple = NEWLINES) -> Iterable:
    """(name, text) of ``count`` generated programs; program i depends only on (seed, i)."""
    for index in range(count):
        yield generated_one(seed, index, newlines)


def mutants(seed: int, count: int, newlines: tuple = NEWLINES) -> Iterable:
    corpus = seed_corpus()
    for index in range(count):
        yield mutant_one(seed, index, corpus, newlines)


def generated_one(seed: int, index: int, newlines: tuple = NEWLINES) -> tuple:
    rng = random.Random(f"{seed}:generate:{index}")
    return f"gen-{seed}-{index}.py", with_newlines(ProgramGenerator(rng).program(), f"{seed}:{index}", newlines)


def mutant_one(seed: int, index: int, corpus: Optional[list] = None, newlines: tuple = NEWLINES) -> tuple:
    corpus = corpus or seed_corpus()
    rng = random.Random(f"{seed}:mutate:{index}")
    name, text = corpus[rng.randrange(len(corpus))]
    mutant = mutate(rng, text, ProgramGenerator(rng), rounds=rng.randint(1, 4))
    return f"mut-{seed}-{index}-{name}", with_newlines(mutant, f"{seed}:{index}:m", newlines)


def program_at(kind: str, seed: int, index: int, newlines: tuple = NEWLINES) -> tuple:
    """One program of a stream, to reproduce a failure: ``program_at("generate", 1, 17)``."""
    return generated_one(seed, index, newlines) if kind == "generate" else mutant_one(seed, index, None, newlines)
