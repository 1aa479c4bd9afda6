"""Configuration as users meet it: ``[tool.pinlint]`` / ``pinlint.toml`` found from the checked path
upwards, ``--config``, every key's effect, command-line overrides, errors, ``--show-settings`` and
``--force-exclude``. Every test runs the real command line in a fresh interpreter inside ``tmp_path``.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers import pinlint as pinlint_process, pinlint_in_process as pinlint, write, BAD

# PIN001 at 6:1 and PIN007 at 9:10 (4 MiB buffers, above the default pin007-min-bytes).
BOTH = textwrap.dedent("""\
    import numpy as np, cupy as cp
    from numba import cuda
    h = np.zeros(1 << 20, dtype=np.float32)
    d = cp.empty(1 << 20, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(h, stream=s)
    g = np.zeros(1 << 20, dtype=np.float32)
    for i in range(10):
        dg = cuda.to_device(g)
    """)


def small_loop(nbytes: int) -> str:
    """A PIN007 candidate whose buffer has a constant size of ``nbytes`` (a uint8 array)."""
    return textwrap.dedent(f"""\
        import numpy as np
        from numba import cuda
        h = np.zeros({nbytes}, dtype=np.uint8)
        for i in range(10):
            d = cuda.to_device(h)
        """)


def toml(root: Path, relative: str, body: str) -> Path:
    return write(root, relative, textwrap.dedent(body).lstrip("\n"))


def found(cwd: Path, *args: str) -> dict:
    """{display filename: sorted codes} from ``check --format json`` (exit 0 or 1 required)."""
    proc = pinlint(cwd, "check", "--format", "json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    out: dict = {}
    for item in json.loads(proc.stdout):
        out.setdefault(item["filename"], []).append(item["code"])
    return {name: sorted(codes) for name, codes in out.items()}


def error_line(proc: subprocess.CompletedProcess) -> str:
    """Configuration errors: exit 2, nothing on stdout, exactly one line on stderr."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert proc.stdout == ""
    return lines[0]


# ------------------------------------------------------------------ where the configuration comes from
def test_pyproject_table_is_found_from_the_checked_path_upwards(tmp_path):
    toml(tmp_path, "proj/pyproject.toml", """
        [tool.pinlint]
        select = ["PIN007"]
        """)
    write(tmp_path, "proj/pkg/deep/both.py", BOTH)
    # Run from outside the project: the search starts at the checked path, not at the working directory.
    assert found(tmp_path, "proj/pkg") == {"proj/pkg/deep/both.py": ["PIN007"]}
    assert found(tmp_path / "proj" / "pkg" / "deep", ".") == {"both.py": ["PIN007"]}
    # A file named directly starts the search at its folder.
    assert found(tmp_path, "proj/pkg/deep/both.py") == {"proj/pkg/deep/both.py": ["PIN007"]}


def test_pinlint_toml_takes_precedence_over_pyproject_in_the_same_folder(tmp_path):
    toml(tmp_path, "proj/pyproject.toml", """
        [tool.pinlint]
        select = ["PIN001"]
        """)
    toml(tmp_path, "proj/pinlint.toml", """
        select = ["PIN007"]
        """)
    write(tmp_path, "proj/both.py", BOTH)
    assert found(tmp_path / "proj", ".") == {"both.py": ["PIN007"]}
    shown = pinlint(tmp_path / "proj", "check", "--show-settings", ".").stdout
    assert f"config file: {(tmp_path / 'proj' / 'pinlint.toml').resolve()}" in shown.splitlines()


def test_pinlint_toml_may_also_use_a_tool_pinlint_table(tmp_path):
    toml(tmp_path, "pinlint.toml", """
        [tool.pinlint]
        ignore = ["PIN001"]
        """)
    write(tmp_path, "both.py", BOTH)
    assert found(tmp_path, ".") == {"both.py": ["PIN007"]}


def test_the_nearest_configuration_wins(tmp_path):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        select = ["PIN001"]
        """)
    toml(tmp_path, "sub/pinlint.toml", """
        select = ["PIN007"]
        """)
    write(tmp_path, "sub/both.py", BOTH)
    assert found(tmp_path, "sub") == {"sub/both.py": ["PIN007"]}


def test_pyproject_without_a_pinlint_table_is_skipped(tmp_path):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        ignore = ["PIN001"]
        """)
    toml(tmp_path, "sub/pyproject.toml", """
        [project]
        name = "sub"
        version = "0"

        [tool.ruff]
        line-length = 100
        """)
    write(tmp_path, "sub/both.py", BOTH)
    assert found(tmp_path / "sub", ".") == {"both.py": ["PIN007"]}
    shown = pinlint(tmp_path / "sub", "check", "--show-settings").stdout
    assert f"config file: {(tmp_path / 'pyproject.toml').resolve()}" in shown.splitlines()


