"""pinlint/parsing.py: the guard in front of libcst's native parser.

The depth walk prunes every subtree whose source is shorter than the levels left; these tests hold
it to an unpruned walk over real and generated programs (odd line endings and non-ASCII included),
so a pruning bug that would let a crashing file through to libcst fails here, not in a user's run.
"""

from __future__ import annotations

import ast
import functools
import random
import re
import sys
from pathlib import Path

import pytest

from pinlint import parsing
from pinlint.parsing import Parsed, first_too_deep, longest_statement_tokens, parse, syntax_error

from fuzzing import ProgramGenerator, seed_corpus

REPO = Path(__file__).resolve().parent.parent


def full_depth(node: ast.AST, text: str, depth: int = 0) -> int:
    """Deepest level as libcst nests it, walking every node (the reference for the pruned walk)."""
    if isinstance(node, ast.BoolOp):
        depth += len(node.values) - 1
    elif isinstance(node, ast.alias):
        depth += node.name.count(".")
    elif isinstance(node, ast.ImportFrom):
        depth += (node.module or "").count(".")
    elif isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))):
        depth += max(_pieces(ast.get_source_segment(text, node)) - 1, 0)
    children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr_context)]
    return max([depth] + [full_depth(c, text, depth + 1) for c in children])


def _pieces(segment: str) -> int:
    import io
    import tokenize
    tokens = tokenize.generate_tokens(io.StringIO("(" + segment + "\n)").readline)
    return sum(t.type == tokenize.STRING or t.type == getattr(tokenize, "FSTRING_START", -1) for t in tokens)


def libcst_depth(node) -> int:
    """The real depth of libcst's tree (for small programs)."""
    return 1 + max((libcst_depth(child) for child in node.children), default=0)


CHAINS = {
    "and": lambda n: "x = (a and\n" + " a and\n" * n + " a)\n",
    "sum": lambda n: "x = " + " + ".join(["a"] * (n + 1)) + "\n",
    "subscripts": lambda n: "x = a" + "[0]" * n + "\n",
    "calls": lambda n: "x = (a\n" + " ()\n" * n + ")\n",
    "attributes": lambda n: "x = a" + ".b" * n + "\n",
    "conditionals": lambda n: "x = " + "a if b else " * n + "c\n",
    "nots": lambda n: "x = " + "not " * n + "a\n",
    "lambdas": lambda n: "x = " + "lambda: " * n + "a\n",
    "elifs": lambda n: "if a:\n    pass\n" + "elif a:\n    pass\n" * n,
    "non-ascii": lambda n: "é = (ü and\n" + " ü and\n" * n + " ü)\n",
    "crlf": lambda n: ("x = (a or\n" + " a or\n" * n + " a)\n").replace("\n", "\r\n"),
    "lone-cr": lambda n: ("x = (a or\n" + " a or\n" * n + " a)\n").replace("\n", "\r"),
    "form-feed-and-tabs": lambda n: "\f\nif a:\n\tx = (a +\n" + "\t a +\n" * n + "\t a)\n",
    "decorated-function": lambda n: "@a" + ".b" * n + "\ndef f(): pass\n",
    "decorated-class": lambda n: "@x\n@(a" + " and a" * n + ")\nclass C: pass\n",
    "import": lambda n: "import os, a" + ".b" * n + "\n",
    "import-from": lambda n: "from a" + ".b" * n + " import c\n",
    "implicit-concatenation": lambda n: "x = (" + " ".join(['"a"'] * (n + 1)) + ")\n",
    "implicit-f-string-concatenation": lambda n: "x = (" + "\n".join(["f'{a}'"] * (n + 1)) + ")\n",
}


@functools.lru_cache(maxsize=1)
def _corpus() -> tuple:
    texts = [p.read_text(encoding="utf-8") for p in sorted((REPO / "fixtures").rglob("*.py"))]
    texts += [text for _, text in seed_corpus()]
    rng = random.Random(7)
    generator = ProgramGenerator(rng)
    texts += [generator.program() for _ in range(60)]
    return tuple(texts)


def corpus() -> list:
    # Built once per process: five parametrized tests and the span test walk the same programs.
    return list(_corpus())


