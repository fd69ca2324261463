"""The user's record type as a JSON Schema quantgate can prompt, constrain and score with.

Production code often describes its record as a pydantic model. Pydantic's JSON Schema
uses constructs the extraction graph does not support (`$ref`/`$defs` for nested models,
`anyOf: [X, null]` for optional fields, see datasets/README.md), so `record_schema`
rewrites it into the supported subset: references inlined (with langchain-core's
`dereference_refs`), `X | None` as a nullable `type` (`["string", "null"]`, and `null`
added to an `enum`), and every object's properties all `required` with no additional
properties, so that the model always writes every key, as the dataset format asks. A
JSON Schema given as a dict is taken as it is. Either way the result is checked with
`evaluators.check_schema` (nesting, RE2 patterns, the metaschema) and
`evaluators.schema.parse_schema`, which names any construct left unsupported.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jsonschema.exceptions import SchemaError
from langchain_core.utils.json_schema import dereference_refs
from pydantic import BaseModel

from evaluators import SchemaSupportError, check_schema, error_path, parse_schema

RecordType = type[BaseModel] | Mapping[str, Any]
"""What a user may give as the record's schema: a pydantic model class or a JSON Schema."""


def record_schema(schema: RecordType) -> dict[str, Any]:
    """The JSON Schema of a record type, in the subset the extraction graph supports.

    Args:
        schema: A pydantic model class, or a JSON Schema (a dict, used as given).

    Returns:
        A JSON Schema with an object at the root.

    Raises:
        SchemaSupportError: The schema (or the model's) uses a construct quantgate cannot
            prompt or score, such as a union of two non-null types, a pattern that is not RE2
            syntax, or nesting deeper than `evaluators.MAX_DEPTH`; the error names the field.
    """
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        resolved = dereference_refs(schema.model_json_schema())
        resolved.pop("$defs", None)
        converted: dict[str, Any] = _simplify(resolved)
        _check(converted)
    else:
        _check(schema)  # before the copy, which recurses
        converted = copy.deepcopy(dict(schema))
    parse_schema(converted)
    return converted


def _check(schema: Mapping[str, Any]) -> None:
    """`check_schema`'s refusal as a `SchemaSupportError` naming the place in the schema."""
    try:
        check_schema(schema)
    except SchemaError as exc:
        path = error_path(exc.absolute_path)
        raise SchemaSupportError("" if path == "<root>" else path, exc.message) from None


def _simplify(node: Any) -> Any:
    """Rewrite one node of a dereferenced pydantic schema (recursively)."""
    if not isinstance(node, Mapping):
        return node
    result = {k: v for k, v in node.items() if k not in ("default", "anyOf")}
    options = node.get("anyOf")
    if isinstance(options, list):
        result = {**_nullable(options), **result}
    if isinstance(result.get("properties"), Mapping):
        result["properties"] = {name: _simplify(child) for name, child in result["properties"].items()}
        result["required"] = list(result["properties"])
        result["additionalProperties"] = False
    if isinstance(result.get("items"), Mapping):
        result["items"] = _simplify(result["items"])
    return result


def _nullable(options: list[Any]) -> dict[str, Any]:
    """`anyOf: [X, {"type": "null"}]` as X with a nullable type; anything else is left as it was."""
    others = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
    if len(others) != 1 or len(others) == len(options) or not isinstance(others[0], Mapping):
        return {"anyOf": options}  # a real union: parse_schema reports it by name
    inner = dict(others[0])
    kind = inner.get("type")
    if isinstance(kind, str):
        inner["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        inner["type"] = [*kind, "null"]
    if isinstance(inner.get("enum"), list) and None not in inner["enum"]:
        inner["enum"] = [*inner["enum"], None]
    return inner