def test_an_empty_pinlint_table_counts_as_a_configuration(tmp_path):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        select = ["PIN001"]
        """)
    toml(tmp_path, "sub/pyproject.toml", """
        [tool.pinlint]
        """)
    write(tmp_path, "sub/both.py", BOTH)
    # The empty table in sub/ is the configuration (defaults), the outer select does not apply.
    assert found(tmp_path, "sub") == {"sub/both.py": ["PIN001", "PIN007"]}


def test_config_option_names_the_file_and_disables_the_search(tmp_path):
    toml(tmp_path, "proj/pyproject.toml", """
        [tool.pinlint]
        select = ["PIN001"]
        """)
    toml(tmp_path, "proj/ci/strict.toml", """
        select = ["PIN007"]
        """)
    write(tmp_path, "proj/both.py", BOTH)
    assert found(tmp_path / "proj", ".") == {"both.py": ["PIN001"]}
    assert found(tmp_path / "proj", "--config", "ci/strict.toml", ".") == {"both.py": ["PIN007"]}
    shown = pinlint(tmp_path / "proj", "check", "--config", "ci/strict.toml", "--show-settings").stdout
    [line] = [line for line in shown.splitlines() if line.startswith("config file: ")]
    assert line.endswith("ci/strict.toml")


def test_config_option_accepts_a_pyproject(tmp_path):
    toml(tmp_path, "other/pyproject.toml", """
        [tool.pinlint]
        ignore = ["PIN007"]
        """)
    write(tmp_path, "both.py", BOTH)
    assert found(tmp_path, "--config", "other/pyproject.toml", "both.py") == {"both.py": ["PIN001"]}


# ------------------------------------------------------------------ rule selection
@pytest.mark.parametrize("body, expected", [
    ('select = ["PIN001"]', ["PIN001"]),
    ('select = ["pin007"]', ["PIN007"]),                               # case does not matter
    ('select = ["PIN00"]\nignore = ["PIN001"]', ["PIN007"]),           # prefixes
    ('ignore = ["PIN007"]', ["PIN001"]),
    ('select = ["PIN001"]\nextend-select = ["PIN007"]', ["PIN001", "PIN007"]),
    ('select = ["ALL"]\nignore = ["PIN"]', []),
])
def test_select_ignore_extend_select(tmp_path, body, expected):
    write(tmp_path, "pyproject.toml", f"[tool.pinlint]\n{body}\n")
    write(tmp_path, "both.py", BOTH)
    assert found(tmp_path, ".").get("both.py", []) == expected


def test_command_line_select_replaces_the_configured_select(tmp_path):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        select = ["PIN007"]
        """)
    write(tmp_path, "both.py", BOTH)
    assert found(tmp_path, ".") == {"both.py": ["PIN007"]}
    assert found(tmp_path, "--select", "PIN001", ".") == {"both.py": ["PIN001"]}


def test_command_line_ignore_adds_to_the_configured_ignore(tmp_path):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        ignore = ["PIN007"]
        """)
    write(tmp_path, "both.py", BOTH)
    assert found(tmp_path, ".") == {"both.py": ["PIN001"]}
    proc = pinlint(tmp_path, "check", "--ignore", "PIN001", ".")
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.strip() == "All checks passed!"


def test_command_line_extend_select_adds_to_the_configured_select(tmp_path):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        select = ["PIN001"]
        """)
    write(tmp_path, "both.py", BOTH)
    assert found(tmp_path, "--extend-select", "PIN007", ".") == {"both.py": ["PIN001", "PIN007"]}


