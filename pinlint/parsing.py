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
import gc
import io
import re
import tokenize
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

import libcst as cst

# Deepest nesting (as libcst builds the tree) pinlint hands to libcst. The deepest statement in the
# 2,285 files of six CUDA Python projects is 29 levels; the deepest in sympy is 567 (a generated
# table): bench/parse_guard.py. libcst parses 1,000 levels of its slowest kind (chained
# subscripts) in about 0.6 s and crashes somewhere past 6,000.
MAX_DEPTH = 1_000

# Lines past which a file is parsed in pieces. libcst's native parser holds about 15 kB per line of
# the text it is given until it has built the tree (a 100,000-line file peaked at 1.9 GB; the tree it
# leaves is about 1.3 kB a line), so a long file is parsed a run of top-level statements at a time and
# the pieces are joined into one module whose code is the file's text.
SEGMENT_LINES = 4_000

# Validation while parsing. libcst checks each node's invariants as it is built (a space after a
# keyword, say): that guards trees built by hand, but a tree its own parser builds from text Python
# has accepted holds them already, and the checks were 15% of the parse. They stay on for every
# tree built outside a parse (the fixers' edits).
def _trusted(self) -> None:
    pass


# Garbage collection while parsing. A parse allocates hundreds of thousands of objects that form no
# cycles, so every few hundred of them CPython's collector runs for nothing, and its full collections
# walk every tree a run keeps (a run keeps each module it analyses, for the other files' calls into
# it): on cupy's 668 analysed files that was 17 s of a 39 s single-process run. So the collector
# pauses during a parse, and in a batch run (``keep_trees``) each new tree then moves to the
# collector's permanent generation, where it costs nothing; reference counting still frees it.
_KEEP_TREES = False


def keep_trees(keep: bool) -> None:
    """A run that keeps its parsed modules to its end (a check, a worker) says so; at its end the
    kept objects go back to the collector."""
    global _KEEP_TREES
    _KEEP_TREES = keep
    if not keep:
        gc.unfreeze()


@contextmanager
def _parsing():
    enabled = gc.isenabled()
    gc.disable()
    validate = cst.CSTNode.__dict__.get("__post_init__")
    if validate is not None:
        cst.CSTNode.__post_init__ = _trusted
    try:
        yield
    finally:
        if validate is not None:
            cst.CSTNode.__post_init__ = validate
        if enabled:
            gc.enable()
        if _KEEP_TREES:
            gc.freeze()


# Messages of Python's parser (and our own stand-ins) for input no Python interpreter accepts.
_PAST_EVERY_PARSER = ("too deeply nested", "too many nested", "too complex", "too many levels of indentation",
                      "null bytes", "MemoryError")


@dataclass(frozen=True)
class Parsed:
    """Exactly one of the first three is set."""
    module: Optional[cst.Module] = None
    error: Optional[SyntaxError] = None   # not Python: reported as PIN000
    skipped: Optional[str] = None         # valid Python pinlint cannot analyse safely: a warning
    # With ``module``: the text libcst parsed instead of the file's, its indentation's tabs expanded
    # (``expand_indentation``); the rows are the file's, columns on those lines are not.
    expanded: Optional[str] = None


def expand_indentation(text: str) -> Optional[str]:
    """The text with the tabs of each line's leading whitespace expanded to Python's tab stops (8),
    or None where no line's indentation has a tab. Python accepts a block indented with spaces
    inside one indented with tabs where the columns agree; libcst's tokenizer does not."""
    lines = text.splitlines(keepends=True)
    changed = False
    for index, line in enumerate(lines):
        body = line.lstrip(" \t")
        lead = line[:len(line) - len(body)]
        if "\t" in lead:
            lines[index] = lead.expandtabs(8) + body
            changed = True
    return "".join(lines) if changed else None