@pytest.mark.parametrize("limit", [3, 6, 10, 20, 40])
def test_pruned_walk_agrees_with_the_full_walk_on_real_programs(limit):
    checked = 0
    for text in corpus():
        tree = ast.parse(text)
        deepest = full_depth(tree, text)
        found = first_too_deep(tree, text, limit)
        assert (found is not None) == (deepest > limit), (deepest, limit, text[:400])
        checked += 1
    assert checked > 50


@pytest.mark.parametrize("kind", sorted(CHAINS))
@pytest.mark.parametrize("n", [5, 30, 120])
def test_pruned_walk_agrees_with_the_full_walk_on_chains(kind, n):
    text = "import cupy as cp\n" + CHAINS[kind](n)
    tree = ast.parse(text)
    deepest = full_depth(tree, text)
    for limit in range(max(1, deepest - 4), deepest + 3):
        assert (first_too_deep(tree, text, limit) is not None) == (deepest > limit), (kind, n, limit)


def test_the_reported_line_is_the_statement_that_goes_too_deep():
    text = "import cupy as cp\ny = 1\n" + CHAINS["and"](50) + "z = 2\n"
    assert first_too_deep(ast.parse(text), text, 20) == 3


@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_chains_past_the_limit_never_reach_libcst(kind, monkeypatch):
    # The crash itself (a SIGSEGV) is tested through the command line in test_hostile_inputs.py;
    # here: libcst is not even called for anything past the limit.
    def libcst_must_not_be_called(text):
        raise AssertionError("libcst was asked to parse a file past the depth limit")

    monkeypatch.setattr(parsing.cst, "parse_module", libcst_must_not_be_called)
    monkeypatch.setattr(parsing, "MAX_DEPTH", 200)
    parsed = parse("import cupy as cp\n" + CHAINS[kind](400))
    assert parsed.module is None and parsed.error is None
    assert "nested more than 200 levels deep" in parsed.skipped


@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_chains_under_the_limit_are_parsed(kind):
    parsed = parse("import cupy as cp\n" + CHAINS[kind](300))
    assert parsed.module is not None, parsed


def test_python_syntax_errors_keep_pythons_message_and_place():
    parsed = parse("import cupy as cp\nprint 'hello'\n")
    assert parsed.module is None and parsed.skipped is None
    assert "Missing parentheses" in parsed.error.msg and parsed.error.lineno == 2


def test_nul_bytes_and_nesting_past_cpython_are_errors_without_libcst(monkeypatch):
    monkeypatch.setattr(parsing.cst, "parse_module", lambda text: pytest.fail("libcst asked"))
    assert "null bytes" in parse("x = 1\x00\n").error.msg
    assert parse("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n").error is not None


def test_valid_python_libcst_rejects_is_skipped_not_an_error(monkeypatch):
    # E.g. syntax newer than the libcst installed: the file is fine, pinlint just cannot read it.
    try:
        parsing.cst.parse_module("x = (\n")
    except parsing.cst.ParserSyntaxError as exc:
        rejection = exc

    def reject(text):
        raise rejection

    monkeypatch.setattr(parsing.cst, "parse_module", reject)
    parsed = parse("import cupy as cp\nx = 1\n")
    assert parsed.module is None and parsed.error is None
    assert parsed.skipped.endswith("valid Python that libcst cannot parse; skipped")


@pytest.mark.parametrize("failure", [RecursionError, MemoryError, ValueError])
def test_libcst_failing_on_valid_python_is_a_skip_not_pin000(monkeypatch, failure):
    def fail(text):
        raise failure("out of stack")

    monkeypatch.setattr(parsing.cst, "parse_module", fail)
    assert parse("x = 1\n") == Parsed(skipped=f"libcst failed on this file ({failure.__name__}); skipped")
    assert "Missing parentheses" in parse("print 'x'\n").error.msg  # not Python: Python's verdict


def test_a_panic_in_libcst_is_a_skip_not_a_crash(monkeypatch):
    class PanicException(BaseException):  # what pyo3 raises for a Rust panic
        pass

    def panic(text):
        raise PanicException("index out of bounds")

    monkeypatch.setattr(parsing.cst, "parse_module", panic)
    assert parse("x = 1\n").skipped == "libcst failed on this file (PanicException); skipped"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="needs a Python older than PEP 695 syntax")