# ------------------------------------------------------------------ per-file-ignores
def _per_file_tree(root: Path) -> None:
    toml(root, "pyproject.toml", """
        [tool.pinlint.per-file-ignores]
        "tests/*.py" = ["PIN001"]
        "legacy/**" = ["PIN001", "pin007"]
        """)
    for name in ("src/both.py", "tests/test_both.py", "legacy/both.py", "legacy/deep/er/both.py"):
        write(root, name, BOTH)


def test_per_file_ignores_globs(tmp_path):
    _per_file_tree(tmp_path)
    assert found(tmp_path, ".") == {
        "src/both.py": ["PIN001", "PIN007"],
        "tests/test_both.py": ["PIN007"],        # only the named code is ignored there
    }


def test_per_file_ignores_are_relative_to_the_configuration_not_the_working_directory(tmp_path):
    _per_file_tree(tmp_path)
    assert found(tmp_path / "tests", ".") == {"test_both.py": ["PIN007"]}
    assert found(tmp_path / "legacy" / "deep", ".") == {}
    assert found(tmp_path, "tests/test_both.py") == {"tests/test_both.py": ["PIN007"]}


@pytest.mark.parametrize("codes", ['["PIN"]', '["ALL"]', '["PIN00"]'])
def test_per_file_ignores_accept_prefixes_and_all(tmp_path, codes):
    write(tmp_path, "pyproject.toml", f'[tool.pinlint.per-file-ignores]\n"legacy/**" = {codes}\n')
    write(tmp_path, "legacy/both.py", BOTH)
    write(tmp_path, "src/both.py", BOTH)
    assert found(tmp_path, ".") == {"src/both.py": ["PIN001", "PIN007"]}


# ------------------------------------------------------------------ exclude / extend-exclude
def _exclude_tree(root: Path) -> None:
    for name in ("src/a.py", "build/b.py", "legacy/c.py", "src/api_pb2.py", "venv_like/d.py"):
        write(root, name, BAD)


def test_default_excludes_without_configuration(tmp_path):
    _exclude_tree(tmp_path)
    toml(tmp_path, "pyproject.toml", "[tool.pinlint]\n")
    assert set(found(tmp_path, ".")) == {"src/a.py", "legacy/c.py", "src/api_pb2.py", "venv_like/d.py"}


def test_exclude_replaces_the_default_excludes(tmp_path):
    _exclude_tree(tmp_path)
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        exclude = ["legacy", "*_pb2.py"]
        """)
    # build/ is a default exclude: replaced, so it is checked now.
    assert set(found(tmp_path, ".")) == {"src/a.py", "build/b.py", "venv_like/d.py"}


def test_extend_exclude_adds_to_the_default_excludes(tmp_path):
    _exclude_tree(tmp_path)
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        extend-exclude = ["legacy", "*_pb2.py", "venv_like/d.py"]
        """)
    assert set(found(tmp_path, ".")) == {"src/a.py"}


