"""`pinlint server`, driven as an editor drives it: a subprocess speaking JSON-RPC with Content-Length
headers over its stdin/stdout. Each conversation has a time budget, so a broken server fails the test
instead of hanging the suite."""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pinlint.engine import fix_text, lint_text
from pinlint.model import Edit, Location
from pinlint.server import MISSING_PYGLS, TextIndex, uri_to_path
from pinlint.settings import Settings

HAVE_PYGLS = importlib.util.find_spec("pygls") is not None and importlib.util.find_spec("lsprotocol") is not None
needs_pygls = pytest.mark.skipif(not HAVE_PYGLS, reason="pygls is not installed: `pip install -e '.[lsp]'` "
                                                        "to test the language server")

REPO = Path(__file__).resolve().parents[1]
SERVE = "from pinlint.server import serve; serve()"

PROGRAM = """\
import numpy as np
import cupy as cp

h = np.empty(1 << 26, dtype=np.float32)
d = cp.empty_like(h)
s = cp.cuda.Stream(non_blocking=True)
d.set(h, stream=s)
"""
RACY = PROGRAM + "h[0] = 1\n"  # the CPU writes the buffer after the copy: pinning is an unsafe fix
CLEAN = "import cupy as cp\n\nd = cp.zeros(4)\n"
BROKEN = "import cupy as cp\n\ndef f(:\n    pass\n"

CLIENT_CAPABILITIES = {
    "workspace": {"workspaceEdit": {"documentChanges": True}},
    "textDocument": {
        "synchronization": {"didSave": True},
        "publishDiagnostics": {"relatedInformation": True, "versionSupport": True},
        "codeAction": {
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source", "source.fixAll"]}},
            "dataSupport": True,
            "resolveSupport": {"properties": ["edit"]},
            "isPreferredSupport": True,
        },
    },
}