def test_syntax_newer_than_this_python_is_parsed_by_libcst():
    text = "type Buffer[T] = list[T]\n"
    assert syntax_error(text) is None and parse(text).module is not None


def test_unparsable_text_with_a_huge_statement_is_not_handed_to_libcst(monkeypatch):
    # Python rejects it, so its depth cannot be measured: libcst could crash, Python's verdict stands.
    monkeypatch.setattr(parsing.cst, "parse_module", lambda text: pytest.fail("libcst asked"))
    text = "print 'old'\nx = (a and\n" + " a and\n" * 2000 + " a)\n"
    assert "Missing parentheses" in parse(text).error.msg


def test_longest_statement_tokens_counts_what_can_nest_in_one_logical_line():
    assert longest_statement_tokens("x = 1\ny = (a +\n b)\n") == 2  # `(` and `+`
    assert longest_statement_tokens("x = '''\n\n\n'''\n") == 1
    assert longest_statement_tokens("x = [" + "1, " * 5000 + "]\n") == 1  # a long flat literal
    assert longest_statement_tokens("x = (a and b or not c)\n") == 4
    assert longest_statement_tokens("x = 'a' 'b' f'{c}'\n") == 2 + len("f'{c}'")
    assert longest_statement_tokens("x = (\n") > parsing.MAX_DEPTH  # cannot be tokenized: no bound


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_spans_never_undercount_a_nodes_characters(newline):
    # ast's columns are UTF-8 byte offsets; a span counted short could prune a subtree that is too deep.
    texts = ["ééé = (a and\n a and\n a)\n", "x = 1\nü = {'ä': [1,\n 2], 'ö': f'{ß!r}'}\n",
             "\f\nif a:\n\tx = ('€€' +\n\t 'a')\n"]
    texts += corpus()[:40]
    for text in texts:
        text = text.replace("\n", newline)
        starts = parsing.line_starts(text)
        lines = _lines_as_ast_splits_them(text)
        for node in ast.walk(ast.parse(text)):
            if getattr(node, "end_lineno", None) is not None:
                segment = _segment(lines, node)
                if len(text) < 200:  # the fast segment is ast's own on the short hand-written texts
                    assert segment == ast.get_source_segment(text, node)
                assert parsing.source_span(node, starts) >= len(segment), (text, ast.dump(node))


def _lines_as_ast_splits_them(text: str) -> list:
    # ast.get_source_segment splits the whole text again for every node (quadratic on a long
    # program); this is its own splitting (lines end at \r\n, \r or \n, never at \f), done once.
    return [line for line in re.split(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)", text) if line]


def _segment(lines: list, node) -> str:
    # ast.get_source_segment's arithmetic: columns are UTF-8 byte offsets into their line.
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first].encode()[node.col_offset:node.end_col_offset].decode()
    return "".join([lines[first].encode()[node.col_offset:].decode(), *lines[first + 1:last],
                    lines[last].encode()[:node.end_col_offset].decode()])


@pytest.mark.parametrize("text", ["x = 1\r", "x = 1\r\r", "x = 1\r# c\r", "\r", "if a:\r    x = 1\r", "x = 1\r\n\r",
                                  "x = 1\n\r", "x = 1\r\n", "x = 1\n", "x = 1", ""])
def test_the_module_gives_the_text_back_byte_for_byte(text):
    # libcst alone drops a final lone CR ('x = 1\r' -> 'x = 1'); every fix would then eat it.
    assert parse(text).module.code == text


def test_a_file_libcst_does_not_reproduce_is_not_fixed(monkeypatch):
    from pinlint.engine import fix_text
    from pinlint.settings import Settings
    from pinlint.checks.pin001 import PageableAsyncCopy
    real = parsing.cst.parse_module
    monkeypatch.setattr(parsing.cst, "parse_module", lambda text: real(text + "\n# not in the file\n"))
    text = PageableAsyncCopy.INVALID[0]
    outcome = fix_text(text, "a.py", Settings(), unsafe=True)
    assert outcome.text == text and outcome.error is None
    assert "no fixes offered: libcst does not write this file back exactly" in outcome.result.warning
    assert outcome.result.findings and all(f.fix is None and f.plan is None for f in outcome.result.findings)