def test_empty_exclude_replaces_the_defaults_with_nothing(tmp_path):
    _exclude_tree(tmp_path)
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        exclude = []
        """)
    assert "build/b.py" in found(tmp_path, ".")


# ------------------------------------------------------------------ respect-gitignore
def _git_tree(root: Path) -> None:
    """A git-like tree. ``exclude`` keeps only .git so that ``build/`` is left to the .gitignore."""
    (root / ".git").mkdir()
    toml(root, "pyproject.toml", """
        [tool.pinlint]
        exclude = [".git"]
        """)
    write(root, ".gitignore", "build/\n*.gen.py\n!keep.gen.py\n")
    for name in ("src/a.py", "build/b.py", "src/build/c.py", "src/rebuild/d.py", "src/x.gen.py",
                 "src/deep/y.gen.py", "src/keep.gen.py", "src/gen.py"):
        write(root, name, BAD)


def test_gitignore_is_respected_by_default(tmp_path):
    _git_tree(tmp_path)
    # `build/` matches a folder of that name at any depth; `*.gen.py` matches at any depth;
    # `!keep.gen.py` re-includes; `rebuild/` and `gen.py` do not match.
    assert set(found(tmp_path, ".")) == {"src/a.py", "src/rebuild/d.py", "src/keep.gen.py", "src/gen.py"}


def test_gitignore_directory_pattern_does_not_match_a_file(tmp_path):
    _git_tree(tmp_path)
    write(tmp_path, "tools/build", BAD)  # a file named `build` (no suffix): checked when named
    assert set(found(tmp_path, "--force-exclude", "tools/build", "build/b.py")) == {"tools/build"}


def test_respect_gitignore_false_checks_ignored_files(tmp_path):
    _git_tree(tmp_path)
    with (tmp_path / "pyproject.toml").open("a", encoding="utf-8") as handle:
        handle.write("respect-gitignore = false\n")
    assert set(found(tmp_path, ".")) == {"src/a.py", "build/b.py", "src/build/c.py", "src/rebuild/d.py",
                                         "src/x.gen.py", "src/deep/y.gen.py", "src/keep.gen.py", "src/gen.py"}


def test_nested_gitignore_applies_to_its_folder(tmp_path):
    _git_tree(tmp_path)
    write(tmp_path, "src/.gitignore", "rebuild/\n")
    write(tmp_path, "rebuild/top.py", BAD)  # the nested pattern does not reach outside src/
    assert set(found(tmp_path, ".")) == {"src/a.py", "src/keep.gen.py", "src/gen.py", "rebuild/top.py"}


def test_gitignore_is_honoured_when_running_from_a_subfolder_with_the_configuration_above(tmp_path):
    _git_tree(tmp_path)
    assert set(found(tmp_path / "src", ".")) == {"a.py", "rebuild/d.py", "keep.gen.py", "gen.py"}


def test_nested_gitignore_negation_overrides_the_parent(tmp_path):
    (tmp_path / ".git").mkdir()
    toml(tmp_path, "pyproject.toml", "[tool.pinlint]\n")
    write(tmp_path, ".gitignore", "*.gen.py\n")
    write(tmp_path, "src/.gitignore", "!keep.gen.py\n")
    write(tmp_path, "src/keep.gen.py", BAD)
    write(tmp_path, "src/drop.gen.py", BAD)
    assert set(found(tmp_path, ".")) == {"src/keep.gen.py"}


def test_top_level_gitignore_applies_when_running_in_a_subfolder_without_configuration(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path, ".gitignore", "generated/\n")
    write(tmp_path, "src/generated/g.py", BAD)
    write(tmp_path, "src/a.py", BAD)
    assert set(found(tmp_path, ".")) == {"src/a.py"}      # from the top: fine
    assert set(found(tmp_path / "src", ".")) == {"a.py"}  # from src/: generated/g.py is checked


# ------------------------------------------------------------------ pin007-min-bytes
def test_pin007_min_bytes_default_keeps_small_constant_transfers_quiet(tmp_path):
    write(tmp_path, "small.py", small_loop(4000))
    write(tmp_path, "big.py", small_loop(1 << 22))
    toml(tmp_path, "pyproject.toml", "[tool.pinlint]\n")
    assert found(tmp_path, ".") == {"big.py": ["PIN007"]}


@pytest.mark.parametrize("threshold, loud", [(0, True), (3999, True), (4000, True), (4001, False),
                                             (1 << 30, False)])
def test_pin007_min_bytes_threshold(tmp_path, threshold, loud):
    write(tmp_path, "small.py", small_loop(4000))
    write(tmp_path, "pyproject.toml", f"[tool.pinlint]\npin007-min-bytes = {threshold}\n")
    assert found(tmp_path, ".") == ({"small.py": ["PIN007"]} if loud else {})


def test_pin007_min_bytes_can_quiet_large_transfers(tmp_path):
    write(tmp_path, "big.py", small_loop(1 << 22))
    write(tmp_path, "pyproject.toml", f"[tool.pinlint]\npin007-min-bytes = {1 << 23}\n")
    assert found(tmp_path, ".") == {}


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("key, hint", [("selct", "select"), ("extend_select", "extend-select"),
                                       ("per_file_ignores", "per-file-ignores"),
                                       ("pin007_min_bytes", "pin007-min-bytes")])
def test_unknown_key_names_file_key_and_close_match(tmp_path, key, hint):
    config = write(tmp_path, "pyproject.toml", f'[tool.pinlint]\n{key} = ["PIN001"]\n')
    write(tmp_path, "both.py", BOTH)
    line = error_line(pinlint(tmp_path, "check", "."))
    assert str(config.resolve()) in line or "pyproject.toml" in line
    assert f"`{key}`" in line
    assert f"did you mean `{hint}`?" in line


def test_unknown_key_without_close_match_lists_the_known_keys(tmp_path):
    write(tmp_path, "pinlint.toml", "colour = true\n")
    write(tmp_path, "both.py", BOTH)
    line = error_line(pinlint(tmp_path, "check", "."))
    assert "pinlint.toml" in line and "`colour`" in line
    for key in ("select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude",
                "respect-gitignore", "pin007-min-bytes"):
        assert key in line


@pytest.mark.parametrize("body, key", [
    ('select = "PIN001"', "select"),
    ('ignore = [1, 2]', "ignore"),
    ('exclude = "build"', "exclude"),
    ('extend-exclude = [true]', "extend-exclude"),
    ('respect-gitignore = "yes"', "respect-gitignore"),
    ('pin007-min-bytes = -1', "pin007-min-bytes"),
    ('pin007-min-bytes = 1.5', "pin007-min-bytes"),
    ('pin007-min-bytes = true', "pin007-min-bytes"),
    ('per-file-ignores = ["tests/*.py"]', "per-file-ignores"),
    ('per-file-ignores = { "tests/*.py" = "PIN001" }', "per-file-ignores"),
])
def test_wrong_type_is_an_error(tmp_path, body, key):
    write(tmp_path, "pyproject.toml", f"[tool.pinlint]\n{body}\n")
    write(tmp_path, "both.py", BOTH)
    line = error_line(pinlint(tmp_path, "check", "."))
    assert "pyproject.toml" in line and f"`{key}` must be" in line


@pytest.mark.parametrize("body, key, hint", [
    ('select = ["PIN01"]', "select", "PIN001"),
    ('ignore = ["PIN0008"]', "ignore", None),
    ('extend-select = ["E501"]', "extend-select", None),
])
def test_unknown_code_in_selection_is_an_error(tmp_path, body, key, hint):
    write(tmp_path, "pyproject.toml", f"[tool.pinlint]\n{body}\n")
    write(tmp_path, "both.py", BOTH)
    line = error_line(pinlint(tmp_path, "check", "."))
    assert "pyproject.toml" in line and f"`{key}`" in line and "unknown rule" in line
    if hint:
        assert f"did you mean {hint}?" in line


def test_unknown_code_in_per_file_ignores_is_an_error(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.pinlint.per-file-ignores]\n"tests/*.py" = ["PIN001", "PIN9"]\n')
    write(tmp_path, "both.py", BOTH)
    line = error_line(pinlint(tmp_path, "check", "."))
    assert "pyproject.toml" in line and "per-file-ignores" in line and "tests/*.py" in line
    assert "'PIN9'" in line


@pytest.mark.parametrize("name, text", [
    ("pyproject.toml", "[tool.pinlint\nselect = []\n"),
    ("pyproject.toml", '[tool.pinlint]\nselect = ["PIN001"\n'),
    ("pinlint.toml", "select = PIN001\n"),
])
def test_invalid_toml_is_an_error(tmp_path, name, text):
    write(tmp_path, name, text)
    write(tmp_path, "both.py", BOTH)
    line = error_line(pinlint(tmp_path, "check", "."))
    assert name in line and "not valid TOML" in line


def test_config_option_pointing_to_a_missing_file(tmp_path):
    write(tmp_path, "both.py", BOTH)
    line = error_line(pinlint_process(tmp_path, "check", "--config", "nope/pinlint.toml", "."))  # one real process
    assert "nope/pinlint.toml" in line


def test_config_option_pointing_to_a_pyproject_without_the_table(tmp_path):
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')
    write(tmp_path, "both.py", BOTH)
    line = error_line(pinlint(tmp_path, "check", "--config", "pyproject.toml", "."))
    assert "pyproject.toml" in line and "[tool.pinlint]" in line


def test_configuration_errors_stop_fix_and_show_settings_too(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.pinlint]\nselectt = []\n")
    bad = write(tmp_path, "both.py", BOTH)
    for args in (("check", "--fix", "."), ("fix", "."), ("check", "--show-settings", ".")):
        error_line(pinlint(tmp_path, *args))
    assert bad.read_text(encoding="utf-8") == BOTH


# ------------------------------------------------------------------ --show-settings
def _settings(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr
    out = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(": ")
        out[key] = value
    return out


def test_show_settings_prints_the_resolved_values(tmp_path):
    config = toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        select = ["PIN00"]
        ignore = ["PIN003"]
        extend-select = []
        exclude = ["legacy", "build"]
        extend-exclude = ["*_pb2.py"]
        respect-gitignore = false
        pin007-min-bytes = 1024

        [tool.pinlint.per-file-ignores]
        "tests/*.py" = ["pin001"]
        """)
    write(tmp_path, "both.py", BOTH)
    shown = _settings(pinlint(tmp_path, "check", "--show-settings", "."))
    assert shown["config file"] == str(config.resolve())
    assert shown["select"] == "PIN000, PIN001, PIN002, PIN004, PIN005, PIN006, PIN007, PIN008, PIN009"
    assert "tests/*.py" in shown["per-file-ignores"] and "PIN001" in shown["per-file-ignores"]
    assert shown["exclude"] == "legacy, build"
    assert shown["extend-exclude"] == "*_pb2.py"
    assert shown["respect-gitignore"] == "false"
    assert shown["pin007-min-bytes"] == "1024"


