"""``pinlint check --watch``: check, then check again on every change (``watchfiles``, the ``watch``
extra), until Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

from helpers import BAD, default_sigint, run_in_process, write

CLEAN = BAD.replace("d.set(h, stream=s)", "s.synchronize()")  # no copy left: nothing to report


def test_watch_checks_again_after_each_change(tmp_path, monkeypatch, capsys):
    watchfiles = pytest.importorskip("watchfiles")
    bad = write(tmp_path, "src/bad.py", BAD)
    seen: list = []

    def fake_watch(*paths, watch_filter=None, raise_interrupt=True):
        seen.append((paths, watch_filter, raise_interrupt))
        bad.write_text(CLEAN, encoding="utf-8")
        yield {(watchfiles.Change.modified, str(bad))}
        # returning ends the watch, as Ctrl-C does with raise_interrupt=False

    monkeypatch.setattr(watchfiles, "watch", fake_watch)
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--watch", "--no-cache", "src")
    assert code == 0
    first, second = out.split("Found 1 error.\n")
    assert "src/bad.py:5:1: PIN001" in first
    assert second.endswith("All checks passed!\n")
    assert err == ("pinlint: watching for file changes (Ctrl-C to stop)\n"
                   "pinlint: 1 file change; checking again\n")
    [(paths, watch_filter, raise_interrupt)] = seen
    assert paths == ("src",) and raise_interrupt is False
    assert watch_filter(watchfiles.Change.modified, str(tmp_path / "nb.ipynb"))
    assert watch_filter(watchfiles.Change.modified, str(tmp_path / "pyproject.toml"))
    assert not watch_filter(watchfiles.Change.modified, str(tmp_path / "notes.txt"))


def test_watch_without_watchfiles_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "watchfiles", None)  # `import watchfiles` raises ImportError
    write(tmp_path, "bad.py", BAD)
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "-w", ".")
    assert (code, out) == (2, "")
    assert err == 'pinlint: error: --watch needs the watchfiles package: pip install "cuda-pinlint[watch]"\n'


def test_watch_for_real_until_ctrl_c(tmp_path):
    """The real thing: a process that watches a folder, sees a file saved, checks again, and stops
    cleanly on SIGINT."""
    pytest.importorskip("watchfiles")
    bad = write(tmp_path, "bad.py", BAD)
    proc = subprocess.Popen([sys.executable, "-m", "pinlint", "check", "--watch", "--no-cache", "."], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    seen: list = []  # lines of both streams; the two readers may add them in either order
    readers = [threading.Thread(target=lambda s=stream: [seen.append(line) for line in s], daemon=True)
               for stream in (proc.stdout, proc.stderr)]
    for reader in readers:
        reader.start()

    def wait_for(text: str, seconds: float = 60) -> bool:
        deadline = time.monotonic() + seconds
        while not any(text in line for line in list(seen)):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    try:
        assert wait_for("Found 1 error.") and wait_for("watching for file changes"), seen
        # The watcher starts just after saying so: save again until it has seen a save (a loaded machine).
        for _ in range(30):
            bad.write_text(CLEAN, encoding="utf-8")
            if wait_for("checking again", seconds=2):
                break
        assert wait_for("All checks passed!"), seen
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for reader in readers:
            reader.join(timeout=5)
