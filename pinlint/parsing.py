"""Turn source text into a libcst module, or say plainly why not, without ever crashing.

libcst's native parser is the one part of pinlint that can kill the process: it recurses once per
level of expression nesting, and libcst nests what Python's own parser keeps flat (each `and` of a
chain, each term of a sum, each `.b` of `a.b.b.b`). About 8,000 levels overflow its stack (SIGSEGV),
and its time grows with the square of the depth (2,000 chained subscripts take 4 s). So Python's
parser, about 8x faster, reads every file first: what it rejects past its own limits never reaches
libcst, and what it accepts is measured for depth before libcst is asked.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Optional

import libcst as cst

# Deepest nesting (as libcst builds the tree) pinlint hands to libcst. The deepest statement in the
# 2,285 files of six CUDA Python projects is 29 levels; the deepest in sympy is 567 (a generated
# table): bench/parse_guard.py. libcst parses 1,000 levels of its slowest kind (chained
# subscripts) in about 0.6 s and crashes somewhere past 6,000.
MAX_DEPTH = 1_000

# Messages of Python's parser (and our own stand-ins) for input no Python interpreter accepts.
_PAST_EVERY_PARSER = ("too deeply nested", "too many nested", "too complex", "too many levels of indentation",
                      "null bytes", "MemoryError")


@dataclass(frozen=True)
class Parsed:
    """Exactly one of the three is set."""
    module: Optional[cst.Module] = None
    error: Optional[SyntaxError] = None   # not Python: reported as PIN000
    skipped: Optional[str] = None         # valid Python pinlint cannot analyse safely: a warning


def parse(text: str) -> Parsed:
    tree, error = python_parse(text)
    if error is not None and past_every_parser(error):
        return Parsed(error=error)
    if tree is not None:
        deep = first_too_deep(tree, text, MAX_DEPTH)
        if deep is not None:
            return Parsed(skipped=f"line {deep}: nested more than {MAX_DEPTH:,} levels deep, "
                                  "past what pinlint parses safely; skipped")
    elif len(text) > MAX_DEPTH and longest_statement_tokens(text) > MAX_DEPTH:
        # Python (this version) rejects the file and it cannot be measured for depth: asking libcst
        # could crash, so Python's verdict stands.
        return Parsed(error=error)
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        if error is not None:
            return Parsed(error=error)  # Python's message: what users see when they run the file
        # Valid Python that libcst's grammar does not take (5,000 implicitly joined strings, or
        # syntax newer than the libcst installed): not the file's fault, so not a PIN000.
        return Parsed(skipped=f"line {exc.editor_line}: valid Python that libcst cannot parse; skipped")
    except (RecursionError, MemoryError, ValueError) as exc:
        return Parsed(error=error or SyntaxError(f"{type(exc).__name__} while parsing"))
    if not module.has_trailing_newline and text.endswith("\r"):
        # libcst drops a file's final lone CR (old Mac line endings) when it writes the code back.
        module = module.with_changes(has_trailing_newline=True)
    return Parsed(module=module)


def python_parse(text: str) -> tuple:
    """Python's own verdict: (tree, None) or (None, SyntaxError)."""
    if "\x00" in text:
        return None, SyntaxError("source code cannot contain null bytes")
    try:
        return ast.parse(text), None
    except SyntaxError as exc:
        return None, exc
    except (RecursionError, MemoryError):
        return None, SyntaxError("too deeply nested for Python's parser")
    except ValueError as exc:
        return None, SyntaxError(f"ValueError: {exc}")


def past_every_parser(error: SyntaxError) -> bool:
    """Nesting past CPython's own limits (no interpreter runs it) or NUL bytes: libcst is not asked."""
    return any(limit in (error.msg or "") for limit in _PAST_EVERY_PARSER)


def syntax_error(text: str) -> Optional[SyntaxError]:
    """Whether a file is Python, for files no rule needs parsed: Python's parser decides, and libcst
    only where Python's complaint may be syntax newer than the running interpreter knows."""
    _, error = python_parse(text)
    if error is None or past_every_parser(error):
        return error
    return parse(text).error


def first_too_deep(tree: ast.AST, text: str, limit: int) -> Optional[int]:
    """The line of the first statement libcst would nest more than ``limit`` levels deep, or None.

    Each level of nesting takes at least one character of source, so a subtree spanning fewer
    characters than the levels left cannot go past the limit and is not walked: only long
    statements are, which keeps this to a small fraction of the parse time."""
    if len(text) <= limit:
        return None
    starts = line_starts(text)
    stack = [(tree, 0, 1)]
    while stack:
        node, depth, line = stack.pop()
        if type(node) is ast.BoolOp:
            depth += len(node.values) - 1  # libcst nests `a and b and c` as ((a and b) and c)
        if depth > limit:
            return line
        depth += 1
        for child in ast.iter_child_nodes(node):
            lineno = getattr(child, "lineno", None)
            if lineno is not None:
                if getattr(child, "end_lineno", None) is not None and depth + source_span(child, starts) <= limit:
                    continue
                stack.append((child, depth, lineno if isinstance(child, ast.stmt) else line))
            elif not isinstance(child, ast.expr_context):
                stack.append((child, depth, line))
    return None


def source_span(node: ast.AST, starts: list) -> int:
    """At least the number of characters of the node's source (given ``line_starts`` of its text)."""
    return starts[node.end_lineno - 1] + node.end_col_offset - starts[node.lineno - 1] - node.col_offset


def line_starts(text: str) -> list:
    """Offset of each line as Python's parser numbers them, in UTF-8 bytes (ast's column unit):
    never fewer than the characters of any span, which keeps the depth bound sound."""
    data = text.encode("utf-8", "surrogatepass")
    return [0, *(match.end() for match in _NEWLINE.finditer(data))]


_NEWLINE = re.compile(rb"\r\n|\r|\n")


def longest_statement_tokens(text: str) -> int:
    """Tokens in the longest logical line: a bound on its nesting for text Python cannot parse."""
    longest = count = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                longest, count = max(longest, count), 0
            elif token.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
                count += 1
    except (tokenize.TokenError, SyntaxError, ValueError):
        return max(longest, count, MAX_DEPTH + 1)  # cannot bound it: treat as too long
    return max(longest, count)
