"""Hostile inputs through the real command line: never a crash, never a traceback, never a lost file.

Every case runs ``python -m pinlint check`` and ``python -m pinlint check --fix`` on the hostile
path *next to a good file with a finding*, and asserts what the README promises:

- no traceback ever reaches the user (``Traceback`` is in neither stream);
- the hostile path gives a ``PIN000`` finding or a one-line ``pinlint: ...`` message on stderr
  (or, where there is nothing wrong, its findings), and the run goes on: the good file is still
  reported (``check``) or fixed (``--fix``);
- the exit code is the documented one: 1 when there are findings, 2 when a path could not be read
  or written (a message on stderr);
- ``--fix`` never changes a file it cannot fix, and keeps encoding, BOM and line endings of one it can.

Permission tests need a user without root's rights: under root (as in CI) they run pinlint as
`nobody` through `runuser` (and skip, saying why, where that is impossible). The same situations
are also simulated in-process (monkeypatched reads, writes, stats and directory scans), which runs
everywhere.
"""

from __future__ import annotations

import functools
import io
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from pathlib import Path

import pytest

import helpers
from helpers import BAD, pinlint_in_process

# A prefix that makes pinlint parse a file (it names a GPU library and calls a copy API).
PARSED = "import cupy as cp\nd = cp.asarray([0])\n"
GOOD = "z_good.py"  # sorts after the hostile files: reported last

REPO = Path(__file__).resolve().parent.parent
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
ROOT_REASON = "running as root, which ignores file permissions (the in-process simulations below cover it)"
MESSAGE = re.compile(r"^pinlint: (error|warning): .+$")


def run(cwd: Path, *args: str, timeout: float = 120, process: bool = False) -> subprocess.CompletedProcess:
    """pinlint on the input, in this process unless ``process``: the inputs that could crash or hang
    a parser (deep nesting, long chains, a named pipe, ten megabytes) get a process of their own, so
    a crash fails that test, not the worker running the suite."""
    if process:
        done = subprocess.run([sys.executable, "-m", "pinlint", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, errors="replace")
    else:
        done = pinlint_in_process(cwd, *args)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    for line in done.stderr.splitlines():
        assert MESSAGE.match(line), f"stderr line is not a one-line pinlint message: {line!r}"
    return done


def reported(stdout: str) -> list:
    """(path, code) of every finding line of text output."""
    found = []
    for line in stdout.splitlines():
        match = re.match(r"^(?P<path>.+?):(?P<row>\d+):(?P<col>\d+): (?P<code>PIN\d{3}) ", line)
        if match:
            found.append((match.group("path"), match.group("code"), int(match.group("row"))))
    return found


def codes_for(stdout: str, path: str) -> list:
    return [code for p, code, _ in reported(stdout) if p == path]


def fixed_good(root: Path) -> bool:
    return "cupyx.zeros_pinned" in (root / GOOD).read_text(encoding="utf-8")


def with_good(root: Path) -> Path:
    (root / GOOD).write_text(BAD, encoding="utf-8")
    return root / GOOD


def check_and_fix(root: Path, hostile: str, *extra: str, timeout: float = 120, process: bool = False):
    """Run check, then check --fix, on the hostile path and the good file; return both results."""
    with_good(root)
    checked = run(root, "check", "--no-cache", *extra, hostile, GOOD, timeout=timeout, process=process)
    assert ("z_good.py", "PIN001", 5) in reported(checked.stdout), "the run went on to the good file"
    fixed = run(root, "check", "--fix", *extra, hostile, GOOD, timeout=timeout, process=process)
    assert fixed_good(root), "the good file is still fixed"
    return checked, fixed


def assert_pin000_or_message(done: subprocess.CompletedProcess, name: str) -> None:
    pin000 = codes_for(done.stdout, name) == ["PIN000"]
    messages = [l for l in done.stderr.splitlines() if name in l]
    assert pin000 or len(messages) == 1, (done.stdout, done.stderr)
    if pin000:
        assert done.returncode in (1, 2)
    else:
        assert done.returncode == 2, "a path pinlint could not use exits 2"


# ------------------------------------------------------------------ bytes that are not Python source text
def test_binary_data_named_py_is_pin000(tmp_path):
    data = bytes(range(256)) * 8 + b"\x00\xff cupy d.set(h, stream=s)\n" + random.Random(0).randbytes(2048)
    target = tmp_path / "blob.py"
    target.write_bytes(data)
    checked, fixed = check_and_fix(tmp_path, "blob.py")
    assert codes_for(checked.stdout, "blob.py") == ["PIN000"]
    assert checked.returncode == 1
    assert fixed.returncode == 1 and codes_for(fixed.stdout, "blob.py") == ["PIN000"]
    assert target.read_bytes() == data


def test_binary_data_without_a_gpu_library_is_skipped(tmp_path):
    (tmp_path / "blob.py").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    done = run(tmp_path, "check", "--no-cache", "blob.py")
    assert done.returncode == 0 and done.stdout.strip() == "All checks passed!"


def test_non_utf8_without_a_cookie_is_pin000_and_left_alone(tmp_path):
    data = (BAD + "label = 'caf\xe9'\n").encode("latin-1")
    target = tmp_path / "latin.py"
    target.write_bytes(data)
    checked, fixed = check_and_fix(tmp_path, "latin.py")
    assert codes_for(checked.stdout, "latin.py") == ["PIN000"]
    assert "not valid" in checked.stdout or "utf-8" in checked.stdout.lower() or "byte" in checked.stdout
    assert checked.returncode == 1
    assert target.read_bytes() == data, "a file pinlint cannot decode is never rewritten"


def test_latin1_coding_cookie_is_honoured_by_check_and_fix(tmp_path):
    data = ("# -*- coding: latin-1 -*-\n# caf\xe9 cr\xe8me\n" + BAD + "label = 'na\xefve'\n").encode("latin-1")
    target = tmp_path / "latin.py"
    target.write_bytes(data)
    checked, fixed = check_and_fix(tmp_path, "latin.py")
    assert [(c, r) for p, c, r in reported(checked.stdout) if p == "latin.py"] == [("PIN001", 7)]
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    raw = target.read_bytes()
    assert b"caf\xe9 cr\xe8me" in raw and b"na\xefve" in raw, "still latin-1, not re-encoded to UTF-8"
    assert "zeros_pinned" in raw.decode("latin-1")


def test_undecodable_cookie_is_pin000(tmp_path):
    (tmp_path / "weird.py").write_bytes(b"# -*- coding: klingon -*-\n" + BAD.encode())
    checked, fixed = check_and_fix(tmp_path, "weird.py")
    assert codes_for(checked.stdout, "weird.py") == ["PIN000"]
    assert (tmp_path / "weird.py").read_bytes() == b"# -*- coding: klingon -*-\n" + BAD.encode()


def test_utf8_bom_keeps_positions_and_survives_a_fix(tmp_path):
    target = tmp_path / "bom.py"
    target.write_bytes(b"\xef\xbb\xbf" + BAD.encode())
    checked, fixed = check_and_fix(tmp_path, "bom.py")
    assert [(c, r) for p, c, r in reported(checked.stdout) if p == "bom.py"] == [("PIN001", 5)]
    raw = target.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and raw.count(b"\xef\xbb\xbf") == 1 and b"zeros_pinned" in raw


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "lone-cr"])
def test_line_endings_are_understood_and_kept(tmp_path, newline):
    target = tmp_path / "endings.py"
    target.write_bytes((BAD + "x = 1\n").replace("\n", newline).encode())
    checked, fixed = check_and_fix(tmp_path, "endings.py")
    assert [(c, r) for p, c, r in reported(checked.stdout) if p == "endings.py"] == [("PIN001", 5)]
    raw = target.read_bytes()
    assert b"zeros_pinned" in raw
    other = {"\r\n": [b"\n", b"\r"], "\r": [b"\n"]}[newline]
    stripped = raw.replace(newline.encode(), b"")
    assert not any(o in stripped for o in other), f"mixed line endings after the fix: {raw!r}"
    assert raw.endswith(("x = 1" + newline).encode()), f"the last line lost its ending: {raw[-20:]!r}"


