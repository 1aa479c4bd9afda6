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


def _pinlint(cwd, *args):
    return subprocess.run([sys.executable, "-m", "pinlint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_findings_name_the_cell_and_the_line_in_it(tmp_path):
    _write(tmp_path)
    done = _pinlint(tmp_path, "check", ".")
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
