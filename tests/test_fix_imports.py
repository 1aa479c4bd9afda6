"""Fixes spell names that are bound where they are used, and add imports only in the scope and
under the guard where the file already imports that library (issue 14, items 1 and 2).

Every fixed text is checked with Python's own ``symtable`` (no new unbound name) and ``ast`` (no
new load-time import, nor one under a weaker guard) through ``safety_props``.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider

from pinlint.engine import fix_text
from pinlint.fixes import NewImport, Namer, apply_plans, Plan, SAFE
from pinlint.settings import Settings

import safety_props
from helpers import source

CORPUS = Path(__file__).resolve().parent / "safety_corpus"


def _fixed(text: str, unsafe: bool = False) -> str:
    outcome = fix_text(text, "t.py", Settings(), unsafe)
    assert outcome.error is None, outcome.error
    return outcome.text


def _corpus(name: str) -> str:
    return (CORPUS / name).read_text(encoding="utf-8")


def _function(text: str, name: str) -> str:
    """The source of one top-level function of ``text``."""
    module = cst.parse_module(text)
    [node] = [n for n in module.body if isinstance(n, cst.FunctionDef) and n.name.value == name]
    return module.code_for_node(node)


def test_an_import_in_another_function_does_not_bind_the_name_here():
    # Issue 14 item 1: `import cupyx` inside helper() was taken to bind `cupyx` inside work() too.
    text = _corpus("scope_other_function.py")
    fixed = _fixed(text)
    assert "cupyx.empty_pinned(" in fixed
    assert safety_props.broken(text, fixed) == []
    assert safety_props.unbound_names(fixed) == set()
    assert "    import cupy as cp\n    import cupyx\n" in _function(fixed, "work")


def test_a_library_imported_only_in_a_function_gets_a_function_local_import():
    # Issue 14 item 2: the fix added a top-level `import cupyx` to a module that imports CuPy only
    # when work() runs: the module then failed to import without CuPy.
    text = _corpus("local_import.py")
    fixed = _fixed(text)
    assert "cupyx.empty_pinned(" in fixed
    assert safety_props.load_time_imports(fixed) == safety_props.load_time_imports(text) == {("numpy", ())}
    assert "    import cupy as cp\n    import cupyx\n" in fixed
    assert safety_props.broken(text, fixed) == []


def test_an_optional_import_stays_under_its_guard():
    text = _corpus("guard_try.py")
    fixed = _fixed(text)
    assert "try:\n    import cupy as cp\n    import cupyx\nexcept ImportError:\n" in fixed
    assert safety_props.broken(text, fixed) == []
    assert ("cupy", ()) not in safety_props.load_time_imports(fixed)


def test_a_type_checking_import_is_not_a_runtime_binding():
    # `import cupyx` under `if TYPE_CHECKING:` never runs: the fix imports it where CuPy is imported.
    text = _corpus("type_checking.py")
    fixed = _fixed(text)
    assert "    import cupy as cp\n    import cupyx\n" in _function(fixed, "work")
    assert safety_props.broken(text, fixed) == []


def test_an_enclosing_function_import_reaches_a_nested_function():
    text = _corpus("closure.py")
    fixed = _fixed(text)
    assert "    import cupy as cp\n    import cupyx\n" in fixed and "cupyx.empty_pinned(" in fixed
    assert safety_props.broken(text, fixed) == []


def test_a_class_body_import_is_not_seen_by_its_methods():
    text = _corpus("method_class_import.py")
    fixed = _fixed(text)
    assert "        import cupy as cp\n        import cupyx\n" in fixed
    assert safety_props.broken(text, fixed) == []


@pytest.mark.parametrize("name, spelled", [("numba_local.py", "cuda.pinned_array("),
                                           ("pycuda_guard.py", "cuda_drv.pagelocked_empty("),
                                           ("torch_local.py", "pin_memory=True")])
def test_other_libraries_use_the_binding_in_scope(name, spelled):
    text = _corpus(name)
    fixed = _fixed(text)
    assert spelled in fixed
    assert safety_props.broken(text, fixed) == []
    assert safety_props.load_time_imports(fixed) == safety_props.load_time_imports(text)


def test_a_sync_fix_spells_the_library_through_the_local_import():
    text = _corpus("pin005_local.py")
    fixed = _fixed(text, unsafe=True)
    assert fixed != text and safety_props.broken(text, fixed) == []


def test_a_name_the_function_binds_otherwise_is_never_used():
    # `cupyx` is a parameter of work(): neither `cupyx.empty_pinned` nor a new `import cupyx` is safe.
    text = _corpus("shadowed_name.py")
    assert _fixed(text, unsafe=True) == text


# ------------------------------------------------------------------ placement, unit by unit
def _namer(text: str):
    wrapper = MetadataWrapper(cst.parse_module(source(text)), unsafe_skip_copy=True)
    return wrapper.module, Namer(wrapper.module, lambda: wrapper.resolve(ParentNodeProvider))


def _call(module: cst.Module, name: str) -> cst.Call:
    found = []

    class Visitor(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == name:
                found.append(node)

    module.visit(Visitor())
    return found[0]


def _apply_spelling(module, namer, call, qualified="cupyx.empty_pinned", preferred=("cupyx", None, None)):
    spelled, imports = namer.spell(qualified, preferred, at=call)
    assert spelled is not None
    plan = Plan(SAFE, "pin", replace=((call, call.with_changes(func=cst.parse_expression(spelled))),),
                imports=imports)
    return apply_plans(module, [plan])


def test_without_an_import_in_sight_the_import_goes_at_the_start_of_the_function():
    text = """
        import numpy as np


        def make():
            import cupy as cp
            return cp


        def upload(d, s):
            '''Upload.'''
            h = np.empty(4)
            d.set(h, stream=s)
        """
    module, namer = _namer(text)
    fixed = _apply_spelling(module, namer, _call(module, "empty"))
    assert "    '''Upload.'''\n    import cupyx\n    h = cupyx.empty_pinned(4)\n" in fixed
    assert safety_props.broken(source(text), fixed) == []


def test_at_module_level_without_a_module_import_there_is_no_spelling():
    module, namer = _namer("""
        import numpy as np


        def make():
            import cupy as cp
            return cp


        h = np.empty(4)
        """)
    assert namer.spell("cupyx.empty_pinned", ("cupyx", None, None), at=_call(module, "empty")) == (None, ())


def test_a_module_import_after_other_code_gets_the_new_import_right_below_it():
    text = """
        import sys
        sys.path.insert(0, "vendor")
        import numpy as np
        import cupy as cp


        def upload(d, s):
            h = np.empty(4)
            d.set(h, stream=s)
        """
    module, namer = _namer(text)
    fixed = _apply_spelling(module, namer, _call(module, "empty"))
    # Not at the top, where CuPy may not be importable yet.
    assert 'sys.path.insert(0, "vendor")\nimport numpy as np\nimport cupy as cp\nimport cupyx\n' in fixed


def test_an_existing_binding_after_the_use_in_a_function_does_not_count():
    text = """
        import numpy as np


        def upload(d, s):
            h = np.empty(4)
            import cupyx
            d.set(h, stream=s)
            return cupyx
        """
    module, namer = _namer(text)
    spelled, imports = namer.spell("cupyx.empty_pinned", ("cupyx", None, None), at=_call(module, "empty"))
    assert spelled == "cupyx.empty_pinned" and imports and isinstance(imports[0], NewImport)
    assert imports[0].before is not None  # a new import above the use, not the later one


def test_a_library_with_a_cpu_fallback_gets_no_fix_that_needs_it():
    """`try: import cupy as cp / except ImportError: import numpy as cp`: the file runs without CuPy,
    where a `cupyx.zeros_pinned` the fix spelled under the guard would be unbound. The finding stays;
    the fix is not offered."""
    text = source("""
    import numpy as np

    try:
        import cupy as cp
    except ImportError:
        import numpy as cp


    def build(movie, chunks):
        ref = np.zeros((64, 512, 512), dtype=complex)
        for c in range(chunks):
            cp.asarray(ref) * cp.asarray(movie[c])
    """)
    assert _fixed(text, unsafe=True) == text
    from helpers import codes
    assert codes(text) == ["PIN007"]