def test_nul_bytes_are_pin000_and_left_alone(tmp_path):
    data = BAD.encode() + b"x = 1\x00\n"
    target = tmp_path / "nul.py"
    target.write_bytes(data)
    checked, fixed = check_and_fix(tmp_path, "nul.py")
    assert codes_for(checked.stdout, "nul.py") == ["PIN000"]
    assert "null" in checked.stdout.lower()
    assert target.read_bytes() == data


def test_empty_file(tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    checked, fixed = check_and_fix(tmp_path, "empty.py")
    assert codes_for(checked.stdout, "empty.py") == []
    assert checked.returncode == 1  # the good file's finding
    assert (tmp_path / "empty.py").read_bytes() == b""
    alone = run(tmp_path, "check", "--no-cache", "empty.py")
    assert alone.returncode == 0


@pytest.mark.slow
def test_ten_megabyte_file(tmp_path):
    blob = ("0123456789abcdef" * 4 + "\n") * (10_000_000 // 65)
    data = (BAD + 'DATA = """\n' + blob + '"""\n').encode()
    assert len(data) >= 10_000_000
    target = tmp_path / "huge.py"
    target.write_bytes(data)
    checked, fixed = check_and_fix(tmp_path, "huge.py", timeout=300, process=True)
    assert [(c, r) for p, c, r in reported(checked.stdout) if p == "huge.py"] == [("PIN001", 5)]
    assert fixed.returncode == 0, fixed.stderr
    raw = target.read_bytes()
    assert raw.endswith(blob.encode() + b'"""\n') and b"zeros_pinned" in raw


# ------------------------------------------------------------------ nesting past every parser's limits
# Valid-looking Python nested or chained far past CPython's limits (its parser refuses it with "too
# many nested parentheses", "too many levels of indentation" or a RecursionError). libcst's native
# parser crashes (SIGSEGV) or runs for minutes on most of these if it is asked at all.
DEEP = {
    "parentheses-100k": "x = " + "(" * 100_000 + "1" + ")" * 100_000 + "\n",
    "sum-100k-terms": "x = " + "+".join(["a"] * 100_000) + "\n",
    "ifs-5k-nested": "".join(" " * i + "if x:\n" for i in range(5000)) + " " * 5000 + "pass\n",
    "functions-5k-nested": "".join(" " * i + f"def f{i}():\n" for i in range(5000)) + " " * 5000 + "pass\n",
}
MORE_DEEP = {
    "not-100k": "x = " + "not " * 100_000 + "a\n",
    "unary-minus-100k": "x = " + "-" * 100_000 + "a\n",
    "attribute-chain-100k": "x = a" + ".b" * 100_000 + "\n",
    "call-chain-100k": "x = a" + "()" * 100_000 + "\n",
    "subscript-chain-100k": "x = a" + "[0]" * 100_000 + "\n",
    "lambda-5k": "x = " + "lambda: " * 5000 + "a\n",
    "conditional-20k": "x = " + "a if b else " * 20_000 + "c\n",
    "power-20k": "x = " + "**".join(["a"] * 20_000) + "\n",
    "nested-fstrings-5k": "x = " + 'f"{' * 5000 + "1" + '}"' * 5000 + "\n",
    "lists-5k": "x = " + "[" * 5000 + "]" * 5000 + "\n",
    "dicts-5k": "x = " + "{1: " * 5000 + "1" + "}" * 5000 + "\n",
    "with-5k": "".join(" " * i + "with a:\n" for i in range(5000)) + " " * 5000 + "pass\n",
}
# Valid Python that CPython's parser accepts, long enough to hurt a recursive parser: no crash, no
# hang (a finding, a PIN000 where libcst's grammar gives up, or a one-line warning are all fine).
LONG_BUT_VALID = {
    "comparison-chain-20k": "x = " + " < ".join(["a"] * 20_000) + "\n",
    "implicit-string-concatenation-5k": "x = " + " ".join(['"a"'] * 5000) + "\n",
    "elif-2k": "if a:\n    pass\n" + "elif a:\n    pass\n" * 2000,
    "sum-2k-terms": "x = " + "+".join(["a"] * 2000) + "\n",
    "statements-20k": "x = 1\n" * 20_000,
    "long-line-1M": "x = '" + "a" * 1_000_000 + "'\n",
}


@pytest.mark.parametrize("name", sorted(DEEP), ids=sorted(DEEP))
def test_deep_nesting_is_pin000_not_a_crash(tmp_path, name):
    text = PARSED + DEEP[name]
    target = tmp_path / "deep.py"
    target.write_text(text, encoding="utf-8")
    checked, fixed = check_and_fix(tmp_path, "deep.py", timeout=180, process=True)
    assert_pin000_or_message(checked, "deep.py")
    assert target.read_text(encoding="utf-8") == text


def _many(tmp_path: Path, cases: dict) -> tuple:
    """All cases as files of one folder, checked and fixed in one run each."""
    folder = tmp_path / "cases"
    folder.mkdir()
    for name, body in cases.items():
        (folder / f"{name}.py").write_text(PARSED + body, encoding="utf-8")
    (folder / GOOD).write_text(BAD, encoding="utf-8")
    checked = run(tmp_path, "check", "--no-cache", "--jobs", "1", "cases", timeout=600, process=True)
    assert ("cases/z_good.py", "PIN001", 5) in reported(checked.stdout), "the run went on to the good file"
    fixed = run(tmp_path, "check", "--fix", "--jobs", "1", "cases", timeout=600, process=True)
    assert "zeros_pinned" in (folder / GOOD).read_text(encoding="utf-8")
    for name, body in cases.items():
        assert (folder / f"{name}.py").read_text(encoding="utf-8") == PARSED + body, f"{name} was changed"
    return checked, fixed


def test_more_deep_nesting_and_chains_in_one_run(tmp_path):
    checked, fixed = _many(tmp_path, MORE_DEEP)
    for name in MORE_DEEP:
        assert_pin000_or_message(checked, f"cases/{name}.py")


@pytest.mark.slow
def test_long_valid_programs_do_not_crash_or_hang(tmp_path):
    checked, fixed = _many(tmp_path, LONG_BUT_VALID)
    # Each is checked, or skipped with a one-line warning; the other files are checked and fixed.
    assert checked.returncode in (1, 2) and fixed.returncode in (0, 1, 2)


def test_long_and_chain_does_not_crash(tmp_path):
    text = PARSED + "x = " + " and ".join(["a"] * 20_000) + "\n"
    (tmp_path / "chain.py").write_text(text, encoding="utf-8")
    check_and_fix(tmp_path, "chain.py", timeout=180, process=True)


@pytest.mark.parametrize("operator", ["and", "or", "+"])
def test_long_multiline_chain_is_skipped_with_a_warning(tmp_path, operator):
    # libcst nests each `and` of a chain one level deeper; 20,000 of them overflowed its native
    # parser's stack (SIGSEGV, nothing printed, the whole run gone) however the lines were split.
    text = PARSED + f"x = (a {operator}\n" + f" a {operator}\n" * 20_000 + " a)\n"
    (tmp_path / "chain.py").write_text(text, encoding="utf-8")
    (tmp_path / GOOD).write_text(BAD, encoding="utf-8")
    checked = run(tmp_path, "check", "--no-cache", ".", timeout=180, process=True)
    assert (GOOD, "PIN001", 5) in reported(checked.stdout), "the run went on to the good file"
    assert "pinlint: warning: chain.py: line 3: nested more than 1,000 levels deep" in checked.stderr
    assert checked.returncode == 1


def test_deep_code_on_stdin_is_a_warning_and_passes_through_a_fix(tmp_path):
    text = BAD + "x = " + " + ".join(["a"] * 2500) + "\n"  # Python compiles it; past pinlint's limit
    for args in (("check", "--stdin-filename", "deep.py", "-"), ("check", "--fix", "--stdin-filename", "deep.py")):
        done = subprocess.run([sys.executable, "-m", "pinlint", *args], cwd=tmp_path, input=text,
                              capture_output=True, text=True, timeout=120)
        assert done.stderr == "pinlint: warning: deep.py: line 6: nested more than 1,000 levels deep, past what " \
                              "pinlint parses safely; skipped\n", args
        assert done.returncode == 0, args
        if "--fix" in args:
            assert done.stdout == text


@pytest.mark.slow
def test_long_flat_line_is_checked_not_skipped(tmp_path):
    # A 300,000-character line of a flat literal (generated tables, kernels in one string) is
    # neither deep nor slow for libcst: the file is checked like any other.
    text = BAD + "TABLE = [" + "1, " * 100_000 + "]\n" + "KERNEL = '" + "x" * 500_000 + "'\n"
    (tmp_path / "long.py").write_text(text, encoding="utf-8")
    checked, fixed = check_and_fix(tmp_path, "long.py", timeout=180, process=True)
    assert [(c, r) for p, c, r in reported(checked.stdout) if p == "long.py"] == [("PIN001", 5)]
    assert checked.stderr == ""
    fixed_text = (tmp_path / "long.py").read_text(encoding="utf-8")
    assert "zeros_pinned" in fixed_text and fixed_text.endswith("x" * 500_000 + "'\n")


@pytest.mark.parametrize("body", [
    "x = " + " ".join(['"a"'] * 5000) + "\n",                       # libcst nests each concatenation
    "@(a" + " and a" * 20_000 + ")\ndef f():\n    pass\n",           # a decorator: before the def's span
    "@a" + ".b" * 20_000 + "\nclass C:\n    pass\n",
    "import a" + ".b" * 20_000 + "\n",                               # a flat string in Python's tree
    "from a" + ".b" * 20_000 + " import c\n",
], ids=["implicit-concatenation", "decorated-function", "decorated-class", "import", "import-from"])
def test_what_libcst_nests_and_python_keeps_flat_is_skipped_not_a_crash(tmp_path, body):
    # Each of these crashed the whole run with SIGSEGV (the last four) or became a false PIN000.
    (tmp_path / "deep.py").write_text(PARSED + body, encoding="utf-8")
    (tmp_path / GOOD).write_text(BAD, encoding="utf-8")
    checked = run(tmp_path, "check", "--no-cache", ".", timeout=180, process=True)
    assert [c for p, c, r in reported(checked.stdout) if p == "deep.py"] == []
    assert "pinlint: warning: deep.py: line 3: nested more than 1,000 levels deep" in checked.stderr
    assert (GOOD, "PIN001", 5) in reported(checked.stdout)
    assert checked.returncode == 1


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="needs a Python older than PEP 695 syntax")
def test_newer_syntax_with_a_long_literal_is_still_checked(tmp_path):
    # Python 3.11 rejects `type X = ...`, so the file's depth is bounded from its tokens: a long flat
    # literal must not count, or the file becomes a false PIN000 (found in review).
    text = "type Buffer = list[float]\nTABLE = [" + "1, " * 600 + "]\n" + BAD
    (tmp_path / "newer.py").write_text(text, encoding="utf-8")
    checked, fixed = check_and_fix(tmp_path, "newer.py")
    assert codes_for(checked.stdout, "newer.py") == ["PIN001"]


def test_a_name_too_long_is_an_error_not_a_crash(tmp_path):
    with_good(tmp_path)
    done = run(tmp_path, "check", "--no-cache", "x" * 300 + ".py", GOOD)
    assert ("z_good.py", "PIN001", 5) in reported(done.stdout)
    assert done.returncode == 2 and "File name too long" in done.stderr


def test_python2_syntax_is_pin000_with_pythons_message(tmp_path):
    text = "import cupy as cp\nd = cp.asarray([0])\nprint 'hello'\nexec 'x = 1'\n"
    (tmp_path / "py2.py").write_text(text, encoding="utf-8")
    checked, fixed = check_and_fix(tmp_path, "py2.py")
    assert [(c, r) for p, c, r in reported(checked.stdout) if p == "py2.py"] == [("PIN000", 3)]
    assert "Missing parentheses" in checked.stdout
    assert (tmp_path / "py2.py").read_text(encoding="utf-8") == text


NEWEST = textwrap.dedent('''\
    import numpy as np, cupy as cp
    type Buffer[T] = list[T]
    def first[T](x: T) -> T:
        return x
    class Box[T: (int, float)]:
        pass
    h = np.zeros(1 << 20, dtype=np.float32)
    match h.shape:
        case (n,) if n > 0:
            pass
        case {"k": [1, *rest]}:
            pass
        case _:
            pass
    try:
        pass
    except* ValueError:
        pass
    label = f"{f"{f"{1 + 1}"}"}"
    s = cp.cuda.Stream(non_blocking=True)
    d = cp.empty(1 << 20, dtype=np.float32)
    d.set(h, stream=s)
    ''')


def test_newest_syntax_is_linted_and_fixed(tmp_path):
    """PEP 695 generics and `type`, match, except*, 3.12's nested f-strings: not PIN000, even on a
    Python older than the syntax; the finding is reported and the fix keeps the new syntax."""
    target = tmp_path / "new.py"
    target.write_text(NEWEST, encoding="utf-8")
    checked, fixed = check_and_fix(tmp_path, "new.py")
    assert [(c, r) for p, c, r in reported(checked.stdout) if p == "new.py"] == [("PIN001", 22)]
    text = target.read_text(encoding="utf-8")
    assert "zeros_pinned" in text
    unfixed = text.replace("import cupyx\n", "").replace("cupyx.zeros_pinned", "np.zeros")
    assert [l for l in unfixed.splitlines() if l.strip()] == [l for l in NEWEST.splitlines() if l.strip()]


# ------------------------------------------------------------------ paths
def test_symlink_loops_in_a_folder(tmp_path):
    folder = tmp_path / "tree"
    folder.mkdir()
    (folder / "loop").symlink_to(folder, target_is_directory=True)        # loop -> .
    (folder / "sub").mkdir()
    (folder / "sub" / "up").symlink_to(folder, target_is_directory=True)  # sub/up -> ..
    (folder / "bad.py").write_text(BAD, encoding="utf-8")
    done = run(tmp_path, "check", "--no-cache", "tree", timeout=60)
    assert reported(done.stdout) == [("tree/bad.py", "PIN001", 5)], "each file once, the walk ends"
    assert done.returncode == 1
    fixed = run(tmp_path, "check", "--fix", "tree", timeout=60)
    assert fixed.returncode == 0 and "zeros_pinned" in (folder / "bad.py").read_text(encoding="utf-8")


def test_fixing_through_a_symbolic_link_fixes_the_target_and_keeps_the_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "target.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "link.py").symlink_to(Path("real") / "target.py")
    done = run(tmp_path, "check", "--fix", "link.py")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "link.py").is_symlink(), "the link was replaced by a regular file"
    assert "zeros_pinned" in (real / "target.py").read_text(encoding="utf-8")
    assert sorted(p.name for p in real.iterdir()) == ["target.py"], "no temporary file left behind"