def test_show_settings_reflects_command_line_overrides_and_checks_nothing(tmp_path):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        select = ["PIN007"]
        """)
    write(tmp_path, "both.py", BOTH)
    proc = pinlint(tmp_path, "check", "--show-settings", "--select", "PIN001,PIN002", "--ignore", "PIN002", ".")
    shown = _settings(proc)
    assert shown["select"] == "PIN000, PIN001"  # PIN000 cannot be deselected
    assert "both.py" not in proc.stdout


def test_show_settings_defaults(tmp_path):
    write(tmp_path, "pinlint.toml", "")
    shown = _settings(pinlint(tmp_path, "check", "--show-settings"))
    assert shown["select"] == "PIN000, PIN001, PIN002, PIN003, PIN004, PIN005, PIN006, PIN007, PIN008, PIN009"
    assert "build" in shown["exclude"].split(", ") and ".git" in shown["exclude"].split(", ")
    assert shown["extend-exclude"] == "(none)"
    assert shown["respect-gitignore"] == "true"
    assert shown["pin007-min-bytes"] == str(64 * 1024)
    assert shown["pin001-min-bytes"] == str(64 * 1024)
    assert shown["pin008-min-bytes"] == str(16 << 20)
    assert shown["pin009-max-share"] == "0.25 (pinlint trace)"


# ------------------------------------------------------------------ --force-exclude
def test_named_file_in_an_excluded_folder_is_checked_unless_force_exclude(tmp_path):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        extend-exclude = ["legacy", "*_pb2.py"]
        """)
    for name in ("build/b.py", "legacy/deep/c.py", "src/api_pb2.py", "src/a.py"):
        write(tmp_path, name, BAD)
    named = ("build/b.py", "legacy/deep/c.py", "src/api_pb2.py", "src/a.py")
    assert set(found(tmp_path, *named)) == set(named)
    assert set(found(tmp_path, "--force-exclude", *named)) == {"src/a.py"}


