"""Notebooks are cached like .py files (issue 16): a second check of an unchanged notebook reads the
cache (the notebook is not analysed again) and prints the same findings, cells included; changing a
cell, or a module of the tree its findings rest on, makes it analysed again."""

import json

from helpers import run_in_process

CELLS = [["import numpy as np\n", "from helpers_mod import upload\n"],
         ["h = np.empty(1 << 20, dtype=np.float32)\n", "upload(h)\n"]]
HELPER = ("import cupy as cp\n\n\ndef upload(h):\n    s = cp.cuda.Stream(non_blocking=True)\n"
          "    d = cp.empty(h.shape, dtype=h.dtype)\n    d.set(h, stream=s)\n    s.synchronize()\n    return d\n")


def _notebook(cells) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": source} for source in cells], "metadata": {}, "nbformat": 4,
                       "nbformat_minor": 5})


def test_an_unchanged_notebook_comes_from_the_cache(tmp_path, monkeypatch, capsys):
    from pinlint import notebooks
    (tmp_path / "helpers_mod.py").write_text(HELPER, encoding="utf-8")
    (tmp_path / "a.ipynb").write_text(_notebook(CELLS), encoding="utf-8")
    checked = []
    real = notebooks.check_notebook
    monkeypatch.setattr(notebooks, "check_notebook", lambda *a, **k: checked.append(a[1]) or real(*a, **k))

    def run():
        code, out, _ = run_in_process(monkeypatch, capsys, tmp_path, "check", "--format", "json", "--jobs", "1",
                                      "a.ipynb")
        return code, json.loads(out)

    code, cold = run()
    assert code == 1 and [f["cell"] for f in cold] == [2] and checked == ["a.ipynb"]
    assert run() == (code, cold) and checked == ["a.ipynb"]  # from the cache

    (tmp_path / "helpers_mod.py").write_text(HELPER.replace("    s.synchronize()\n", "    s.synchronize()  # x\n"))
    assert run()[1] == cold and len(checked) == 2  # a module it rests on changed: analysed again

    (tmp_path / "a.ipynb").write_text(_notebook([CELLS[0], ["h = 1\n"]]), encoding="utf-8")
    assert run() == (0, []) and len(checked) == 3
