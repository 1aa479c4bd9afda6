"""Notebooks are linted cell by cell and fixed in place, outputs and layout kept."""

from __future__ import annotations

import json
import subprocess
import sys

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Upload\n"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {"tags": ["setup"]},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ready\n"]}],
         "source": ["import numpy as np\n", "import cupy as cp\n", "%load_ext autoreload"]},
        {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [],
         "source": ["h = np.empty(1 << 20, dtype=np.float32)\n", "d = cp.empty_like(h)\n",
                    "s = cp.cuda.Stream(non_blocking=True)\n", "!nvidia-smi\n", "d.set(h, stream=s)\n",
                    "s.synchronize()"]},
        {"cell_type": "code", "execution_count": 3, "metadata": {}, "outputs": [], "source": "%%bash\necho $((1 + 1))"},
    ],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "nbformat": 4, "nbformat_minor": 5,
}


def _write(tmp_path, notebook=NOTEBOOK, indent=1):
    path = tmp_path / "demo.ipynb"
    path.write_text(json.dumps(notebook, indent=indent) + "\n", encoding="utf-8")
    return path


def _process(cwd, *args):
    return subprocess.run([sys.executable, "-m", "pinlint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def _pinlint(cwd, *args):
    from helpers import pinlint_in_process
    return pinlint_in_process(cwd, *args)


def test_findings_name_the_cell_and_the_line_in_it(tmp_path):
    _write(tmp_path)
    done = _process(tmp_path, "check", ".")  # one real process; the other tests run in this one
    assert done.returncode == 1
    first = done.stdout.splitlines()[0]
    assert first.startswith("demo.ipynb:cell 3:5:1: PIN001 ")
    assert "at cell 3 line 1" in first
    [finding] = json.loads(_pinlint(tmp_path, "check", "--format", "json", ".").stdout)
    assert finding["cell"] == 3 and finding["location"] == {"row": 5, "column": 1}


def test_fix_rewrites_the_cells_and_keeps_everything_else(tmp_path):
    path = _write(tmp_path)
    done = _pinlint(tmp_path, "fix", "demo.ipynb")
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = json.loads(path.read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in fixed["cells"]]
    assert "cupyx.empty_pinned(1 << 20, dtype=np.float32)" in sources[2]
    assert "!nvidia-smi" in sources[2] and "%load_ext autoreload" in sources[1] and "import cupyx" in sources[1]
    assert sources[3] == "%%bash\necho $((1 + 1))"
    assert fixed["cells"][1]["outputs"] == NOTEBOOK["cells"][1]["outputs"]
    assert fixed["cells"][1]["metadata"] == {"tags": ["setup"]} and fixed["metadata"] == NOTEBOOK["metadata"]
    assert path.read_text(encoding="utf-8").startswith('{\n "cells": [\n  {'), "Jupyter's one-space indent is kept"
    assert _pinlint(tmp_path, "check", "demo.ipynb").returncode == 0
    second = path.read_text(encoding="utf-8")
    _pinlint(tmp_path, "fix", "demo.ipynb")
    assert path.read_text(encoding="utf-8") == second


def test_a_clean_notebook_and_a_broken_one(tmp_path):
    clean = json.loads(json.dumps(NOTEBOOK))
    clean["cells"][2]["source"] = ["h = cp.ones(4)\n"]
    _write(tmp_path, clean)
    assert _pinlint(tmp_path, "check", ".").returncode == 0
    (tmp_path / "demo.ipynb").write_text('{"cells": [ {"cell_type": "code", "source": "import cupy"', encoding="utf-8")
    done = _pinlint(tmp_path, "check", ".")
    assert done.returncode == 1 and "PIN000" in done.stdout and "Traceback" not in done.stderr


# ------------------------------------------------------------------ issue 14: never lose or misread a cell
import pytest  # noqa: E402

from pinlint import notebooks  # noqa: E402
from pinlint.settings import Settings  # noqa: E402

from pathlib import Path  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "safety_corpus"


def _sources(notebook: dict) -> list:
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in notebook["cells"]]


@pytest.fixture(params=["ipython", "stand-in"])
def ipython_rules(request, monkeypatch):
    """Each test runs with IPython's TransformerManager and with the tokenizer-aware stand-in."""
    if request.param == "ipython":
        pytest.importorskip("IPython.core.inputtransformer2")
        monkeypatch.setattr(notebooks, "_TRANSFORMER", [])
    else:
        monkeypatch.setattr(notebooks, "_TRANSFORMER", [None])
    return request.param


def _check(name: str, fix: bool = False):
    data = (CORPUS / name).read_bytes()
    return data, notebooks.check_notebook(data, name, Settings(), fix=fix, unsafe=True)


def test_marker_like_text_in_a_cell_is_only_text(ipython_rules):
    # `# %%pinlint-cell 1%%` in a cell emptied that cell on --fix (and `99` was an internal error).
    data, outcome = _check("nb_marker_text.ipynb", fix=True)
    assert outcome.errors == [] and outcome.fixed is not None
    before, after = _sources(json.loads(data)), _sources(json.loads(outcome.fixed))
    assert after[1] == before[1].replace("np.empty(", "cupyx.empty_pinned(")
    assert after[2:] == before[2:]
    assert after[0].rstrip("\n") == before[0] + "\nimport cupyx"


@pytest.mark.parametrize("source", [
    "files = !ls\nprint(files)",
    "msg = ('%d items'\n % n)",
    "ok = (n\n != 0)",
    'doc = """Is it?\nyes"""',
    "np.zeros?",
    "?np.zeros",
    "!ls \\\n  -l",
    "%time x = 1",
    "t = %timeit -o x = 1",
    "if n:\n    !echo yes\n    %time y = 2",
    "x = 1  # why?",
    "pip install cupy-cuda12x",            # automagic: IPython runs it as %pip
    "conda install -y numba\nn = 2",
    "matplotlib inline",
    "time = 5\nprint(time)",               # Python, not the magic
    "  a = cp.zeros(4)\n  b = a + 1",       # IPython takes the first line's indent off every line
    "    for i in range(2):\n        pip install x",
    "for t in [16, 32]:\n  time = max(\n    t, 1)\n  print(time)",   # Python that starts with a magic's name
    "def f():\n    config = dict(\n        grid=1)\n    return config",
    "cd ..",
    "# @title Install\n%%shell\nsudo apt-get -qq install build-essential",   # Colab's form title above a magic
    "#@title Setup { display-mode: 'form' }\n\n%%bash\nls -l | wc -l",
])
def test_valid_cells_are_not_syntax_errors(ipython_rules, source):
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": "import cupy as cp\nn = 1"},
                          {"cell_type": "code", "metadata": {}, "outputs": [], "source": source}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    outcome = notebooks.check_notebook(json.dumps(notebook).encode(), "nb.ipynb", Settings())
    assert [f.code for f in outcome.findings] == [] and outcome.errors == []


@pytest.mark.parametrize("source", [
    "pip",              # a word alone is a Python name, not a syntax error: the next line is one
    "install cupy",     # not a magic IPython runs bare
    "a = 1\n  b = 2",   # only the first line's indent is taken off
])
def test_what_ipython_would_not_run_is_still_a_syntax_error(ipython_rules, source):
    source = source if source != "pip" else "pip\nimport(x)"
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": "import cupy as cp\nn = 1"},
                          {"cell_type": "code", "metadata": {}, "outputs": [], "source": source}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    outcome = notebooks.check_notebook(json.dumps(notebook).encode(), "nb.ipynb", Settings())
    assert [f.code for f in outcome.findings] == ["PIN000"]


def test_an_indented_cell_is_checked_and_its_magic_lines_written_back(ipython_rules):
    source = "  import numpy as np\n  pip install cupy\n  for i in range(3):\n      d = cp.asarray(h)\n"
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                           "source": "import cupy as cp\nimport numpy as np\nh = np.ones(1 << 20)"},
                          {"cell_type": "code", "metadata": {}, "outputs": [], "source": source}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    outcome = notebooks.check_notebook(json.dumps(notebook).encode(), "nb.ipynb", Settings())
    assert [(f.code, f.cell, f.location.row) for f in outcome.findings] == [("PIN007", 2, 4)]