def parse(text: str, verdict: Optional[tuple] = None) -> Parsed:
    """``verdict``: ``python_parse(text)`` when the caller already has it."""
    if verdict is None and text.count("\n") > SEGMENT_LINES:
        parsed = _parse_in_pieces(text)
        if parsed is not None:
            return parsed
    tree, error = verdict or python_parse(text)
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
    if tree is not None:
        _remember_rows(text, [statement.lineno for statement in tree.body])
    tree = verdict = None  # Python's tree is not needed past this point: free it before libcst's parse
    parsed = _libcst(text, error, lambda: cst.parse_module(text))
    if parsed.skipped is not None and error is None and "\t" in text:
        # Valid Python whose indentation mixes tabs and spaces (Python's columns agree; libcst's
        # tokenizer compares them as written): analysed as the same code indented with spaces.
        expanded = expand_indentation(text)
        if expanded is not None:
            retry = _libcst(expanded, None, lambda: cst.parse_module(expanded))
            if retry.module is not None:
                return Parsed(module=retry.module, expanded=expanded)
    return parsed


def _libcst(text: str, error: Optional[SyntaxError], build) -> Parsed:
    """libcst's tree (``build()``), with its failures said plainly."""
    try:
        with _parsing():
            module = build()
    except cst.ParserSyntaxError as exc:
        if error is not None:
            return Parsed(error=error)  # Python's message: what users see when they run the file
        # Valid Python that libcst's grammar does not take (syntax newer than the libcst
        # installed, say): not the file's fault, so not a PIN000.
        return Parsed(skipped=f"line {exc.editor_line}: valid Python that libcst cannot parse; skipped")
    except (RecursionError, MemoryError, ValueError) as exc:
        if error is not None:
            return Parsed(error=error)
        return Parsed(skipped=f"libcst failed on this file ({type(exc).__name__}); skipped")  # valid Python
    except BaseException as exc:  # noqa: BLE001 - a panic in libcst's native code is a BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return Parsed(skipped=f"libcst failed on this file ({type(exc).__name__}); skipped")
    if not module.has_trailing_newline and text.endswith("\r"):
        # libcst drops a file's final lone CR (old Mac line endings) when it writes the code back.
        module = module.with_changes(has_trailing_newline=True)
    return Parsed(module=module)


# A line where a top-level definition may begin: a piece of a long file starts at one.
_DEFINITION_LINE = re.compile(r"^(?:@|def |class |async def )", re.MULTILINE)


def _piece_starts(text: str) -> list:
    """Offsets where the pieces of a long file begin, about every ``SEGMENT_LINES`` lines: lines that
    start a top-level definition (or its first decorator) by the look of them. A wrong guess (one
    inside a string, a bracket, between a decorator and its definition) leaves a piece that Python
    rejects, and the file is then parsed whole."""
    starts, line, position, last_line = [], 1, 0, 1
    for match in _DEFINITION_LINE.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        if line - last_line < SEGMENT_LINES:
            continue
        before = text.rfind("\n", 0, max(position - 1, 0))
        if text.startswith("@", before + 1) and before + 1 != position:
            continue  # a decorated definition begins at its first decorator
        starts.append(position)
        last_line = line
    return starts


def _python_pieces(text: str, bounds: list):
    """Python's tree of each piece of ``text`` between ``bounds``, with the number of lines before it;
    (None, error) for a piece it rejects. Each tree is the caller's to drop before the next."""
    line = 0
    for begin, end in zip(bounds, bounds[1:]):
        piece = text[begin:end]
        tree, error = python_parse(piece)
        yield piece, line, tree, error
        line += piece.count("\n")


def _parse_in_pieces(text: str) -> Optional[Parsed]:
    """A long file parsed a piece at a time, by Python (each piece checked and measured for depth,
    its tree dropped at once) and then by libcst; None where the file must be parsed whole (no
    piece boundary found, or a piece Python rejects: the error is then the whole file's)."""
    starts = _piece_starts(text)
    if not starts:
        return None
    bounds = [0] + starts + [len(text)]
    rows: list = []
    for piece, line, tree, error in _python_pieces(text, bounds):
        if error is not None:
            return None
        deep = first_too_deep(tree, piece, MAX_DEPTH)
        if deep is not None:
            return Parsed(skipped=f"line {line + deep}: nested more than {MAX_DEPTH:,} levels deep, "
                                  "past what pinlint parses safely; skipped")
        rows += [line + statement.lineno for statement in tree.body]
        tree = None
    _remember_rows(text, rows)
    return _libcst(text, None, lambda: _joined(text, bounds))


