"""Markdown tables for docs/trace.md from `pinlint trace --format json` files:

    python bench/trace_tables.py join fixtures_cupy.json ...   # the static join, one row per finding
    python bench/trace_tables.py copies program.json            # the copies and allocations per line
"""

import json
import sys
from pathlib import Path


def _short(filename: str) -> str:
    parts = Path(filename).parts
    return "/".join(parts[-2:]) if "fixtures" in parts else Path(filename).name


def _ms(ns) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3g}"


def join(paths) -> None:
    print("| library | finding | status | what the run showed |\n|---|---|---|---|")
    for path in paths:
        data = json.loads(Path(path).read_text())
        library = Path(path).stem.split("_", 1)[1]
        for row in data["static"]["rows"]:
            where = f"{_short(row['filename'])}:{row['location']['row']}"
            detail = row["detail"].replace("|", "\\|")
            print(f"| {library} | {row['code']} {where} | {row['status']} | {detail} |")


def summary(paths) -> None:
    print("| library | static findings | confirmed | contradicted | not exercised | not observable | missed | "
          "observed problems | on `_ok_` fixtures |\n|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        data = json.loads(Path(path).read_text())
        counts = data["static"]["summary"]
        found = sum(v for k, v in counts.items() if k != "missed by the static analysis")
        problems = [o for o in data["observations"] if o["problem"]]
        negatives = [o for o in problems if "_ok_" in o["filename"]]
        print(f"| {Path(path).stem.split('_', 1)[1]} | {found} | {counts['confirmed']} | {counts['contradicted']} | "
              f"{counts['not exercised']} | {counts['not observable']} | {counts['missed by the static analysis']} | "
              f"{len(problems)} | {len(negatives)} |")


def copies(paths) -> None:
    for path in paths:
        data = json.loads(Path(path).read_text())
        print("| line | api | dir | host | copies | line ran | bytes | GB/s (median) | host held total / median (ms) |"
              "\n|---|---|---|---|---|---|---|---|---|")
        for c in sorted(data["copies"], key=lambda c: (c["filename"], c["location"]["row"])):
            mode = " (blocking)" if c["blocking"] else " (default stream)" if c.get("default_stream") and \
                "Async" in c["api"] else ""
            gbps = c["gbps"]["median"]
            print(f"| {_short(c['filename'])}:{c['location']['row']} | {c['api']}{mode} | {c['direction']} | "
                  f"{c['host_kind']} | {c['count']} | {c.get('executions') or '-'} | {c['bytes'] / 2**20:.1f} MiB | "
                  f"{'-' if gbps is None else f'{gbps:.1f}'} | {_ms(c['host_ns']['total'])} / "
                  f"{_ms(c['host_ns']['median'])} |")
        for a in data["allocations"]:
            print(f"\nallocation {_short(a['filename'])}:{a['location']['row']}: {a['api']} x{a['count']}, "
                  f"flags {a['flags']}, {a['bytes'] / 2**20:.1f} MiB, {_ms(a['host_ns']['total'])} ms")
        print()
        for o in data["observations"]:
            print(f"- `{_short(o['filename'])}:{o['location']['row']}: {o['code']}` {o['message']}")
        for row in data["static"]["rows"] if data["static"] else ():
            print(f"- static: `{row['code']}` line {row['location']['row']}: **{row['status']}**: {row['detail']}")


if __name__ == "__main__":
    {"join": join, "summary": summary, "copies": copies}[sys.argv[1]](sys.argv[2:])
