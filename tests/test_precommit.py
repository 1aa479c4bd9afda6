"""The pre-commit hooks in ``.pre-commit-hooks.yaml``, run by the real ``pre-commit try-repo``.

Needs ``pre-commit`` (``pip install pre-commit``; the dev extra should list it), ``git``, and access to
the package index: pre-commit builds the hooks' environment with ``pip install .`` of this repository.
Skipped with a reason when pre-commit or git is missing, or when that install cannot reach the index.

What try-repo installs: for a local path it uses the repository's HEAD; when the working tree has
uncommitted changes it clones HEAD into a shadow repository and commits there the staged files and the
*modified tracked* files (``git add -u``). New files that were never added are left out, so try-repo
on a checkout with new, unstaged modules would test a broken mixture. The tests therefore snapshot the
working tree as it is (tracked and untracked files, minus what .gitignore ignores) into a fresh
repository with one commit, and point try-repo there: the hooks run exactly the code under test,
whatever the state of git in the checkout.

The user's repository names that snapshot in its own `.pre-commit-config.yaml` (``repo:`` the
snapshot's path, ``rev:`` its commit) and runs `pre-commit run`, as a user's commit would. pre-commit
keeps the hooks' environment in its store (``PRE_COMMIT_HOME``) by repository and revision, and the
store lives for the whole session: the environment (``pip install .``, 10-15 s) is built once, not
once per scenario as `pre-commit try-repo`'s fresh store did.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import BAD

# Every test here builds (once) and runs pre-commit's own environment for the hooks: seconds each.
pytestmark = pytest.mark.slow

pytest.importorskip("pre_commit", reason="pre-commit is not installed: `pip install pre-commit` "
                                         "(add `pre-commit>=3.2` to the dev extra) to run the hook tests")
if shutil.which("git") is None:  # pragma: no cover - git is everywhere pre-commit is
    pytest.skip("git is not installed; pre-commit needs it", allow_module_level=True)

REPO = Path(__file__).resolve().parent.parent

GOOD = textwrap.dedent("""\
    import numpy as np, cupy as cp, cupyx
    h = cupyx.empty_pinned(1 << 20, dtype=np.float32)
    d = cp.empty(1 << 20, dtype=np.float32)
    d.set(h, stream=cp.cuda.Stream(non_blocking=True))
    """)

# Signs that pip could not reach the package index (then the test skips rather than fails).
OFFLINE = ("Temporary failure in name resolution", "Network is unreachable", "NewConnectionError",
           "No matching distribution found", "Could not find a version that satisfies",
           "Failed to establish a new connection", "ProxyError", "ConnectTimeoutError")


def _env(home: Path) -> dict:
    env = dict(os.environ)
    env.update(GIT_AUTHOR_NAME="pinlint tests", GIT_AUTHOR_EMAIL="tests@example.invalid",
               GIT_COMMITTER_NAME="pinlint tests", GIT_COMMITTER_EMAIL="tests@example.invalid",
               PRE_COMMIT_HOME=str(home / "pre-commit-home"), PRE_COMMIT_COLOR="never")
    env.pop("SKIP", None)
    return env


def git(cwd: Path, env: dict, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="session")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory, home) -> Path:
    """The working tree of this checkout, committed into a repository of its own."""
    env = _env(home)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    if listed.returncode != 0:
        pytest.skip(f"the checkout is not a git work tree ({listed.stderr.strip()})")
    snapshot = tmp_path_factory.mktemp("hook-repo")
    for name in filter(None, listed.stdout.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            target = snapshot / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    assert (snapshot / ".pre-commit-hooks.yaml").is_file()
    git(snapshot, env, "init", "-q")
    git(snapshot, env, "add", "-A")
    git(snapshot, env, "commit", "-q", "--no-verify", "-m", "snapshot of the working tree")
    return snapshot


def make_target(root: Path, env: dict, files: dict) -> Path:
    """A user's repository with ``files`` staged (nothing committed yet)."""
    root.mkdir()
    git(root, env, "init", "-q")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(root, env, "add", "-A")
    return root


