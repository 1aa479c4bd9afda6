"""Configuration: ``[tool.pinlint]`` in pyproject.toml, or a ``pinlint.toml``, found from the checked
path upwards (or named with ``--config``). Every key is checked: an unknown key, a wrong type or an
unknown rule code is an error naming the file, the key and a hint (exit 2)."""

from __future__ import annotations

import difflib
import fnmatch
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .codes import all_codes
from .settings import (ALWAYS, PIN001_MIN_BYTES, PIN007_MIN_BYTES, PIN008_MIN_BYTES, PIN009_MAX_SHARE, SettingsError,
                       resolve_selection)

ALL_CODES = all_codes()  # the rules' codes, without importing the rules (libcst, the analysis)

CONFIG_FILES = ("pinlint.toml", "pyproject.toml")


@dataclass(frozen=True)
class Config:
    path: Optional[Path] = None                # the file the settings came from (None: defaults)
    select: Optional[tuple] = None             # None: not configured (every rule); () selects none
    ignore: tuple = ()
    extend_select: tuple = ()
    per_file_ignores: tuple = ()               # ((glob, (codes...)), ...)
    exclude: Optional[tuple] = None            # None: the built-in excludes; [] excludes nothing
    extend_exclude: tuple = ()
    respect_gitignore: bool = True
    pin001_min_bytes: int = PIN001_MIN_BYTES
    pin007_min_bytes: int = PIN007_MIN_BYTES
    pin008_min_bytes: int = PIN008_MIN_BYTES
    pin009_max_share: float = PIN009_MAX_SHARE    # `pinlint trace` only

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def ignored_codes(self, filename: str) -> set:
        """Codes ``per-file-ignores`` turns off for a file (globs relative to the config's folder)."""
        if not self.per_file_ignores:
            return set()
        try:
            relative = PurePosixPath(Path(filename).resolve().relative_to(self.root.resolve()).as_posix())
        except ValueError:
            relative = PurePosixPath(Path(filename).as_posix())
        codes: set = set()
        for pattern, ignored in self.per_file_ignores:
            if relative.match(pattern) or fnmatch.fnmatch(relative.as_posix(), pattern) or \
                    fnmatch.fnmatch(relative.name, pattern):
                codes.update(ignored)
        return codes