def test_ipython_syntax_is_kept_through_a_fix(ipython_rules):
    data, outcome = _check("nb_ipython.ipynb", fix=True)
    assert outcome.errors == [] and outcome.applied == 2
    before, after = _sources(json.loads(data)), _sources(json.loads(outcome.fixed))
    for old, new in zip(before, after):
        for line in old.split("\n"):
            if line.lstrip()[:1] in ("%", "!") or line.rstrip().endswith("?") or "= !" in line:
                assert line in new.split("\n"), f"{line!r} was lost"
    assert after[4] == before[4], "a %%bash cell is left alone"
    lint = notebooks.check_notebook(outcome.fixed, "nb.ipynb", Settings())
    assert lint.findings == [] and lint.errors == []


def test_a_hoisted_statement_stays_in_its_cell(ipython_rules):
    # The loop is the first statement of cell 2: what the fix puts above it belongs to cell 2, not 1.
    data, outcome = _check("nb_hoist_first_cell.ipynb", fix=True)
    before, after = _sources(json.loads(data)), _sources(json.loads(outcome.fixed))
    assert after[0] == before[0] and after[2] == before[2]
    assert after[1].startswith("h = cupyx.empty_pinned(1 << 20, dtype=np.float32)\nfor i in range(10):\n")


@pytest.mark.parametrize("name", sorted(p.name for p in (CORPUS / "bad_notebooks").glob("*.ipynb")) + ["deep"])
def test_malformed_notebooks_are_pin000_and_the_run_goes_on(tmp_path, name):
    if name == "deep":
        (tmp_path / "deep.ipynb").write_text('{"cells": [], "x": "import cupy", "y": ' + "[" * 100_000 + "]" * 100_000
                                             + "}", encoding="utf-8")
    else:
        (tmp_path / name).write_bytes((CORPUS / "bad_notebooks" / name).read_bytes())
    _write(tmp_path)
    stem = "deep.ipynb" if name == "deep" else name
    done = _pinlint(tmp_path, "check", "--no-cache", ".")
    assert done.returncode == 1 and done.stderr == "", done.stderr
    assert f"{stem}:1:1: PIN000 Notebook" in done.stdout
    assert "demo.ipynb:cell 3:5:1: PIN001" in done.stdout, "the other notebook is still checked"
    before = (tmp_path / stem).read_bytes()
    fixed = _pinlint(tmp_path, "fix", ".")
    assert fixed.returncode == 1 and "Traceback" not in fixed.stderr
    assert (tmp_path / stem).read_bytes() == before


