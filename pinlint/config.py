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

from .checks import ALL_CODES
from .settings import SettingsError, resolve_selection

CONFIG_FILES = ("pinlint.toml", "pyproject.toml")


@dataclass(frozen=True)
class Config:
    path: Optional[Path] = None                # the file the settings came from (None: defaults)
    select: tuple = ()
    ignore: tuple = ()
    extend_select: tuple = ()
    per_file_ignores: tuple = ()               # ((glob, (codes...)), ...)
    exclude: Optional[tuple] = None            # None: the built-in excludes; [] excludes nothing
    extend_exclude: tuple = ()
    respect_gitignore: bool = True
    pin007_min_bytes: int = 64 * 1024

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


_KEYS = {
    "select": ("a list of rule codes", _strings),
    "ignore": ("a list of rule codes", _strings),
    "extend-select": ("a list of rule codes", _strings),
    "per-file-ignores": ("a table of glob = [codes]", lambda v: isinstance(v, dict) and all(_strings(x) for x in v.values())),
    "exclude": ("a list of globs", _strings),
    "extend-exclude": ("a list of globs", _strings),
    "respect-gitignore": ("true or false", lambda v: isinstance(v, bool)),
    "pin007-min-bytes": ("a non-negative integer", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
}


def _pinlint_table(path: Path) -> Optional[dict]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read the configuration ({exc})")
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML ({exc})")
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("pinlint")
        return table if table is not None else None
    return data.get("tool", {}).get("pinlint", data)


def find_config(start: Path) -> Optional[Path]:
    """The nearest pinlint.toml, or pyproject.toml with a [tool.pinlint] table, from ``start`` up."""
    try:
        directory = start.resolve()
        if directory.is_file() or not directory.exists():
            directory = directory.parent
    except (OSError, RuntimeError):  # a symlink loop, a folder we may not read
        directory = Path.cwd()
    for folder in (directory, *directory.parents):
        for name in CONFIG_FILES:
            candidate = folder / name
            if candidate.is_file():
                if name == "pinlint.toml" or _pinlint_table(candidate) is not None:
                    return candidate
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
        select=tuple(values.get("select", ())),
        ignore=tuple(values.get("ignore", ())),
        extend_select=tuple(values.get("extend-select", ())),
        per_file_ignores=tuple((p, tuple(sorted(resolve_selection(codes))))
                               for p, codes in values.get("per-file-ignores", {}).items()),
        exclude=tuple(values["exclude"]) if "exclude" in values else None,
        extend_exclude=tuple(values.get("extend-exclude", ())),
        respect_gitignore=values.get("respect-gitignore", True),
        pin007_min_bytes=values.get("pin007-min-bytes", 64 * 1024),
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
    "pin007-min-bytes": ("pin007_min_bytes", int),
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
