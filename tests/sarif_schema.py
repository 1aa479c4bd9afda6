"""The official SARIF 2.1.0 schema (``tests/data/sarif-schema-2.1.0.json``, see ``tests/data/README.md``)
and a validator every test that produces SARIF runs its log through."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def validate_sarif(log: dict) -> dict:
    """The log, after checking it against the official schema (raises ``jsonschema.ValidationError``)."""
    error = jsonschema.exceptions.best_match(_validator().iter_errors(log))
    if error is not None:
        raise error
    return log


def schema_errors(log: dict) -> list:
    return [e.message for e in _validator().iter_errors(log)]
