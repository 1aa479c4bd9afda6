"""The verification table: terminal text, JSON, Markdown (for docs/verification.md) and a PNG plot."""

from __future__ import annotations

import json
from typing import TextIO

COLUMNS = ("rule", "fixture", "size", "metric", "bad", "fixed", "ratio", "verdict")


def _cells(row) -> tuple:
    data = row.as_dict()
    name = row.fixture.path.name
    if row.measure is not None:
        m = row.measure
        ratio = f"{m.ratio:.2f}x" if m.ratio else ("inf" if m.bad_median > 0 else "-")
        size = _size(data["size"]) if data["size"] else "-"
        verdict = data["verdict"] + (f" ({m.detail})" if data["verdict"] == "confirmed" else
                                     f" ({data['detail']})")
        return (row.code, name, size, f"{m.metric} ({m.unit})", f"{m.bad_median:.3g} ±{m.spread(m.bad):.3g}",
                f"{m.fixed_median:.3g} ±{m.spread(m.fixed):.3g}", ratio, verdict)
    if data["metric"] == "result":
        bad = _result(row.bad) if row.bad else "-"
        fixed = _result(row.fixed) if row.fixed else "-"
        metric = "result"
    else:
        bad = _timed(row.bad)
        fixed = _timed(row.fixed)
        metric = "run ms"
    ratio = f"{data['ratio']:.2f}x" if data["ratio"] else "-"
    size = _size(data["size"]) if data["size"] else "-"
    verdict = data["verdict"] + (f" ({data['detail']})" if data["verdict"] != "confirmed" and data["detail"] else "")
    return (row.code, name, size, metric, bad, fixed, ratio, verdict)


def _timed(outcome) -> str:
    """Median ± range of all timings, and each process's median when there were several."""
    if outcome is None:
        return "-"
    text = f"{outcome.median:.2f} ±{outcome.spread:.2f}"
    if outcome.processes > 1:
        text += " (" + " / ".join(f"{m:.1f}" for m in outcome.process_medians) + ")"
    return text


def _result(outcome) -> str:
    result = outcome.result
    if "value" in result:
        return f"{result['value']:.6g}"
    return f"sum {result.get('sum', 0):.6g}"


def _size(n: int) -> str:
    for unit, scale in (("Mi", 1 << 20), ("Ki", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return str(n)


def write_table(rows: list, out: TextIO) -> None:
    cells = [COLUMNS] + [_cells(r) for r in rows]
    widths = [max(len(c[i]) for c in cells[:]) if i < len(COLUMNS) - 1 else 0 for i in range(len(COLUMNS))]
    for index, line in enumerate(cells):
        out.write("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() + "\n")
        if index == 0:
            out.write("  ".join("-" * max(w, len(COLUMNS[i])) for i, w in enumerate(widths)).rstrip() + "\n")


def write_markdown(rows: list, out: TextIO) -> None:
    out.write("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n")
    for row in rows:
        out.write("| " + " | ".join(c.replace("|", "\\|") for c in _cells(row)) + " |\n")


def write_json(rows: list, out: TextIO) -> None:
    json.dump([r.as_dict() for r in rows], out, indent=2)
    out.write("\n")


def write_plot(rows: list, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = [r for r in rows if r.bad and r.fixed and r.code not in ("PIN005", "PIN006")]
    labels = [f"{r.code} {r.fixture.path.stem}" for r in timed]
    figure, axis = plt.subplots(figsize=(10, max(3, 0.35 * len(timed) + 1)))
    positions = range(len(timed))
    axis.barh([p + 0.2 for p in positions], [r.bad.median for r in timed], height=0.4, label="bad", color="#c44")
    axis.barh([p - 0.2 for p in positions], [r.fixed.median for r in timed], height=0.4, label="fixed", color="#4a4")
    axis.set_yticks(list(positions))
    axis.set_yticklabels(labels, fontsize=8)
    axis.set_xscale("log")
    axis.set_xlabel("median run time (ms, log scale)")
    axis.legend()
    axis.set_title("pinlint verify: each fixture and its fix")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