# key -> (type description, validator)
def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _byte_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _share(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1


_KEYS = {
    "select": ("a list of rule codes", _strings),
    "ignore": ("a list of rule codes", _strings),
    "extend-select": ("a list of rule codes", _strings),
    "per-file-ignores": ("a table of glob = [codes]", lambda v: isinstance(v, dict) and all(_strings(x) for x in v.values())),
    "exclude": ("a list of globs", _strings),
    "extend-exclude": ("a list of globs", _strings),
    "respect-gitignore": ("true or false", lambda v: isinstance(v, bool)),
    "pin001-min-bytes": ("a non-negative integer", _byte_count),
    "pin007-min-bytes": ("a non-negative integer", _byte_count),
    "pin008-min-bytes": ("a non-negative integer", _byte_count),
    "pin009-max-share": ("a number above 0 and at most 1 (a share of physical memory)", _share),
}


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read the configuration ({exc})")
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML ({exc})")


def _pinlint_table(path: Path, data: Optional[dict] = None) -> Optional[dict]:
    """pinlint's settings in ``path`` (read unless ``data`` holds it): ``[tool.pinlint]``, or in a
    pinlint.toml the top-level keys (other tools' ``[tool.X]`` tables are theirs); None for a
    pyproject.toml without the table. A value of the wrong shape is an error naming the file and the key."""
    data = _read(path) if data is None else data
    tool = data.get("tool")
    if tool is not None and not isinstance(tool, dict):
        raise SettingsError(f"{path}: `tool` must be a table, not {tool!r}")
    table = (tool or {}).get("pinlint")
    if table is not None and not isinstance(table, dict):
        raise SettingsError(f"{path}: `tool.pinlint` must be a table, not {table!r}")
    if path.name == "pyproject.toml":
        return table
    outside = sorted(key for key in data if key != "tool")
    if table is None:
        return {key: data[key] for key in outside}
    if outside:
        raise SettingsError(f"{path}: {', '.join(f'`{key}`' for key in outside)} outside [tool.pinlint] "
                            f"{'is' if len(outside) == 1 else 'are'} not read; move {'it' if len(outside) == 1 else 'them'} "
                            "into that table")
    return table


def find_config(start: Path) -> Optional[Path]:
    """The nearest pinlint.toml, or pyproject.toml with a [tool.pinlint] table, from ``start`` up.
    A pyproject.toml whose ``tool`` is no table is not taken for pinlint's: the search goes on, and
    its error is raised only when no configuration is found above it."""
    try:
        directory = start.resolve()
        if directory.is_file() or not directory.exists():
            directory = directory.parent
    except (OSError, RuntimeError):  # a symlink loop, a folder we may not read
        directory = Path.cwd()
    odd: Optional[SettingsError] = None
    for folder in (directory, *directory.parents):
        for name in CONFIG_FILES:
            candidate = folder / name
            if not candidate.is_file():
                continue
            if name == "pinlint.toml":
                return candidate
            data = _read(candidate)
            tool = data.get("tool", {})
            if not isinstance(tool, dict):
                odd = odd or SettingsError(f"{candidate}: `tool` must be a table, not {tool!r}")
                continue
            if _pinlint_table(candidate, data) is not None:
                return candidate
    if odd is not None:
        raise odd
    return None


def _check_codes(path: Path, key: str, codes) -> None:
    for code in codes:
        upper = code.strip().upper()
        if upper == "ALL" or any(c.startswith(upper) for c in ALL_CODES):
            continue
        hint = difflib.get_close_matches(upper, ALL_CODES, n=1)
        raise SettingsError(f"{path}: `{key}` names an unknown rule {code!r}"
                            + (f" (did you mean {hint[0]}?)" if hint else f"; known: {', '.join(ALL_CODES)}"))


def load_config(path: Optional[Path]) -> Config:
    if path is None:
        return Config()
    table = _pinlint_table(path)
    if table is None:
        raise SettingsError(f"{path}: no [tool.pinlint] table")
    values: dict = {}
    for key, value in table.items():
        if key not in _KEYS:
            hint = difflib.get_close_matches(key, _KEYS, n=1)
            raise SettingsError(f"{path}: unknown key `{key}`" + (f" (did you mean `{hint[0]}`?)" if hint else
                                f"; known keys: {', '.join(_KEYS)}"))
        description, valid = _KEYS[key]
        if not valid(value):
            raise SettingsError(f"{path}: `{key}` must be {description}, not {value!r}")
        values[key] = value
    for key in ("select", "ignore", "extend-select"):
        _check_codes(path, key, values.get(key, ()))
    for pattern, codes in values.get("per-file-ignores", {}).items():
        _check_codes(path, f"per-file-ignores.{pattern}", codes)
    return Config(
        path=path,
        select=tuple(values["select"]) if "select" in values else None,
        ignore=tuple(values.get("ignore", ())),
        extend_select=tuple(values.get("extend-select", ())),
        per_file_ignores=tuple((p, tuple(sorted(resolve_selection(codes) - ALWAYS)))
                               for p, codes in values.get("per-file-ignores", {}).items()),
        exclude=tuple(values["exclude"]) if "exclude" in values else None,
        extend_exclude=tuple(values.get("extend-exclude", ())),
        respect_gitignore=values.get("respect-gitignore", True),
        pin001_min_bytes=values.get("pin001-min-bytes", PIN001_MIN_BYTES),
        pin007_min_bytes=values.get("pin007-min-bytes", PIN007_MIN_BYTES),
        pin008_min_bytes=values.get("pin008-min-bytes", PIN008_MIN_BYTES),
        pin009_max_share=float(values.get("pin009-max-share", PIN009_MAX_SHARE)),
    )


# ---------------------------------------------------------------------------- --config KEY=VALUE
_FIELDS = {  # key -> (Config field, conversion)
    "select": ("select", tuple),
    "ignore": ("ignore", tuple),
    "extend-select": ("extend_select", tuple),
    "per-file-ignores": ("per_file_ignores",
                         lambda v: tuple((p, tuple(sorted(resolve_selection(c)))) for p, c in v.items())),
    "exclude": ("exclude", tuple),
    "extend-exclude": ("extend_exclude", tuple),
    "respect-gitignore": ("respect_gitignore", bool),
    "pin001-min-bytes": ("pin001_min_bytes", int),
    "pin007-min-bytes": ("pin007_min_bytes", int),
    "pin008-min-bytes": ("pin008_min_bytes", int),
    "pin009-max-share": ("pin009_max_share", float),
}


def apply_overrides(config: Config, overrides: dict, source: str = "--config") -> Config:
    """Settings given on the command line (``--config KEY=VALUE``, ``--per-file-ignores``...) on top of
    the configuration file's: each key checked as in a file, errors naming ``source``."""
    from dataclasses import replace
    changes: dict = {}
    for key, value in overrides.items():
        if key not in _KEYS:
            hint = difflib.get_close_matches(key, _KEYS, n=1)
            raise SettingsError(f"{source}: unknown key `{key}`" + (f" (did you mean `{hint[0]}`?)" if hint else
                                f"; known keys: {', '.join(_KEYS)}"))
        description, valid = _KEYS[key]
        if not valid(value):
            raise SettingsError(f"{source}: `{key}` must be {description}, not {value!r}")
        if key in ("select", "ignore", "extend-select"):
            _check_codes(Path(source), key, value)
        elif key == "per-file-ignores":
            for pattern, codes in value.items():
                _check_codes(Path(source), f"per-file-ignores.{pattern}", codes)
        field_name, convert = _FIELDS[key]
        changes[field_name] = convert(value)
    return replace(config, **changes)
