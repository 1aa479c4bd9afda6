"""Tables of scalars: what a reader of text tables returns (pandas' ``read_csv``).

Every cell of a table read from text is one number or one string, so a cell picked out of one (a
dataset's label, ``self.df["label"][idx]``) is a single number wherever the code takes it: a tensor
of one per batch item is small, not a batch of images (CLAM's and HIPT's label tensors, survey 51).
The tables' entries (``effect = "table"`` in ``rules/api/python.toml``) say which calls make a table,
a column, a row or a cell; here is only what indexing, attributes and iteration of those give. An
index nothing here decides gives an unknown value, as anything nothing explains does.
"""

from __future__ import annotations

import libcst as cst

from .domain import Const, Host, Items, Obj, Scalar, Seq, UNKNOWN, Value, ANYTHING

TABLE = Obj("table")
COLUMN = Obj("table-column")  # one column (or the index, or a row's values): cells along one axis
ROW = Obj("table-row")
ROWS_BY_LABEL = Obj("table-indexer")  # `.loc`, `.iloc`: rows and columns by position or label
ITEMS_BY_LABEL = Obj("table-column-indexer")  # a column's (or row's) `.loc`, `.iloc`: its cells
CELL_BY_LABEL = Obj("table-cell-indexer")  # `.at`, `.iat`: one cell
# A column or a table, which nothing here tells apart (`df[key]` of a key nothing decides: one column by
# its label, or the rows a mask picks): what it picks by a mask is cells again, one item of it unknown.
CELLS = Obj("table-cells")
CELL = Scalar("number")
_TAGS = frozenset({TABLE.tag, COLUMN.tag, ROW.tag, CELLS.tag, ROWS_BY_LABEL.tag, ITEMS_BY_LABEL.tag,
                   CELL_BY_LABEL.tag})
# Values of several cells: a mask made of one (`df[col] == 1`, `~mask`) is one of them too.
_SEVERAL = (TABLE, COLUMN, ROW, CELLS)

# What an `effect = "table"` call gives (its `gives` option).
GIVES = {"table": TABLE, "column": COLUMN, "row": ROW, "cells": CELLS, "cell": CELL, "cell-list": Seq(CELL),
         "rows": Seq(ROW), "indexed-rows": Seq(Items((CELL, ROW)))}


def is_tabular(value: Value) -> bool:
    return isinstance(value, Obj) and value.tag in _TAGS


def several(value: Value) -> bool:
    """A table, a column, a row, or cells of one: what a mask made from it (`df[col] == 1`) also is."""
    return value in _SEVERAL


def attribute(python: dict, base: Obj, attr: str) -> Value:
    """``df.loc``, ``df.values``, ``df.label`` (a column read as an attribute), ``row.label`` (a cell)."""
    known = python.get("table_attributes", {}).get(attr)
    if known == "rows-by-label":
        return ROWS_BY_LABEL if base == TABLE else (ITEMS_BY_LABEL if base in (COLUMN, ROW) else UNKNOWN)
    if known == "cell-by-label":
        return CELL_BY_LABEL if base in (TABLE, COLUMN, ROW) else UNKNOWN
    if known == "same":
        return base if base in _SEVERAL else UNKNOWN  # `.values`, `.T`: the same cells
    if known == "labels":
        return COLUMN  # `.index`, `.columns`: one label per row or column
    if known == "count":
        return Scalar("int")
    if known == "shape":
        return Seq(Scalar("int"))
    if known is not None:
        return UNKNOWN  # `.str`, `.dtypes`: something else
    if base == TABLE:
        return COLUMN
    if base == ROW:
        return CELL
    return UNKNOWN


def subscript(base: Obj, elements, indexes: list) -> Value:
    """``df["label"]``, ``df[mask]``, ``col[idx]``, ``row["path"]``, ``df.loc[i, "label"]``, ``df.iat[i, 0]``."""
    picks = [_picks_one(element, value) for element, value in zip(elements, indexes)]
    if None in picks:
        # an index nothing decides: of a table, a column by its label or the rows of a mask
        return CELLS if base == TABLE and len(picks) == 1 else UNKNOWN
    if base == CELL_BY_LABEL:
        return CELL
    if base == ROWS_BY_LABEL:
        if len(picks) == 1:
            return ROW if picks[0] else TABLE
        if len(picks) == 2:
            rows, columns = picks
            return {(True, True): CELL, (True, False): ROW, (False, True): COLUMN}.get((rows, columns), TABLE)
        return UNKNOWN
    if len(picks) != 1:
        return UNKNOWN
    one = picks[0]
    if base == ITEMS_BY_LABEL:
        return CELL if one else COLUMN
    if base == TABLE:
        return COLUMN if one else TABLE  # a column by its label (a number with `header=None`), or several
    if base in (COLUMN, ROW):
        return CELL if one else base
    if base == CELLS and not one:
        return CELLS
    return UNKNOWN


def element(base: Obj) -> Value:
    """What iterating one gives: a column's or a row's cells; a table's column names."""
    if base in _SEVERAL:
        return CELL  # a column's or row's cells; a table's column labels
    return UNKNOWN


def _picks_one(element, value: Value):
    """True for an index that picks one item (a number or a label), False for one that picks several
    (a slice, a list of labels, a mask), None where nothing here says which."""
    if isinstance(element.slice, cst.Slice):
        return False
    if isinstance(value, Const) and value.values and ANYTHING not in value.values:
        if all(isinstance(v, (int, str)) for v in value.values):
            return True
        return None
    if isinstance(value, Scalar):
        return True
    if isinstance(value, (Items, Seq, Host)) or value in _SEVERAL:
        return False  # labels listed, or a mask / index array
    return None


__all__ = ["CELL", "CELLS", "COLUMN", "GIVES", "ROW", "TABLE", "attribute", "element", "is_tabular", "several",
           "subscript"]