def test_a_file_libcst_really_does_not_reproduce_gets_findings_without_fixes(tmp_path):
    # Found in review: a file ending in a blank line and spaces without a newline; its JSON edits
    # used to delete that blank line, an unrelated change.
    from pinlint.engine import lint_text
    from pinlint.settings import Settings
    text = (REPO / "tests" / "fix_cases" / "cupy_asarray_loop.in.py").read_text(encoding="utf-8") + "\n "
    assert parsing.cst.parse_module(text).code != text
    result = lint_text(text, "a.py", Settings())
    assert [f.code for f in result.findings] == ["PIN007"] and result.findings[0].fix is None
    assert "no fixes offered" in result.warning


@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_the_measure_follows_libcsts_real_depth(kind):
    # What libcst nests and Python's tree keeps flat must be counted, or a deep file reaches libcst
    # unmeasured (dotted imports and implicit concatenation did, and crashed it).
    for n in (40, 160):
        text = "import cupy as cp\n" + CHAINS[kind](n)
        measured = full_depth(ast.parse(text), text)
        real = libcst_depth(parsing.cst.parse_module(text))
        assert real <= 3 * measured + 12, (kind, n, real, measured)


# ------------------------------------------------------------------ the collector and validation
def test_a_parse_leaves_the_collector_and_libcst_validation_as_they_were():
    """The parse pauses the garbage collector and libcst's node checks; both come back, so trees
    built by hand (the fixers') are still validated and the caller's collector still runs."""
    import gc

    import libcst as cst

    assert gc.isenabled()
    assert parse("import cupy\nx = cupy.zeros(3)\n").module is not None
    assert gc.isenabled()
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")  # validation is back after the parse
    gc.disable()
    try:
        parse("x = 1\n")
        assert not gc.isenabled()  # a caller that had paused it keeps it paused
    finally:
        gc.enable()


def test_a_failed_parse_restores_validation_too():
    import libcst as cst

    assert parse("x = (\n").error is not None
    with pytest.raises(cst.CSTValidationError):
        cst.Name("1x")


def test_a_run_keeps_its_trees_out_of_the_collector_and_gives_them_back_at_its_end():
    """In a run (``keep_trees``) each parsed module goes to the collector's permanent generation, so
    later collections do not walk every tree the run keeps; at its end they return to it."""
    import gc

    gc.unfreeze()
    parsing.keep_trees(True)
    try:
        parse("import cupy\n" + "x = cupy.zeros(3)\n" * 50)
        assert gc.get_freeze_count() > 0
    finally:
        parsing.keep_trees(False)
    assert gc.get_freeze_count() == 0
    parse("x = 1\n")
    assert gc.get_freeze_count() == 0  # outside a run nothing is frozen


# ------------------------------------------------------------------ long files, parsed in pieces
def _long_program(pieces: list) -> str:
    """The corpus's programs one after another (each as a function's body would not parse: as they are)."""
    return "\n\n".join(pieces) + "\n"


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(parsing, "SEGMENT_LINES", 12)


def test_a_long_file_parsed_in_pieces_writes_back_its_own_text(small_pieces):
    texts = [text for _, text in seed_corpus()]
    texts += ["# a comment between definitions\n\n\n@decorator\n@other(1)\ndef f():\n    '''doc\ndef g():\n'''\n"
              "    return 1\n    # trailing, indented\n\n# at column 0\nclass C:\n    x = (1,\ndef_ := 2)\n"]
    text = _long_program(texts)
    assert parsing._piece_starts(text)  # it is cut
    parsed = parse(text)
    assert parsed.module is not None and parsed.module.code == text