def test_symlink_loop_named_on_the_command_line_after_a_good_file(tmp_path):
    (tmp_path / "self.py").symlink_to("self.py")
    (tmp_path / "a.py").symlink_to("b.py")
    (tmp_path / "b.py").symlink_to("a.py")
    with_good(tmp_path)
    done = run(tmp_path, "check", "--no-cache", GOOD, "self.py", "a.py")
    assert ("z_good.py", "PIN001", 5) in reported(done.stdout)
    assert done.returncode == 2
    assert [l for l in done.stderr.splitlines() if "self.py" in l] and [l for l in done.stderr.splitlines()
                                                                        if "a.py" in l]


def test_symlink_loop_named_first_on_the_command_line(tmp_path):
    (tmp_path / "self.py").symlink_to("self.py")
    with_good(tmp_path)
    done = run(tmp_path, "check", "--no-cache", "self.py", GOOD)
    assert "internal error" not in done.stderr
    assert ("z_good.py", "PIN001", 5) in reported(done.stdout)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1


def test_symlink_loop_file_in_a_folder_is_mentioned(tmp_path):
    folder = tmp_path / "tree"
    folder.mkdir()
    (folder / "self.py").symlink_to("self.py")
    (folder / "bad.py").write_text(BAD, encoding="utf-8")
    (folder / "gone.py").symlink_to("missing.py")
    (folder / "ignored.py").symlink_to("ignored.py")
    (tmp_path / ".gitignore").write_text("tree/ignored.py\n", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    done = run(tmp_path, "check", "--no-cache", "tree")
    assert ("tree/bad.py", "PIN001", 5) in reported(done.stdout)
    # Met while walking, they are warnings (the exit code stays the findings' one); gitignored: silence.
    assert done.stderr.splitlines() == [
        "pinlint: warning: tree/gone.py: a broken symbolic link (No such file or directory); skipped",
        "pinlint: warning: tree/self.py: a symbolic link loop; skipped"]
    assert done.returncode == 1
    named = run(tmp_path, "check", "--no-cache", "tree/self.py", "tree/bad.py")
    assert named.stderr.splitlines() == ["pinlint: error: tree/self.py: a symbolic link loop"]
    assert named.returncode == 2


def test_fifo_named_py_does_not_block(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    os.mkfifo(tmp_path / "pipe.py")
    with_good(tmp_path)
    done = run(tmp_path, "check", "--no-cache", "pipe.py", GOOD, timeout=60, process=True)
    assert ("z_good.py", "PIN001", 5) in reported(done.stdout)
    assert done.returncode == 2 and "pipe.py" in done.stderr
    walked = run(tmp_path, "check", "--no-cache", ".", timeout=60, process=True)  # in a folder: not a source file, skipped
    assert walked.returncode == 1 and ("z_good.py", "PIN001", 5) in reported(walked.stdout)


def test_directory_named_like_a_python_file(tmp_path):
    (tmp_path / "pkg.py").mkdir()
    (tmp_path / "pkg.py" / "inner.py").write_text(BAD, encoding="utf-8")
    walked = run(tmp_path, "check", "--no-cache", ".")
    assert sorted(p for p, _, _ in reported(walked.stdout)) == ["pkg.py/inner.py", "z_good.py"] \
        if (tmp_path / GOOD).exists() else ["pkg.py/inner.py"]
    checked, fixed = check_and_fix(tmp_path, "pkg.py")
    assert ("pkg.py/inner.py", "PIN001", 5) in reported(checked.stdout)
    assert (tmp_path / "pkg.py").is_dir() and "zeros_pinned" in (tmp_path / "pkg.py" / "inner.py").read_text()


def test_spaces_and_non_ascii_names(tmp_path):
    folder = tmp_path / "my project" / "données ü"
    folder.mkdir(parents=True)
    name = "ünïcødé файл 東京.py"
    (folder / name).write_text(BAD, encoding="utf-8")
    done = run(tmp_path, "check", "--no-cache", "my project")
    assert reported(done.stdout) == [(f"my project/données ü/{name}", "PIN001", 5)]
    fixed = run(tmp_path, "check", "--fix", f"my project/données ü/{name}")
    assert fixed.returncode == 0 and "zeros_pinned" in (folder / name).read_text(encoding="utf-8")
    json_out = run(tmp_path, "check", "--no-cache", "--format", "json", "my project")
    assert json_out.returncode == 0


def _undecodable_name(tmp_path: Path) -> str:
    try:
        with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.py"), "wb") as handle:
            handle.write(BAD.encode())
    except (OSError, ValueError):
        pytest.skip("this file system does not take file names that are not UTF-8")
    return os.fsdecode(b"caf\xe9.py")


def test_file_name_that_is_not_utf8(tmp_path):
    """Legacy latin-1 file names on Linux: reported (Python's surrogate escapes), fixed, no crash."""
    name = _undecodable_name(tmp_path)
    with_good(tmp_path)
    done = run(tmp_path, "check", "--no-cache", ".")
    assert done.returncode == 1 and ("z_good.py", "PIN001", 5) in reported(done.stdout)
    assert len(reported(done.stdout)) == 2
    fixed = run(tmp_path, "check", "--fix", ".")
    assert fixed.returncode == 0 and "zeros_pinned" in (tmp_path / name).read_text(encoding="utf-8")


def test_file_name_that_is_not_utf8_with_strict_stdout(tmp_path):
    _undecodable_name(tmp_path)
    with_good(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pinlint", "check", "--no-cache", "."], cwd=tmp_path,
                          capture_output=True, timeout=120, env=dict(os.environ, PYTHONIOENCODING="utf-8"))
    stdout = done.stdout.decode("utf-8", "replace")
    assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr, done.stderr
    assert done.returncode == 1 and ("z_good.py", "PIN001", 5) in reported(stdout)


def test_missing_path_next_to_a_good_file(tmp_path):
    with_good(tmp_path)
    done = run(tmp_path, "check", "--no-cache", "nowhere.py", GOOD)
    assert ("z_good.py", "PIN001", 5) in reported(done.stdout)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "nowhere.py" in done.stderr


# ------------------------------------------------------------------ permissions, for real
# Root reads and writes everything, so under root (as in CI) these run pinlint as the unprivileged
# user `nobody` (runuser, a Python of the same version that `nobody` may execute, and this
# environment's site-packages on PYTHONPATH); when that is impossible they skip, saying why.
@functools.lru_cache(maxsize=1)
def _unprivileged() -> tuple:
    """(command prefix, environment, reason): how to run Python as `nobody`; reason is None when possible."""
    if not IS_ROOT:
        return [sys.executable], dict(os.environ), None
    try:
        import pwd
        pwd.getpwnam("nobody")
    except (ImportError, KeyError):
        return None, None, ROOT_REASON + "; there is no user `nobody` to run as"
    runuser = shutil.which("runuser")
    if runuser is None:
        return None, None, ROOT_REASON + "; runuser is not installed"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    paths = sysconfig.get_paths()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), paths["purelib"], paths["platlib"]]),
               HOME="/tmp", PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1")
    for python in (sys.executable, f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        if not os.path.exists(python):
            continue
        prefix = [runuser, "-u", "nobody", "--", python]
        probe = subprocess.run([*prefix, "-c", f"import sys; assert sys.version_info[:2] == {sys.version_info[:2]}; "
                                              "import pinlint.cli, libcst"],
                               env=env, capture_output=True, text=True, cwd="/", timeout=60)
        if probe.returncode == 0:
            return prefix, env, None
    return None, None, ROOT_REASON + f"; no Python {version} that `nobody` may run can import pinlint here"


@pytest.fixture
def limited():
    """(folder, run): a folder `nobody` owns and a runner of pinlint as `nobody` (or as the user, when
    not root)."""
    prefix, env, reason = _unprivileged()
    if reason is not None:
        pytest.skip(reason)
    folder = Path(tempfile.mkdtemp(prefix="pinlint-perm-"))
    if IS_ROOT:
        import pwd
        nobody = pwd.getpwnam("nobody")
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    folder.chmod(0o755)

    def run_limited(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([*prefix, "-m", "pinlint", *args], cwd=folder, env=env, capture_output=True,
                              text=True, timeout=120)
        assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
        for line in done.stderr.splitlines():
            assert MESSAGE.match(line), f"stderr line is not a one-line pinlint message: {line!r}"
        return done

    def own(path: Path) -> None:
        if IS_ROOT:
            import pwd
            nobody = pwd.getpwnam("nobody")
            os.chown(path, nobody.pw_uid, nobody.pw_gid)

    run_limited.own = own
    try:
        yield folder, run_limited
    finally:
        for path in [folder, *folder.rglob("*")]:
            try:
                path.chmod(0o755)
            except OSError:
                pass
        shutil.rmtree(folder, ignore_errors=True)


def test_unreadable_file(limited):
    folder, run_limited = limited
    secret = folder / "secret.py"
    secret.write_text(BAD, encoding="utf-8")
    good = with_good(folder)
    run_limited.own(good)
    secret.chmod(0)
    checked = run_limited("check", "--no-cache", "secret.py", GOOD)
    fixed = run_limited("check", "--fix", "secret.py", GOOD)
    assert ("z_good.py", "PIN001", 5) in reported(checked.stdout)
    assert checked.returncode == 2 and [l for l in checked.stderr.splitlines() if "secret.py" in l and "ermission" in l]
    assert fixed.returncode == 2 and fixed_good(folder)
    secret.chmod(0o644)
    assert secret.read_text(encoding="utf-8") == BAD


UNREADABLE_FOLDER_BUG = ("BUG: a folder pinlint may not read ends the whole run with 'internal error: "
                         "PermissionError: [Errno 13] Permission denied: 'closed/pyvenv.cfg'' (discover's virtual-"
                         "environment test calls Path.is_file() inside it, which raises EACCES); no file is reported")


def test_unreadable_folder(limited):
    folder, run_limited = limited
    closed = folder / "closed"
    closed.mkdir()
    (closed / "bad.py").write_text(BAD, encoding="utf-8")
    with_good(folder)
    closed.chmod(0)
    done = run_limited("check", "--no-cache", ".")
    assert ("z_good.py", "PIN001", 5) in reported(done.stdout)
    assert done.returncode == 2 and [l for l in done.stderr.splitlines() if "closed" in l]


def test_read_only_folder_cannot_be_fixed_and_is_intact(limited):
    folder, run_limited = limited
    target = folder / "ro.py"
    target.write_text(BAD, encoding="utf-8")
    run_limited.own(target)
    folder.chmod(0o555)  # no new files in the folder: the atomic write cannot start
    done = run_limited("check", "--fix", "ro.py")
    folder.chmod(0o755)
    assert done.returncode == 2 and [l for l in done.stderr.splitlines() if "ro.py" in l]
    assert target.read_text(encoding="utf-8") == BAD
    assert sorted(p.name for p in folder.iterdir()) == ["ro.py"], "no temporary file is left behind"


def test_read_only_file_is_not_rewritten(limited):
    folder, run_limited = limited
    target = folder / "ro.py"
    target.write_text(BAD, encoding="utf-8")
    run_limited.own(target)
    target.chmod(0o444)
    done = run_limited("check", "--fix", "ro.py")
    assert target.read_text(encoding="utf-8") == BAD, "the read-only file was rewritten"
    assert done.returncode == 2 and [l for l in done.stderr.splitlines() if "ro.py" in l]


# ------------------------------------------------------------------ the same situations, simulated in-process
def run_in_process(monkeypatch, capsys, cwd: Path, *args: str) -> tuple:
    """helpers.run_in_process, and every stderr line a one-line pinlint message."""
    code, out, err = helpers.run_in_process(monkeypatch, capsys, cwd, *args)
    for line in err.splitlines():
        assert MESSAGE.match(line), f"stderr line is not a one-line pinlint message: {line!r}"
    return code, out, err


def _deny(monkeypatch, name: str, exc: OSError) -> None:
    """Reads of the file called ``name`` fail with ``exc`` (however pinlint reads it)."""
    real_read_bytes = Path.read_bytes
    real_open = io.open

    def read_bytes(self):
        if self.name == name:
            raise exc
        return real_read_bytes(self)

    def fake_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.path.basename(os.fspath(file)) == name:
            raise exc
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setattr("builtins.open", fake_open)


@pytest.mark.parametrize("mode", [[], ["--fix"]], ids=["check", "fix"])
def test_simulated_unreadable_file(tmp_path, monkeypatch, capsys, mode):
    (tmp_path / "secret.py").write_text(BAD, encoding="utf-8")
    with_good(tmp_path)
    _deny(monkeypatch, "secret.py", PermissionError(13, "Permission denied", "secret.py"))
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--jobs", "1", *mode,
                                    "secret.py", GOOD)
    assert code == 2
    assert [l for l in err.splitlines() if "secret.py" in l and "Permission denied" in l]
    if mode:
        assert fixed_good(tmp_path)
    else:
        assert ("z_good.py", "PIN001", 5) in reported(out)
    assert (tmp_path / "secret.py").read_text(encoding="utf-8") == BAD


def test_simulated_file_vanishing_between_discovery_and_reading(tmp_path, monkeypatch, capsys):
    (tmp_path / "gone.py").write_text(BAD, encoding="utf-8")
    with_good(tmp_path)
    _deny(monkeypatch, "gone.py", FileNotFoundError(2, "No such file or directory", "gone.py"))
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--jobs", "1", ".")
    assert code == 2 and "gone.py" in err
    assert ("z_good.py", "PIN001", 5) in reported(out)


def _inside(folder: str, path) -> bool:
    """Whether ``path`` (not a file descriptor) lies inside a folder named ``folder``."""
    return not isinstance(path, int) and folder in Path(os.path.abspath(os.fspath(path))).parts[:-1]


def _deny_inside(monkeypatch, folder: str, *functions: str) -> None:
    """The ``os`` functions named fail with EACCES for anything inside ``folder``."""
    for name in functions:
        real = getattr(os, name)

        def denied(path, *args, _real=real, **kwargs):
            if _inside(folder, path):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, denied)


