"""``pinlint trace`` output: a text table, JSON, and SARIF (observations as results, figures in
their properties)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Optional, TextIO

from ..formats.sarif import _artifact
from ..report import display_path, sarif_log
from .join import FAILING, MISSED, summary
from .observe import Observation
from .session import TraceRun
from .units import duration, size


@dataclass(frozen=True)
class Result:
    """Everything one trace produced, for any format."""

    run: TraceRun
    observations: list
    join: Optional[list] = None   # None without --check

    @property
    def problems(self) -> list:
        return [o for o in self.observations if o.problem]

    @property
    def failing(self) -> bool:
        return bool(self.problems) or any(r.failing for r in self.join or ())


def where(site) -> str:
    if not site.user:
        return f"{site.filename}:{site.line} (library)" if site.line else site.filename
    return f"{display_path(site.filename)}:{site.line}"


def _stat(stat) -> dict:
    return {"count": stat.count, "total": stat.total, "min": stat.low if stat.count else None,
            "max": stat.high if stat.count else None, "median": stat.median if stat.count else None,
            "p10": stat.percentile(10) if stat.count else None, "p90": stat.percentile(90) if stat.count else None,
            "exact": stat.exact}


def _location(filename: str, row: int, column: int = 1) -> dict:
    return {"filename": display_path(filename) if not filename.startswith("<") else filename,
            "location": {"row": row, "column": column}}


# ---------------------------------------------------------------------------- text
def _table(out: TextIO, header: tuple, rows: list) -> None:
    cells = [header] + rows
    widths = [max(len(str(r[i])) for r in cells) for i in range(len(header))]
    for index, row in enumerate(cells):
        out.write("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")
        if index == 0:
            out.write("  ".join("-" * w for w in widths) + "\n")


def _mode(line) -> str:
    if line.blocking:
        return " (blocking)"
    return " (default stream)" if line.default_stream and "Async" in line.api else ""


def _gbps(stat) -> str:
    return f"{stat.median:.1f}" if stat.count else "-"


def write_text(result: Result, out: TextIO) -> None:
    run, agg = result.run, result.run.aggregate
    copies = sorted(agg.copies.values(), key=lambda l: (l.site.filename, l.site.line, l.api))
    allocs = sorted(agg.allocs.values(), key=lambda l: (l.site.filename, l.site.line, l.api))
    recorded = sum(1 for p in run.processes if p.get("status") == "ok")
    out.write(f"pinlint trace: `{' '.join(run.command)}` exited {run.exit_code} after {run.wall_s:.2f} s; "
              f"{recorded} process{'es' if recorded != 1 else ''} recorded, {sum(l.count for l in copies)} "
              f"host<->device copies, {sum(l.count for l in allocs)} pinned allocations\n")
    if copies:
        out.write("\nCopies, per line (held: time the call kept the host; device: the copy itself)\n")
        _table(out, ("line", "api", "dir", "host", "n", "bytes", "GB/s", "held total", "held median",
                     "device total"),
               [(where(l.site), l.api + _mode(l), l.direction, l.host_kind, l.count,
                 size(l.nbytes), _gbps(l.gbps), duration(l.host_ns.total), duration(l.host_ns.median),
                 duration(l.device_ns.total)) for l in copies])
    if allocs:
        out.write("\nPinned allocations and registrations, per line\n")
        _table(out, ("line", "api", "flags", "n", "bytes", "time total", "median", "freed"),
               [(where(l.site), l.api, hex(l.flags), l.count, size(l.nbytes), duration(l.host_ns.total),
                 duration(l.host_ns.median), l.freed) for l in allocs])
    for pinned in run.pinned:
        if pinned["peak_bytes"]:
            out.write(f"\nPinned memory: peak {size(pinned['peak_bytes'])}, {size(pinned['live_at_exit_bytes'])} "
                      f"still pinned at exit\n")
    if agg.kernel_count:
        out.write(f"\nKernels: {agg.kernel_count} ran, {duration(agg.kernel_ns)} of device time\n")
    for note in run.notes:
        out.write(f"note: {note}\n")
    out.write("\n")
    for o in result.observations:
        label = o.code if o.problem else f"{o.code} (context)"
        out.write(f"{where(o.site)}: {label} {o.message}\n")
    problems = result.problems
    if problems:
        counts = Counter(o.code for o in problems)
        detail = ", ".join(f"{n} {code}" for code, n in sorted(counts.items()))
        out.write(f"Observed {len(problems)} problem{'s' if len(problems) != 1 else ''} in the run ({detail}).\n")
    else:
        out.write("No problems observed in the run.\n")
    if result.join is not None:
        _write_join(result.join, out)


def _write_join(rows: list, out: TextIO) -> None:
    out.write("\nStatic findings against the run (--check)\n")
    for row in rows:
        out.write(f"{display_path(row.filename)}:{row.row}:{row.column}: {row.code} {row.status}: {row.detail}\n")
    counts = summary(rows)
    out.write("Static check: " + ", ".join(f"{n} {status}" for status, n in counts.items()) + ".\n")


# ---------------------------------------------------------------------------- JSON
def observation_json(o: Observation) -> dict:
    return {"code": o.code, "problem": o.problem, "message": o.message, **_location(o.site.filename, o.site.line),
            "function": o.site.function, "user_code": o.site.user, "figures": o.figures,
            "callers": [_location(f, r) for f, r in sorted(o.callers)]}


def as_json(result: Result) -> dict:
    run, agg = result.run, result.run.aggregate
    copies = [{**_location(l.site.filename, l.site.line), "user_code": l.site.user, "api": l.api,
               "direction": l.direction, "host_kind": l.host_kind, "asynchronous": l.asynchronous,
               "blocking": l.blocking, "default_stream": l.default_stream, "executions": l.runs.executions,
               "library": l.library, "count": l.count, "bytes": l.nbytes,
               "device_ns": _stat(l.device_ns), "host_ns": _stat(l.host_ns), "gbps": _stat(l.gbps),
               "streams": sorted(l.streams), "buffers": len(l.buffers), "buffers_capped": l.buffers_capped}
              for l in agg.copies.values()]
    allocs = [{**_location(l.site.filename, l.site.line), "user_code": l.site.user, "api": l.api,
               "registered": l.registered, "flags": l.flags, "library": l.library, "count": l.count,
               "bytes": l.nbytes, "largest": l.largest, "host_ns": _stat(l.host_ns), "freed": l.freed,
               "executions": l.runs.executions,
               "transfers_per_freed_buffer": {str(k): v for k, v in sorted(l.transfers.items())}}
              for l in agg.allocs.values()]
    frees = [{**_location(l.site.filename, l.site.line), "api": l.api, "count": l.count, "host_ns": _stat(l.host_ns)}
             for l in agg.frees.values()]
    static = None
    if result.join is not None:
        static = {"summary": summary(result.join),
                  "rows": [{"status": r.status, "code": r.code, **_location(r.filename, r.row, r.column),
                            "message": r.message, "detail": r.detail, "figures": r.figures} for r in result.join]}
    return {"version": 1, "command": run.command, "exit_code": run.exit_code, "wall_s": run.wall_s,
            "processes": [{k: p.get(k) for k in ("pid", "argv", "status", "error", "wall_ns")} for p in run.processes],
            "observations": [observation_json(o) for o in result.observations],
            "copies": copies, "allocations": allocs, "frees": frees, "pinned": run.pinned,
            "kernels": {"count": agg.kernel_count, "device_ns": agg.kernel_ns,
                        "by_name": dict(agg.kernels_by_name.most_common(50))},
            "static": static, "notes": run.notes}


def write_json(result: Result, out: TextIO) -> None:
    json.dump(as_json(result), out, indent=2)
    out.write("\n")


# ---------------------------------------------------------------------------- SARIF
def _sarif_location(filename: str, row: int, column: int = 1) -> dict:
    name = display_path(filename) if not filename.startswith("<") else filename
    return {"physicalLocation": {"artifactLocation": _artifact(name),
                                 "region": {"startLine": max(row, 1), "startColumn": max(column, 1)}}}


def sarif(result: Result) -> dict:
    log = sarif_log([])
    run = log["runs"][0]
    index = {rule["id"]: i for i, rule in enumerate(run["tool"]["driver"]["rules"])}
    statuses = {}
    for row in result.join or ():
        if row.status in (MISSED,):
            statuses[(row.code, row.filename, row.row)] = row.status
    results = []
    for o in result.observations:
        properties = {"observed": True, "figures": o.figures}
        status = statuses.get((o.code, o.site.filename, o.site.line))
        if status:
            properties["static"] = status
        results.append({"ruleId": o.code, "ruleIndex": index.get(o.code, 0),
                        "level": "warning" if o.problem else "note",
                        "message": {"text": f"observed: {o.message}"},
                        "locations": [_sarif_location(o.site.filename, o.site.line)], "properties": properties})
    for row in result.join or ():
        if row.status == MISSED:
            continue
        results.append({"ruleId": row.code, "ruleIndex": index.get(row.code, 0),
                        "level": "warning" if row.status in FAILING else "note",
                        "message": {"text": f"static finding {row.status} by the run: {row.detail}"},
                        "locations": [_sarif_location(row.filename, row.row, row.column)],
                        "properties": {"static": row.status, "finding": row.message, "figures": row.figures}})
    run["results"] = results
    run["invocations"] = [{"executionSuccessful": True, "commandLine": " ".join(result.run.command),
                           "exitCode": result.run.exit_code}]
    return log


def write_sarif(result: Result, out: TextIO) -> None:
    json.dump(sarif(result), out, indent=2)
    out.write("\n")


WRITERS = {"text": write_text, "json": write_json, "sarif": write_sarif}