def test_force_exclude_applies_gitignore_to_named_files(tmp_path):
    _git_tree(tmp_path)
    named = ("build/b.py", "src/x.gen.py", "src/keep.gen.py")
    assert set(found(tmp_path, *named)) == set(named)
    assert set(found(tmp_path, "--force-exclude", *named)) == {"src/keep.gen.py"}


def test_force_exclude_with_only_excluded_files_passes(tmp_path):
    toml(tmp_path, "pyproject.toml", "[tool.pinlint]\n")
    write(tmp_path, "build/b.py", BAD)
    proc = pinlint(tmp_path, "check", "--force-exclude", "build/b.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_force_exclude_for_the_fix_command(tmp_path):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        extend-exclude = ["legacy"]
        """)
    legacy = write(tmp_path, "legacy/a.py", BAD)
    proc = pinlint(tmp_path, "check", "--fix", "--force-exclude", "legacy/a.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert legacy.read_text(encoding="utf-8") == BAD


def test_force_exclude_ignores_folders_above_the_project_root(tmp_path):
    project = tmp_path / "build" / "proj"
    toml(project, "pyproject.toml", "[tool.pinlint]\n")
    bad = write(project, "a.py", BAD)
    assert set(found(project, ".")) == {"a.py"}                     # walking the project: checked
    assert set(found(project, "--force-exclude", "a.py")) == {"a.py"}  # relative name: checked
    assert set(found(project, "--force-exclude", str(bad))) == {"a.py"}  # absolute name: skipped (the bug)


# ------------------------------------------------------------------ issue 14: values of the wrong shape
from helpers import run_in_process  # noqa: E402


def _one_error(monkeypatch, capsys, cwd, *args) -> str:
    code, out, err = run_in_process(monkeypatch, capsys, cwd, *args)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, (code, out, err)
    assert lines[0].startswith("pinlint: error: ")
    return lines[0]


@pytest.mark.parametrize("name, body, key", [
    ("pyproject.toml", "tool = 1\n", "`tool`"),
    ("pyproject.toml", '[tool]\npinlint = "x"\n', "`tool.pinlint`"),
    ("pinlint.toml", "tool = 5\n", "`tool`"),
    ("pinlint.toml", '[tool]\npinlint = []\n', "`tool.pinlint`"),
])
def test_a_table_of_the_wrong_shape_is_a_one_line_error(tmp_path, monkeypatch, capsys, name, body, key):
    write(tmp_path, name, body)
    write(tmp_path, "both.py", BOTH)
    for args in (("check", "."), ("check", "--fix", "."), ("check", "--show-settings")):
        line = _one_error(monkeypatch, capsys, tmp_path, *args)
        assert name in line and f"{key} must be a table" in line


def test_an_odd_unrelated_pyproject_does_not_stop_a_run_with_another_configuration(tmp_path, monkeypatch, capsys):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        select = ["PIN007"]
        """)
    write(tmp_path, "sub/pyproject.toml", "tool = 1\n")
    write(tmp_path, "sub/both.py", BOTH)
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path / "sub", "check", "--no-cache", ".")
    assert code == 1 and err == "" and "PIN007" in out and "PIN001" not in out
    # Named with --config, the odd file is never read.
    write(tmp_path, "sub/pinlint.toml", 'select = ["PIN001"]\n')
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path / "sub", "check", "--no-cache", "--config",
                                    "pinlint.toml", ".")
    assert code == 1 and err == "" and "PIN001" in out