def test_simulated_unreadable_folder(tmp_path, monkeypatch, capsys):
    """What a mode-000 folder does to a non-root user: listing it and looking at anything inside fail."""
    closed = tmp_path / "closed"
    closed.mkdir()
    (closed / "bad.py").write_text(BAD, encoding="utf-8")
    with_good(tmp_path)
    real_scandir = os.scandir

    def scandir(path="."):
        if os.path.basename(os.fspath(path).rstrip("/")) == "closed" or _inside("closed", path):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    _deny_inside(monkeypatch, "closed", "stat")
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--jobs", "1", ".")
    assert code == 2
    assert [l for l in err.splitlines() if "closed" in l and "Permission denied" in l and "internal" not in l]
    assert ("z_good.py", "PIN001", 5) in reported(out)


def test_simulated_folder_listed_but_not_entered(tmp_path, monkeypatch, capsys):
    """A folder with read but no search permission (mode 644): its names can be listed, but looking
    at any of them fails. Found in review: that ended the whole run as an internal error."""
    shut = tmp_path / "noexec"
    shut.mkdir()
    (shut / "hidden.py").write_text(BAD, encoding="utf-8")
    with_good(tmp_path)
    _deny_inside(monkeypatch, "noexec", "stat", "lstat")
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--jobs", "1", ".")
    assert "internal error" not in err
    assert ("z_good.py", "PIN001", 5) in reported(out)
    assert code == 1