def test_stdin_notebook_is_linted_as_a_notebook(tmp_path):
    data = json.dumps(NOTEBOOK, indent=1) + "\n"
    done = subprocess.run([sys.executable, "-m", "pinlint", "check", "--stdin-filename", "nb.ipynb"], cwd=tmp_path,
                          input=data, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout.startswith("nb.ipynb:cell 3:5:1: PIN001 "), done.stdout + done.stderr


def test_stdin_notebook_fix_prints_the_fixed_notebook(tmp_path):
    data = json.dumps(NOTEBOOK, indent=1) + "\n"
    done = subprocess.run([sys.executable, "-m", "pinlint", "check", "--fix", "--stdin-filename", "nb.ipynb"],
                          cwd=tmp_path, input=data, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    fixed = json.loads(done.stdout)
    assert "cupyx.empty_pinned(1 << 20, dtype=np.float32)" in _sources(fixed)[2]
    assert fixed["cells"][1]["outputs"] == NOTEBOOK["cells"][1]["outputs"]


def test_a_script_the_notebook_writes_is_checked_in_its_cell():
    # `%%writefile async.py` then `!python async.py`: the cell holds a program of its own.
    script = ("%%writefile async_demo.py\nimport cupy as cp\nimport numpy as np\n\nx = cp.ones(1 << 20)\n"
              "stream = cp.cuda.Stream(non_blocking=True)\nwith stream:\n"
              "    host = cp.asnumpy(x, blocking=False)\nstream.synchronize()\n")
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": "import cupy as cp\nn = 1"},
                          {"cell_type": "code", "metadata": {}, "outputs": [], "source": script},
                          {"cell_type": "code", "metadata": {}, "outputs": [], "source": "!python async_demo.py"},
                          {"cell_type": "code", "metadata": {}, "outputs": [], "source": "%%writefile notes.txt\nnot python ("}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    data = json.dumps(notebook).encode()
    outcome = notebooks.check_notebook(data, "nb.ipynb", Settings())
    assert [(f.code, f.cell, f.location.row) for f in outcome.findings] == [("PIN001", 2, 8)]
    # The script's names are its own: the kernel's program never sees `x` or `host`.
    assert "host" not in notebooks.to_program(notebook).text
    fixed = notebooks.check_notebook(data, "nb.ipynb", Settings(), fix=True, unsafe=True)
    assert [(f.code, f.cell) for f in fixed.findings] == [("PIN001", 2)] and fixed.fixed is None


def test_a_trace_and_a_callees_loop_are_named_by_cell_too(tmp_path):
    """A helper defined in one cell and called in a loop of another: the message's "via `f` (line N)"
    and "outside the loop at line N" named lines of the joined program (hpc-buesst1's timing helper,
    "via `time_function` (line 212)" in a notebook of a few dozen lines a cell)."""
    notebook = {
        "cells": [
            {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
             "source": "import numpy as np\nfrom numba import cuda\n\ndef timed(f, h, n):\n"
                       "    for _ in range(n):\n        f(h)\n"},
            {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [],
             "source": "def upload(h):\n    return cuda.to_device(h)\n"},
            {"cell_type": "code", "execution_count": 3, "metadata": {}, "outputs": [],
             "source": "image = np.zeros((1024, 1024), dtype=np.float32)\ntimed(upload, image, 10)\n"},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    _write(tmp_path, notebook)
    [finding] = json.loads(_pinlint(tmp_path, "check", "--format", "json", ".").stdout)
    assert finding["code"] == "PIN007" and finding["cell"] == 3, finding
    message = finding["message"]
    assert "at cell 3 line 1" in message and "outside the loop at cell 1 line 5)" in message, message
    assert "(cell 2 line 2)" in message, message


def test_a_colab_form_title_above_a_cell_magic_leaves_the_other_cells_checked():
    # bifrost's demo notebook (survey 49 V): a `# @title` comment, then `%%shell`; the PIN000 it gave
    # hid the next cell's finding.
    notebook = {"cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [],
         "source": "# @title Install\n%%shell\n\nsudo apt-get -qq install build-essential\n"},
        {"cell_type": "code", "metadata": {}, "outputs": [],
         "source": "import numpy as np\nimport cupy as cp\n\nh = np.zeros(1 << 22, np.float32)\nfor _ in range(10):\n    d = cp.asarray(h)"}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    outcome = notebooks.check_notebook(json.dumps(notebook).encode(), "nb.ipynb", Settings())
    assert [(f.code, f.cell) for f in outcome.findings] == [("PIN007", 2)] and outcome.errors == []


@pytest.mark.parametrize("metadata, checked", [
    ({"kernelspec": {"name": "bash", "language": "bash"}, "language_info": {"name": "bash"}}, False),
    ({"kernelspec": {"name": "ir", "language": "R"}}, False),
    ({"language_info": {"name": "julia"}}, False),
    ({"kernelspec": {"name": "python3", "language": "python"}, "language_info": {"name": "python"}}, True),
    ({}, True),                                   # nothing says: taken to be Python
])
def test_a_notebook_whose_kernel_is_not_python_is_not_checked(metadata, checked):
    # NCAR's GPU workshop (survey 50 AD): Bash-kernel notebooks gave a false PIN000 per notebook.
    notebook = {"cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [],
         "source": "import numpy as np\nimport cupy as cp\n\nh = np.zeros(1 << 22, np.float32)\nfor _ in range(10):\n    d = cp.asarray(h)"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "module load cuda\nfor f in *.py; do python $f; done"}],
        "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    outcome = notebooks.check_notebook(json.dumps(notebook).encode(), "nb.ipynb", Settings())
    # (the bash cell is PIN000; the Python cell is checked all the same)
    assert sorted({f.code for f in outcome.findings}) == (["PIN000", "PIN007"] if checked else [])


NBFORMAT3 = {
    "nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""},
    "worksheets": [{"metadata": {}, "cells": [
        {"cell_type": "heading", "level": 1, "metadata": {}, "source": ["Upload"]},
        {"cell_type": "code", "collapsed": False, "language": "python", "metadata": {}, "outputs": [],
         "prompt_number": 1,
         "input": ["import numpy as np\n", "import cupy as cp\n", "h = np.zeros(1 << 20, dtype=np.float32)\n",
                   "s = cp.cuda.Stream(non_blocking=True)\n", "d = cp.empty_like(h)\n", "d.set(h, stream=s)"]},
    ]}],
}


def test_an_nbformat3_notebook_is_checked_and_never_rewritten(tmp_path):
    # gbt_seti (survey 53 CD): a valid notebook of the layout before 2015 was a PIN000.
    path = _write(tmp_path, NBFORMAT3)
    before = path.read_bytes()
    done = _pinlint(tmp_path, "check", "--no-cache", "demo.ipynb")
    assert done.returncode == 1 and "demo.ipynb:cell 2:6:1: PIN001 " in done.stdout, done.stdout + done.stderr
    assert "[*]" not in done.stdout, "no fix is offered: none would be written"
    for args in (("check", "--fix", "--unsafe-fixes"), ("check", "--add-noqa")):
        done = _pinlint(tmp_path, *args, "--no-cache", "demo.ipynb")
        assert "nbformat 3 notebook" in done.stderr and "Traceback" not in done.stderr
        assert path.read_bytes() == before


def _code_cells(*sources: str) -> bytes:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": s} for s in sources],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def test_placeholder_cells_are_pin000_each_and_the_other_cells_are_checked():
    # An exercise notebook (survey 55 EH): `answer = # TODO` cells do not parse; the lab's other cells
    # still run, and are checked. Fixes leave a notebook that does not parse as it is: none is offered.
    data = _code_cells("import numpy as np\nimport cupy as cp\nstream = cp.cuda.Stream(non_blocking=True)\n"
                       "host = np.zeros(1 << 24, dtype=np.float32)\ndev = cp.empty_like(host)\n",
                       "answer = # TODO: fill this in\n", "print('set up')\n", "dev.set(host, stream=stream)\n",
                       "other = # TODO\n")
    outcome = notebooks.check_notebook(data, "lab.ipynb", Settings())
    assert [(f.code, f.cell, f.location.row) for f in outcome.findings] == [
        ("PIN000", 2, 1), ("PIN001", 4, 1), ("PIN000", 5, 1)]
    assert all(f.fix is None for f in outcome.findings)
    fixed = notebooks.check_notebook(data, "lab.ipynb", Settings(), fix=True, unsafe=True)
    assert fixed.fixed is None



def test_a_syntax_error_names_its_line_in_its_cell():
    # survey 57 GE: "expected an indented block after 'with' statement on line 19" named the line of
    # the joined notebook, while the finding's row is the cell's.
    data = _code_cells("import torch\n\nx = torch.zeros(4)\n", "def f(a):\n    return a * 2\n",
                       "# sketch\nwith torch.no_grad():\n\n...\n")
    (finding,) = notebooks.check_notebook(data, "nb.ipynb", Settings()).findings
    assert (finding.code, finding.cell, finding.location.row) == ("PIN000", 3, 4)
    assert finding.message.endswith("after 'with' statement on cell 3 line 2"), finding.message


def test_a_cell_vs_code_marks_as_another_language_is_not_python():
    # ms-swift's example notebooks (survey 55 EF): shell commands in cells VS Code marks `shellscript`.
    cells = [{"cell_type": "code", "metadata": {"vscode": {"languageId": "shellscript"}}, "outputs": [],
              "source": "mytool train \\\n    --torch_dtype bfloat16"},
             {"cell_type": "code", "metadata": {"vscode": {"languageId": "python"}}, "outputs": [],
              "source": "import numpy as np\nimport cupy as cp\nh = np.zeros(1 << 22, np.float32)\n"
                        "for _ in range(10):\n    d = cp.asarray(h)"}]
    data = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    outcome = notebooks.check_notebook(data, "nb.ipynb", Settings())
    assert [(f.code, f.cell) for f in outcome.findings] == [("PIN007", 2)]
