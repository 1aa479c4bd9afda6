"""Text output, as ruff's concise format: ``path:row:col: CODE [*] message`` lines, then a summary."""

from __future__ import annotations

from typing import TextIO

from ..report import ReportOptions, fix_available

_BOLD, _RED, _CYAN, _RESET = "\x1b[1m", "\x1b[31m", "\x1b[36m", "\x1b[0m"


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, *codes: str) -> str:
        return f"{''.join(codes)}{text}{_RESET}" if self.color and text else text


def _plural(count: int, word: str, suffix: str = "s") -> str:
    return f"{count} {word}{suffix if count != 1 else ''}"


def finding_line(finding, style: _Style) -> str:
    colon = style(":", _CYAN)
    where = style(finding.filename, _BOLD) + colon
    if finding.cell is not None:
        where += f"cell {finding.cell}{colon}"
    marker = style("[*]", _CYAN) + " " if finding.fix is not None and finding.fix.applicability == "safe" else ""
    return (f"{where}{finding.location.row}{colon}{finding.location.column}{colon} "
            f"{style(finding.code, _BOLD, _RED)} {marker}{finding.message}")


def write(findings: list, out: TextIO, options: ReportOptions) -> None:
    style = _Style(options.color)
    for finding in findings:
        out.write(finding_line(finding, style) + "\n")
        if options.show_fixes and finding.fix is not None:
            out.write(f"    fix ({finding.fix.applicability}): {finding.fix.message}\n")
    if not options.quiet:
        write_summary(findings, out, options)


def write_statistics(stats: list, findings: list, out: TextIO, options: ReportOptions) -> None:
    """ruff's table: count, code, fixability ([*] every one, [~] some, [ ] none) and the rule's name."""
    count_width = max((len(str(s.count)) for s in stats), default=1)
    code_width = max((len(s.code) for s in stats), default=1)
    for s in stats:
        marker = "[*]" if s.fixable_count == s.count else "[~]" if s.fixable_count else "[ ]"
        out.write(f"{s.count:>{count_width}}\t{s.code:<{code_width}}\t{marker} {s.name}\n")
    if not options.quiet:
        write_summary(findings, out, options)


def write_summary(findings: list, out: TextIO, options: ReportOptions) -> None:
    fixed = options.fixed or 0
    if options.show_fixes and fixed:
        _write_fixed(out, options)
    total = len(findings) + fixed
    if fixed:
        out.write(f"Found {_plural(total, 'error')} ({fixed} fixed, {len(findings)} remaining).\n")
    elif findings:
        out.write(f"Found {_plural(total, 'error')}.\n")
    elif options.complete:
        out.write("All checks passed!\n")  # not when something could not be checked
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "safe")
    hidden = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe")
    if safe:
        out.write(f"[*] {safe} fixable with the `--fix` option.\n")
    if hidden and not options.unsafe:
        out.write(f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the "
                  f"`--unsafe-fixes` option.\n")
    elif hidden:
        out.write(f"[*] {hidden} fixable with `--fix --unsafe-fixes`.\n")


def _write_fixed(out: TextIO, options: ReportOptions) -> None:
    """--show-fixes with --fix: what was fixed, per file and code."""
    from .rules_meta import rule_name
    out.write(f"Fixed {_plural(options.fixed, 'error')}:\n")
    for filename, codes in options.fixed_codes:
        out.write(f"- {filename}:\n")
        for code, count in codes:
            out.write(f"    {count} \u00d7 {code} ({rule_name(code)})\n")
    out.write("\n")


def write_fix_only(findings: list, out: TextIO, options: ReportOptions) -> None:
    """--fix-only: what was fixed, nothing about what is left."""
    fixed = options.fixed or 0
    if options.show_fixes and fixed:
        _write_fixed(out, options)
    elif fixed:
        out.write(f"Fixed {_plural(fixed, 'error')}.\n")
    left = sum(1 for f in findings if fix_available(f, True) and not fix_available(f, options.unsafe))
    if not fixed:
        hint = f" ({_plural(left, 'fix', 'es')} available with `--unsafe-fixes`)" if left else ""
        out.write(f"No errors fixed{hint}.\n")