# ------------------------------------------------------------------------------ a tiny LSP client
class Client:
    def __init__(self, budget: float, code: str = SERVE, cwd: Path = REPO) -> None:
        self.deadline = time.monotonic() + budget
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd, env=env)
        self.inbox: queue.Queue = queue.Queue()
        self.notifications: list = []
        self.responses: dict = {}
        self.stderr: list = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self) -> None:
        stream = self.proc.stdout
        try:
            while True:
                length = None
                while True:
                    line = stream.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                self.inbox.put(json.loads(stream.read(length)))
        finally:
            self.inbox.put(None)

    def send(self, payload: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **payload}).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params=None) -> None:
        self.send({"method": method, "params": params})

    def _pump(self) -> None:
        """Take one message from the server (failing when the budget is spent or the server ended)."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"the server did not answer in time; stderr:\n{self.stderr_text()}")
        try:
            message = self.inbox.get(timeout=remaining)
        except queue.Empty:
            raise AssertionError(f"the server did not answer in time; stderr:\n{self.stderr_text()}") from None
        if message is None:
            self.inbox.put(None)
            raise AssertionError(f"the server closed its output; stderr:\n{self.stderr_text()}")
        if "method" in message and "id" in message:   # a request from the server: answer it
            self.send({"id": message["id"], "result": None})
        elif "method" in message:
            self.notifications.append(message)
        else:
            self.responses[message["id"]] = message

    def request(self, method: str, params=None):
        self.next_id += 1
        ident = self.next_id
        self.send({"id": ident, "method": method, "params": params})
        while ident not in self.responses:
            self._pump()
        response = self.responses.pop(ident)
        assert "error" not in response, response
        return response["result"]

    def wait_for(self, method: str, predicate=lambda params: True) -> dict:
        """The first notification (not yet taken) of ``method`` whose params satisfy ``predicate``."""
        while True:
            for index, message in enumerate(self.notifications):
                if message["method"] == method and predicate(message["params"]):
                    del self.notifications[index]
                    return message["params"]
            self._pump()

    def diagnostics(self, uri: str, version: int) -> list:
        params = self.wait_for("textDocument/publishDiagnostics",
                               lambda p: p["uri"] == uri and p.get("version") == version)
        return params["diagnostics"]

    def stderr_text(self) -> str:
        return b"".join(self.stderr).decode("utf-8", "replace")

    def initialize(self, root: Path) -> dict:
        result = self.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                             "capabilities": CLIENT_CAPABILITIES})
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str, version: int = 1, language: str = "python") -> list:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language,
                                                              "version": version, "text": text}})
        return self.diagnostics(uri, version)

    def change(self, uri: str, text: str, version: int) -> list:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})
        return self.diagnostics(uri, version)

    def code_actions(self, uri: str, rng: dict, diagnostics: list = (), only=None) -> list:
        context = {"diagnostics": list(diagnostics), **({"only": only} if only else {})}
        return self.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": rng,
                                                        "context": context}) or []

    def shutdown(self) -> int:
        assert self.request("shutdown") is None
        self.notify("exit")
        try:
            return self.proc.wait(timeout=max(5.0, self.deadline - time.monotonic()))  # 5 s: a loaded machine
        except subprocess.TimeoutExpired:
            raise AssertionError("the server did not end after exit") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


@pytest.fixture
def client_factory():
    clients: list = []

    def make(budget: float, **kwargs) -> Client:
        clients.append(Client(budget, **kwargs))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


def lsp_range(start, end) -> dict:
    """A 0-based LSP range from 1-based pinlint locations (ASCII text: columns are the same units)."""
    return {"start": {"line": start.row - 1, "character": start.column - 1},
            "end": {"line": end.row - 1, "character": end.column - 1}}


def apply_text_edits(text: str, edits: list) -> str:
    """Apply LSP TextEdits (ASCII text, \\n line ends) as a client does: all against the original."""
    starts = [0]
    for line in text.split("\n")[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(position: dict) -> int:
        if position["line"] >= len(starts):
            return len(text)
        return min(starts[position["line"]] + position["character"], len(text))

    spans = sorted(((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits),
                   reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def edits_of(workspace_edit: dict, uri: str, version: int) -> list:
    (change,) = workspace_edit["documentChanges"]
    assert change["textDocument"] == {"uri": uri, "version": version}
    return change["edits"]


# ------------------------------------------------------------------------------ the conversation
@needs_pygls
def test_diagnostics_fixes_and_shutdown(tmp_path, client_factory):
    client = client_factory(60.0, cwd=tmp_path)  # a hang guard: generous for a loaded machine
    init = client.initialize(tmp_path)
    capabilities = init["capabilities"]
    assert init["serverInfo"]["name"] == "pinlint"
    assert capabilities["textDocumentSync"]["openClose"] is True
    assert set(capabilities["codeActionProvider"]["codeActionKinds"]) >= {"quickfix", "source.fixAll.pinlint"}

    path = tmp_path / "copy.py"
    uri = path.as_uri()
    expected = lint_text(PROGRAM, str(path), Settings()).findings
    assert [f.code for f in expected] == ["PIN001"]
    finding = expected[0]

    # didOpen: the PIN001 diagnostic, 0-based, with the allocation site as related information
    (diag,) = client.open(uri, PROGRAM, version=1)
    assert diag["code"] == "PIN001"
    assert diag["source"] == "pinlint"
    assert diag["severity"] == 2
    assert diag["message"] == finding.message
    assert diag["range"] == lsp_range(finding.location, finding.end_location) == \
        {"start": {"line": 6, "character": 0}, "end": {"line": 6, "character": 18}}
    (related,) = diag["relatedInformation"]
    assert related["location"] == {"uri": uri, "range": lsp_range(finding.related[0].location,
                                                                   finding.related[0].end_location)}
    assert related["location"]["range"]["start"] == {"line": 3, "character": 4}
    assert diag["data"]["fix"]["applicability"] == "safe"
    assert diag["codeDescription"]["href"].endswith("PIN001.md")

    # codeAction on the diagnostic: a preferred quickfix giving the pinned rewrite, plus fix-all
    actions = client.code_actions(uri, diag["range"], [diag])
    quick = [a for a in actions if a["kind"] == "quickfix"]
    assert len(quick) == 1, actions
    action = quick[0]
    assert action["title"] == f"pinlint: {finding.fix.message} (safe)"
    assert action["isPreferred"] is True
    assert action["diagnostics"][0]["code"] == "PIN001"
    fixed = apply_text_edits(PROGRAM, edits_of(action["edit"], uri, 1))
    assert "h = cupyx.empty_pinned(1 << 26, dtype=np.float32)" in fixed
    assert fixed == fix_text(PROGRAM, str(path), Settings(), unsafe=False).text

    # the fix-all action is resolved lazily (the client supports resolving `edit`)
    (fix_all,) = [a for a in actions if a["kind"] == "source.fixAll.pinlint"]
    assert fix_all["title"] == "pinlint: fix all safe fixes" and "edit" not in fix_all
    resolved = client.request("codeAction/resolve", fix_all)
    (whole,) = edits_of(resolved["edit"], uri, 1)
    assert whole["range"]["start"] == {"line": 0, "character": 0}
    assert apply_text_edits(PROGRAM, [whole]) == fixed
    # asked for source.fixAll only (as on save): no quick fixes
    only = client.code_actions(uri, {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                               only=["source.fixAll"])
    assert [a["kind"] for a in only] == ["source.fixAll.pinlint"]
    # away from the finding: no quick fix
    elsewhere = client.code_actions(uri, {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}})
    assert all(a["kind"] != "quickfix" for a in elsewhere)

    # an unsafe fix: its own kind, never preferred, and no safe fix to apply for fix-all
    racy = (tmp_path / "racy.py").as_uri()
    (racy_diag,) = client.open(racy, RACY, version=1)
    assert racy_diag["data"]["fix"]["applicability"] == "unsafe"
    (unsafe,) = client.code_actions(racy, racy_diag["range"], [racy_diag])
    assert unsafe["kind"] == "quickfix.pinlint.unsafe"
    assert unsafe["isPreferred"] is False
    assert unsafe["title"].endswith("(unsafe)")
    assert "cupyx.empty_pinned" in apply_text_edits(RACY, edits_of(unsafe["edit"], racy, 1))

    # didChange to a clean text: empty diagnostics; to a text that does not parse: PIN000
    assert client.change(uri, CLEAN, version=2) == []
    assert client.code_actions(uri, {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}) == []
    (syntax,) = client.change(uri, BROKEN, version=3)
    assert syntax["code"] == "PIN000"
    assert syntax["severity"] == 1
    assert syntax["message"].startswith("SyntaxError")
    assert syntax["range"]["start"]["line"] == 2
    # didSave re-checks; didClose clears
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert [d["code"] for d in client.diagnostics(uri, 3)] == ["PIN000"]
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.wait_for("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)["diagnostics"] == []

    assert client.shutdown() == 0


@needs_pygls
def test_settings_untitled_and_internal_errors(tmp_path, client_factory):
    # the server, with lint_text failing on texts that contain BOOM (an internal error)
    code = ("import pinlint.server as s\n"
            "real = s.lint_text\n"
            "def lint(text, *args, **kwargs):\n"
            "    if 'BOOM' in text:\n"
            "        raise RuntimeError('boom')\n"
            "    return real(text, *args, **kwargs)\n"
            "s.lint_text = lint\n"
            "s.serve()\n")
    client = client_factory(60.0, code=code, cwd=tmp_path)  # a hang guard: generous for a loaded machine
    client.initialize(tmp_path)

    project = tmp_path / "project"
    project.mkdir()
    (project / "pinlint.toml").write_text('[per-file-ignores]\n"ignored_*.py" = ["PIN001"]\n')
    assert [d["code"] for d in client.open((project / "kept.py").as_uri(), PROGRAM)] == ["PIN001"]
    assert client.open((project / "ignored_one.py").as_uri(), PROGRAM) == []

    # untitled documents get the defaults
    assert [d["code"] for d in client.open("untitled:Untitled-1", PROGRAM)] == ["PIN001"]
    # a file that names no GPU library is not parsed (as on the command line); other languages are left alone
    assert client.open((tmp_path / "plain.py").as_uri(), "def f(:\n") == []
    assert client.open((tmp_path / "notes.txt").as_uri(), PROGRAM, language="plaintext") == []

    # a bad configuration: reported to the user, defaults used
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "pinlint.toml").write_text('selct = ["PIN001"]\n')
    assert [d["code"] for d in client.open((bad / "x.py").as_uri(), PROGRAM)] == ["PIN001"]
    shown = client.wait_for("window/showMessage")
    assert "unknown key `selct`" in shown["message"] and shown["type"] == 1
    # ... once, not on every keystroke (the code action's answer comes after the change's messages)
    assert [d["code"] for d in client.change((bad / "x.py").as_uri(), PROGRAM + "\n", version=2)] == ["PIN001"]
    client.code_actions((bad / "x.py").as_uri(), {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}})
    assert not [n for n in client.notifications if n["method"] == "window/showMessage"]

    # an internal error: logged, empty diagnostics, and the server goes on
    boom = (tmp_path / "boom.py").as_uri()
    assert client.open(boom, PROGRAM + "# BOOM\n") == []
    logged = client.wait_for("window/logMessage", lambda p: "internal error" in p["message"])
    assert "RuntimeError: boom" in logged["message"] and logged["type"] == 1
    assert client.code_actions(boom, {"start": {"line": 6, "character": 0}, "end": {"line": 6, "character": 0}}) == []
    assert [d["code"] for d in client.change(boom, PROGRAM, version=2)] == ["PIN001"]

    # code too deep for libcst: no diagnostics, and the log says why (once)
    deep = (tmp_path / "deep.py").as_uri()
    assert client.open(deep, PROGRAM + "x = " + " + ".join(["a"] * 2500) + "\n") == []
    logged = client.wait_for("window/logMessage", lambda p: "nested more than 1,000 levels" in p["message"])
    assert logged["type"] == 3  # info

    assert client.shutdown() == 0


def test_serve_without_pygls():
    code = "import sys; sys.modules['pygls'] = None; sys.modules['lsprotocol'] = None; " + SERVE
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=10, cwd=REPO,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr.strip() == MISSING_PYGLS == "pinlint server needs pygls: pip install 'cuda-pinlint[lsp]'"
    assert done.stdout == ""


# ------------------------------------------------------------------------------ positions
def test_positions_in_utf16_and_odd_line_breaks():
    text = "x = '\u2028\x0c😀'  # é\r\nd.set(h)\rz = 1"
    index = TextIndex(text)
    # libcst rows break only at \n, \r\n and \r, as LSP lines do; columns become UTF-16 code units
    assert index.position(1, 1) == (0, 0)
    assert index.position(1, 10) == (0, 10)          # after the emoji: 2 UTF-16 units
    assert index.position(2, 3) == (1, 2)
    assert index.position(3, 99) == (2, 5)           # clamped to the line
    assert index.position(9, 1) == (2, 0)
    assert TextIndex(text, "utf-32").position(1, 10) == (0, 9)
    assert TextIndex(text, "utf-8").position(1, 10) == (0, 14)
    # fix edits count rows the same way (not as str.splitlines, where \u2028 and \x0c break lines)
    assert index.edit_span(Edit("", Location(2, 1), Location(3, 1))) == ((1, 0), (2, 0))
    assert index.edit_span(Edit("", Location(3, 1), Location(4, 1))) == ((2, 0), (2, 5))  # to past the end
    assert index.whole() == ((0, 0), (2, 5))
    assert TextIndex("a\n").whole() == ((0, 0), (1, 0))


def test_uri_to_path():
    assert uri_to_path("untitled:Untitled-1") is None
    assert uri_to_path(Path("/tmp/a b/c.py").as_uri()) == Path("/tmp/a b/c.py")