def try_repo(target: Path, hook_repo: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    """Both hooks of the snapshot on the target's staged files, through the target's own config."""
    env = _env(home)
    rev = git(hook_repo, env, "rev-parse", "HEAD").strip()
    config = target / ".pre-commit-config.yaml"
    config.write_text(f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n"
                      "      - id: pinlint\n      - id: pinlint-fix\n", encoding="utf-8")
    git(target, env, "add", ".pre-commit-config.yaml")  # pre-commit refuses an unstaged config
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", *args, "--color", "never"], cwd=target,
                          env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    if "An unexpected error has occurred" in output:
        log = home / "pre-commit-home" / "pre-commit.log"
        details = output + (log.read_text(encoding="utf-8", errors="replace") if log.is_file() else "")
        if any(sign in details for sign in OFFLINE):
            pytest.skip("pre-commit could not install the hook environment: the package index is not "
                        "reachable")
        assert "An unexpected error has occurred" not in output, details
    return proc


def hook_sections(stdout: str) -> dict:
    """{hook id: (status, text of its section)} from pre-commit's report."""
    sections: dict = {}
    current = None
    status_line = None
    for line in stdout.splitlines():
        if line.startswith("pinlint") and line.rstrip().endswith(("Passed", "Failed", "Skipped")):
            status_line = line
            current = None
            continue
        if line.startswith("- hook id: "):
            current = line[len("- hook id: "):].strip()
            sections[current] = [status_line, []]
            continue
        if current is not None:
            sections[current][1].append(line)
    return {hook: (status, "\n".join(body)) for hook, (status, body) in sections.items()}


def statuses(stdout: str) -> dict:
    """{hook name as printed: status} for every pinlint hook line."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("pinlint") and line.rstrip().endswith(("Passed", "Failed", "Skipped")):
            name = line.split(".", 1)[0].strip()
            out[name] = line.rstrip().rsplit(".", 1)[-1].replace("(no files to check)", "").strip()
            if "(no files to check)" in line:
                out[name] = "Skipped (no files to check)"
    return out


def test_bad_staged_file_fails_both_hooks_and_the_fix_hook_rewrites_it(tmp_path, hook_repo, home):
    env = _env(home)
    target = make_target(tmp_path / "user", env, {"src/bad.py": BAD, "src/good.py": GOOD})
    proc = try_repo(target, hook_repo, home)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert statuses(proc.stdout) == {"pinlint": "Failed", "pinlint (fix)": "Failed"}, proc.stdout
    sections = hook_sections(proc.stdout)

    # `pinlint` prints the finding and exits 1; the clean file is not mentioned.
    status, text = sections["pinlint"]
    assert "- exit code: 1" in text
    assert "src/bad.py:5:1: PIN001" in text
    assert "good.py" not in text

    # `pinlint-fix` rewrites the staged file; pre-commit fails the commit because files changed.
    status, text = sections["pinlint-fix"]
    assert "- files were modified by this hook" in text
    assert "1 fixed, 0 remaining" in text
    fixed = (target / "src" / "bad.py").read_text(encoding="utf-8")
    assert "cupyx.zeros_pinned(1 << 20, dtype=np.float32)" in fixed and "np.zeros" not in fixed
    assert (target / "src" / "good.py").read_text(encoding="utf-8") == GOOD
    # The fix is in the working tree, not in the index: the user reviews and stages it.
    assert "src/bad.py" in git(target, env, "diff", "--name-only")


def test_clean_and_excluded_staged_files_pass(tmp_path, hook_repo, home):
    """The hooks pass --force-exclude: a staged file in a configured exclude is skipped, not checked."""
    env = _env(home)
    pyproject = '[tool.pinlint]\nextend-exclude = ["legacy"]\n'
    target = make_target(tmp_path / "user", env, {"src/good.py": GOOD, "legacy/old.py": BAD,
                                                  "pyproject.toml": pyproject})
    proc = try_repo(target, hook_repo, home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(proc.stdout) == {"pinlint": "Passed", "pinlint (fix)": "Passed"}, proc.stdout
    assert (target / "legacy" / "old.py").read_text(encoding="utf-8") == BAD
    assert git(target, env, "diff", "--name-only") == ""


def test_no_python_files_staged_skips_both_hooks(tmp_path, hook_repo, home):
    env = _env(home)
    target = make_target(tmp_path / "user", env, {"notes.txt": "import cupy\n", "data.json": "{}\n",
                                                  "kernels/k.cu": "__global__ void k() {}\n"})
    proc = try_repo(target, hook_repo, home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(proc.stdout) == {"pinlint": "Skipped (no files to check)",
                                     "pinlint (fix)": "Skipped (no files to check)"}, proc.stdout
