"""``--plot FILE.png``: per line, the time the host spent held in copy calls and the copies' GB/s
(matplotlib, the ``plot`` extra)."""

from __future__ import annotations

from .report import Result, where

COLORS = {"pageable": "#c44", "pinned": "#4a4", "managed": "#48c"}
MAX_LINES = 25


def write_plot(result: Result, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = sorted(result.run.aggregate.copies.values(), key=lambda l: l.host_ns.total, reverse=True)[:MAX_LINES]
    lines.reverse()  # the largest at the top
    labels = [f"{where(l.site)} {l.direction} {l.host_kind}" for l in lines]
    colors = [COLORS.get(l.host_kind, "#888") for l in lines]
    figure, (held, rate) = plt.subplots(1, 2, figsize=(12, max(3.0, 0.35 * len(lines) + 1.5)), sharey=True)
    positions = list(range(len(lines)))
    held.barh(positions, [max(l.host_ns.total / 1e6, 1e-3) for l in lines], color=colors)
    held.set_xscale("log")
    held.set_xlabel("host held in the calls, total (ms, log scale)")
    held.set_yticks(positions)
    held.set_yticklabels(labels, fontsize=8)
    rate.barh(positions, [l.gbps.median if l.gbps.count else 0 for l in lines], color=colors)
    rate.set_xlabel("copy bandwidth, median per copy (GB/s)")
    figure.suptitle("pinlint trace: " + " ".join(result.run.command)[:100])
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