def test_internal_error_is_one_line_with_how_to_report_it(tmp_path, monkeypatch, capsys):
    """An exception pinlint does not expect (simulated): one line naming it and how to report it, exit 2."""
    from pinlint import engine, runner

    def explode(*args, **kwargs):
        raise KeyError("simulated bug")

    monkeypatch.setattr(engine, "lint_bytes", explode)
    monkeypatch.setattr(runner, "lint_bytes", explode)
    (tmp_path / "a.py").write_text(BAD, encoding="utf-8")
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--jobs", "1", "a.py")
    assert code == 2
    [line] = err.splitlines()
    assert "internal error" in line and "simulated bug" in line and "report" in line


def test_internal_error_in_one_file_does_not_stop_the_others(tmp_path, monkeypatch, capsys):
    """pinlint's own bug on one file (simulated) is reported for that file; the others are still checked."""
    from pinlint import engine, runner

    real = engine.lint_bytes

    def flaky(data, filename, settings):
        if "a_trigger" in filename:
            raise KeyError("simulated bug")
        return real(data, filename, settings)

    monkeypatch.setattr(engine, "lint_bytes", flaky)
    monkeypatch.setattr(runner, "lint_bytes", flaky)
    (tmp_path / "a_trigger.py").write_text(BAD, encoding="utf-8")
    with_good(tmp_path)
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--jobs", "1", ".")
    assert code == 2 and "a_trigger.py" in err and "report" in err
    assert ("z_good.py", "PIN001", 5) in reported(out)


def test_broken_api_table_is_one_line_naming_file_and_key(tmp_path, monkeypatch, capsys):
    """A hand-edited (or damaged) rules/api table: one line saying which table, entry and key, exit 2."""
    import shutil

    from pinlint import apitables

    rules = tmp_path / "rules"
    shutil.copytree(apitables.rules_dir() / "api", rules / "api")
    table = rules / "api" / "numpy.toml"
    table.write_text(table.read_text(encoding="utf-8").replace('effect = "alloc"', 'effect = "aloc"', 1),
                     encoding="utf-8")
    monkeypatch.setattr(apitables, "rules_dir", lambda: rules)
    apitables.default_tables.cache_clear()
    try:
        (tmp_path / "a.py").write_text(BAD, encoding="utf-8")
        code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--jobs", "1", "a.py")
    finally:
        apitables.default_tables.cache_clear()
    assert code == 2
    [line] = err.splitlines()
    assert "invalid API table" in line and "numpy.toml" in line and "aloc" in line and "internal error" not in line