# The rows ``top_level_rows`` gives, kept from the parse that found them (the positions of a file's
# findings need them, and Python's parser read the same text a moment before): recent texts only.
_ROWS: "OrderedDict[str, list]" = OrderedDict()
_ROWS_KEPT = 64


def _remember_rows(text: str, rows: list) -> None:
    _ROWS[text] = rows
    while len(_ROWS) > _ROWS_KEPT:
        _ROWS.popitem(last=False)


def top_level_rows(text: str) -> Optional[list]:
    """The first row of each top-level statement, as Python's parser gives them (a decorated
    definition at its ``def``); None when Python rejects the text. A long file is read in the pieces
    ``parse`` uses, each tree dropped at once (Python's tree of a 100,000-line file is 450 MB)."""
    found = _ROWS.get(text)
    if found is not None:
        return found
    starts = _piece_starts(text) if text.count("\n") > SEGMENT_LINES else []
    rows: list = []
    for _, line, tree, error in _python_pieces(text, [0] + starts + [len(text)]):
        if error is not None:
            return top_level_rows_whole(text) if starts else None
        rows += [line + statement.lineno for statement in tree.body]
        tree = None
    return rows


def top_level_rows_whole(text: str) -> Optional[list]:
    tree, error = python_parse(text)
    return None if error is not None else [statement.lineno for statement in tree.body]


def _joined(text: str, bounds: list) -> cst.Module:
    """One module from the pieces of ``text`` between ``bounds``: each piece's leading and trailing
    lines (its module's header and footer) go to the statement that follows them, so the module
    writes back the same code."""
    body: list = []
    carried: list = []   # lines still looking for the statement they lead
    first = None
    indent = None        # as a whole parse finds it: from the first indented block
    for begin, end in zip(bounds, bounds[1:]):
        piece = cst.parse_module(text[begin:end])
        if indent is None and any(isinstance(s, cst.BaseCompoundStatement) for s in piece.body):
            indent = piece.default_indent
        statements = list(piece.body)
        if first is None:
            first = piece
        elif statements:
            carried += list(piece.header)
            statements[0] = statements[0].with_changes(leading_lines=[*carried, *statements[0].leading_lines])
            carried = []
        body += statements
        carried += list(piece.footer)
        last = piece
    return cst.Module(body=body, header=first.header, footer=carried, encoding=first.encoding,
                      default_indent=indent or first.default_indent,
                      default_newline=first.default_newline, has_trailing_newline=last.has_trailing_newline)


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
    verdict = python_parse(text)
    error = verdict[1]
    if error is None or past_every_parser(error):
        return error
    return parse(text, verdict).error


def first_too_deep(tree: ast.AST, text: str, limit: int) -> Optional[int]:
    """The line of the first statement libcst would nest more than ``limit`` levels deep, or None.

    Each level of nesting takes at least one character of source, so a subtree spanning fewer
    characters than the levels left cannot go past the limit and is not walked: only long
    statements are, which keeps this to a small fraction of the parse time."""
    if len(text) <= limit:
        return None
    data = text.encode("utf-8", "surrogatepass")
    starts = _starts(data)
    stack = [(tree, 0, 1)]
    while stack:
        node, depth, line = stack.pop()
        depth += _flat_in_python(node, data, starts)
        if depth > limit:
            return line
        depth += 1
        for child in ast.iter_child_nodes(node):
            lineno = getattr(child, "lineno", None)
            if lineno is not None:
                if getattr(child, "end_lineno", None) is not None and depth + source_span(child, starts) <= limit:
                    continue
                stack.append((child, depth, _first_line(child) if isinstance(child, ast.stmt) else line))
            elif not isinstance(child, ast.expr_context):
                stack.append((child, depth, line))
    return None


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", None)
    return decorators[0].lineno if decorators else statement.lineno


