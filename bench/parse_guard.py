"""What the parser guard costs, and how deep real code goes.

    python bench/parse_guard.py DIR [DIR ...] [--libcst]

For every ``*.py`` file under the folders that Python parses: the time of ``ast.parse``, of the
depth walk (``pinlint.parsing.first_too_deep`` at ``MAX_DEPTH``), and with ``--libcst`` of
``libcst.parse_module``, summed and printed side by side with their ratios; then the deepest
nesting found (as libcst builds its tree, by an unpruned walk) and the files past half the limit.
The figures in docs/reliability.md come from this script on the six CUDA projects used there.
"""

from __future__ import annotations

import argparse
import ast
import collections
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pinlint.parsing import MAX_DEPTH, first_too_deep  # noqa: E402 - after the path above


def full_depth(tree: ast.AST) -> int:
    """Deepest level as libcst nests it, every node walked (no pruning)."""
    deepest = 0
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.BoolOp):
            depth += len(node.values) - 1
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node)
                     if not isinstance(child, ast.expr_context))
    return deepest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--libcst", action="store_true", help="also time libcst's parse of each file")
    args = parser.parse_args()
    sys.setrecursionlimit(20_000)  # as pinlint does
    seconds = collections.Counter()
    depths = []
    skipped = 0
    for folder in args.folders:
        for path in sorted(Path(folder).rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                skipped += 1
                continue
            started = time.perf_counter()
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                skipped += 1
                continue
            parsed = time.perf_counter()
            first_too_deep(tree, text, MAX_DEPTH)
            walked = time.perf_counter()
            seconds["ast.parse"] += parsed - started
            seconds["depth walk"] += walked - parsed
            if args.libcst:
                import libcst
                try:
                    libcst.parse_module(text)
                except Exception:  # noqa: BLE001 - only its time matters here
                    pass
                seconds["libcst parse"] += time.perf_counter() - walked
            depths.append((full_depth(tree), str(path)))
    if not depths:
        print("no Python files parsed")
        return 1
    print(f"files: {len(depths)} parsed, {skipped} unreadable or not Python (not counted)")
    for name, value in seconds.items():
        print(f"{name:>13}: {value:7.2f} s")
    walk = seconds["depth walk"]
    print(f"depth walk / ast.parse: {walk / seconds['ast.parse']:.3f}")
    if args.libcst:
        print(f"depth walk / libcst parse: {walk / seconds['libcst parse']:.3f}")
    depths.sort()
    print(f"deepest nesting (libcst levels): {depths[-1][0]} in {depths[-1][1]}; limit {MAX_DEPTH}")
    past_half = [(d, p) for d, p in depths if d > MAX_DEPTH // 2]
    print(f"files past half the limit: {len(past_half)}" + "".join(f"\n  {d} {p}" for d, p in past_half))
    buckets = collections.Counter(min(d // 10 * 10, 100) for d, _ in depths)
    print("files by depth (10s; 100 = 100 or more): "
          + ", ".join(f"{b}: {n}" for b, n in sorted(buckets.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