def test_a_long_file_in_pieces_gives_the_findings_of_a_whole_parse(monkeypatch):
    import dataclasses

    from pinlint import engine
    from pinlint.settings import Settings
    text = _long_program([text for _, text in seed_corpus() if "__future__" not in text][::3])

    def check(lines: int) -> list:
        monkeypatch.setattr(parsing, "SEGMENT_LINES", lines)
        engine.start_project()
        try:
            # positions and messages are the point: the fixes' edits (a transform of the whole
            # module per fix) are left out
            result = engine.lint_text(text, "long.py", dataclasses.replace(Settings(), render_fixes=False))
        finally:
            engine.end_project()
        return [(f.code, f.location, f.end_location, f.message, f.fix is not None) for f in result.findings]

    whole = check(10 ** 9)
    assert len(whole) > 10
    assert check(40) == whole
    assert len(parsing._piece_starts(text)) > 3  # (SEGMENT_LINES is 40 here) it was cut


def test_a_piece_python_rejects_makes_the_file_parse_whole(small_pieces):
    # A cut inside a string: the piece before it does not parse, so the file is read whole (and it is
    # valid): nothing is lost.
    text = "x = '''\n" + "line\n" * 30 + "def not_code():\n" + "line\n" * 30 + "'''\n" + "def f():\n    return x\n" * 20
    parsed = parse(text)
    assert parsed.module is not None and parsed.module.code == text
    assert len(parsed.module.body) == 21


def test_a_syntax_error_in_a_long_file_is_reported_where_python_puts_it(small_pieces):
    text = "def f():\n    return 1\n\n" * 30 + "def broken(:\n    pass\n" + "def g():\n    return 2\n\n" * 30
    parsed = parse(text)
    assert parsed.error is not None and parsed.error.lineno == 91


def test_top_level_rows_read_in_pieces_are_those_of_a_whole_parse(small_pieces):
    text = _long_program([text for _, text in seed_corpus() if "__future__" not in text])
    assert parsing.top_level_rows(text) == parsing.top_level_rows_whole(text)


MIXED_INDENTATION = (
    "import numpy as np\n"
    "from numba import cuda\n"
    "class Table:\n"
    "    '''host table'''\n"
    "\t\n"
    "    def __init__(self, n):\n"
    "\t    self.h = np.ones(n, dtype=np.float32)\n"
    "\t    self.s = cuda.stream()\n"
    "\n"
    "    def upload(self):\n"
    "\t    return cuda.to_device(self.h, stream=self.s)\n"
    "\n"
    "t = Table(1 << 24)\n"
    "d = t.upload()\n")


def test_valid_python_indented_with_tabs_and_spaces_is_analysed_with_its_own_columns(tmp_path):
    # openai_onboarding's notebooks (survey 50 AD): a space-indented class whose method bodies are
    # indented with a tab; CPython accepts it, libcst's tokenizer does not, and the whole file was
    # skipped with a warning, hiding its findings.
    from pinlint.engine import lint_text
    from pinlint.settings import Settings
    ast.parse(MIXED_INDENTATION)
    parsed = parse(MIXED_INDENTATION)
    assert parsed.module is not None and parsed.expanded is not None
    result = lint_text(MIXED_INDENTATION, "tabs.py", Settings())
    assert result.warning is None
    [finding] = result.findings
    row = 11
    written = MIXED_INDENTATION.splitlines()[row - 1]
    assert (finding.code, finding.location.row, finding.location.column) == ("PIN001", row, written.index("cuda") + 1)
    assert [(r.location.row, r.location.column) for r in finding.related] == \
        [(7, MIXED_INDENTATION.splitlines()[6].index("np.ones") + 1)]


def test_a_fix_run_leaves_a_file_with_mixed_indentation_as_it_was_and_add_noqa_keeps_its_tabs(tmp_path):
    from helpers import pinlint_in_process
    path = tmp_path / "tabs.py"
    path.write_text(MIXED_INDENTATION)
    run = pinlint_in_process(tmp_path, "check", "tabs.py", "--no-cache", "--fix", "--unsafe-fixes")
    assert run.returncode == 1 and "PIN001" in run.stdout and path.read_text() == MIXED_INDENTATION
    pinlint_in_process(tmp_path, "check", "tabs.py", "--no-cache", "--add-noqa")
    lines, before = path.read_text().splitlines(), MIXED_INDENTATION.splitlines()
    assert lines[10] == before[10] + "  # noqa: PIN001"
    assert lines[:10] + lines[11:] == before[:10] + before[11:]