def _flat_in_python(node: ast.AST, data: bytes, starts: list) -> int:
    """Levels libcst nests where Python's tree is flat: `a and b and c` is ((a and b) and c), a
    dotted name in an import is a chain of attributes, and `"a" "b" "c"` is a chain of
    concatenations (Python joins them into one constant)."""
    kind = type(node)
    if kind is ast.BoolOp:
        return len(node.values) - 1
    if kind is ast.alias:
        return node.name.count(".")
    if kind is ast.ImportFrom:
        return (node.module or "").count(".")
    if kind is ast.JoinedStr or (kind is ast.Constant and isinstance(node.value, (str, bytes))):
        return max(_string_pieces(node, data, starts) - 1, 0)
    return 0


def _string_pieces(node: ast.AST, data: bytes, starts: list) -> int:
    """How many literals a string constant is written as (reached only for long ones: the walk
    prunes short subtrees)."""
    start = starts[node.lineno - 1] + node.col_offset
    end = starts[node.end_lineno - 1] + node.end_col_offset
    source = "(" + data[start:end].decode("utf-8", "surrogatepass") + "\n)"
    pieces = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            pieces += token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_START", -1)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return len(source)  # cannot count them: no more pieces than characters
    return pieces


def source_span(node: ast.AST, starts: list) -> int:
    """At least the number of characters of the node's source and its children's (given
    ``line_starts`` of its text). A decorated definition starts at its first decorator's `@`, not
    at the `def` or `class` where Python's tree places it."""
    lineno, column = node.lineno, node.col_offset
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        lineno, column = decorators[0].lineno, max(decorators[0].col_offset - 1, 0)
    return starts[node.end_lineno - 1] + node.end_col_offset - starts[lineno - 1] - column


def line_starts(text: str) -> list:
    """Offset of each line as Python's parser numbers them, in UTF-8 bytes (ast's column unit):
    never fewer than the characters of any span, which keeps the depth bound sound."""
    return _starts(text.encode("utf-8", "surrogatepass"))


def _starts(data: bytes) -> list:
    return [0, *(match.end() for match in _NEWLINE.finditer(data))]


_NEWLINE = re.compile(rb"\r\n|\r|\n")


def longest_statement_tokens(text: str) -> int:
    """The most tokens that can open a level of libcst's tree in one logical line (operators, dots,
    opening brackets, `and`/`or`/`not`/`if`/`lambda`/..., adjacent strings; not names, numbers,
    commas or closing brackets): a bound on its nesting for text Python cannot parse."""
    longest = count = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                longest, count = max(longest, count), 0
            else:
                count += _levels(token)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return max(longest, count, MAX_DEPTH + 1)  # cannot bound it: treat as too long
    return max(longest, count)


_NESTING_KEYWORDS = frozenset({"and", "or", "not", "if", "lambda", "await", "yield", "for", "async", "is", "in"})
_FLAT_OPERATORS = frozenset({",", ";", ":", "=", ")", "]", "}", "->"})
_NEVER_NEST = frozenset({tokenize.NUMBER, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})


def _levels(token: tokenize.TokenInfo) -> int:
    """How many levels of libcst's tree one token can open, at most."""
    if token.type == tokenize.OP:
        return token.string not in _FLAT_OPERATORS
    if token.type == tokenize.NAME:
        return token.string in _NESTING_KEYWORDS
    if token.type == tokenize.STRING and "f" in token.string.split(token.string[-1], 1)[0].lower():
        return len(token.string)  # before 3.12 an f-string is one token, its expressions inside it
    return token.type not in _NEVER_NEST  # a string (implicit concatenation nests), 3.12's f-string parts