def test_pinlint_toml_with_only_other_tools_tables_is_the_defaults(tmp_path, monkeypatch, capsys):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        select = ["PIN007"]
        """)
    toml(tmp_path, "sub/pinlint.toml", """
        [tool.other]
        answer = 42
        """)
    write(tmp_path, "sub/both.py", BOTH)
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path / "sub", "check", "--no-cache", ".")
    assert code == 1 and err == "" and "PIN001" in out and "PIN007" in out


def test_top_level_keys_beside_the_tool_table_are_reported(tmp_path, monkeypatch, capsys):
    toml(tmp_path, "pinlint.toml", """
        select = ["PIN001"]

        [tool.pinlint]
        ignore = ["PIN007"]
        """)
    write(tmp_path, "both.py", BOTH)
    line = _one_error(monkeypatch, capsys, tmp_path, "check", ".")
    assert "pinlint.toml" in line and "`select`" in line and "[tool.pinlint]" in line


def test_an_empty_select_selects_nothing(tmp_path, monkeypatch, capsys):
    toml(tmp_path, "pyproject.toml", """
        [tool.pinlint]
        select = []
        extend-select = ["PIN007"]
        """)
    write(tmp_path, "both.py", BOTH)
    write(tmp_path, "broken.py", "import cupy\nd = cupy.empty(\n")
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--format", "json", ".")
    assert {(f["filename"], f["code"]) for f in json.loads(out)} == {("both.py", "PIN007"), ("broken.py", "PIN000")}
    code, out, _ = run_in_process(monkeypatch, capsys, tmp_path, "check", "--show-settings")
    assert "select: PIN000, PIN007" in out.splitlines()
