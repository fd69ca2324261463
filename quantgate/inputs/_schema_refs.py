"""A JSON Schema's local references inlined: `{"$ref": "#/$defs/When"}` replaced by the schema it
points to, and `$defs` (or `definitions`) dropped.

Tool parameters written by pydantic (`Model.model_json_schema()`) keep nested models in `$defs`
and point to them with `$ref`. A tool's parameters are embedded in the task's record schema,
where a pointer from the parameters' root (`#/...`) no longer points where it did, so they are
inlined first. What cannot be inlined is refused by name, at the place of the `$ref`: a reference
to another document, a recursive one (`{"$ref": "#"}`; its inlining never ends), one that points
to nothing, keywords beside a `$ref` other than annotations, `$dynamicRef`, and a schema that
grows past `MAX_SCHEMAS` schemas or `MAX_DEPTH` levels once inlined (a few references that each
use the next twice make an exponential schema).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from evaluators import MAX_DEPTH, error_path, too_deep
from evaluators.errors import UsageError

__all__ = ["MAX_SCHEMAS", "SchemaRefError", "inline_refs"]

MAX_SCHEMAS = 10_000
"""The most schemas (objects of the schema, after inlining) a tool's parameters may have: far more
than any function's arguments need, and few enough that checking and prompting stay fast."""

_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})
_DEFINITIONS = frozenset({"$defs", "definitions"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})
_SCHEMA_VALUES = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "contains",
        "propertyNames",
        "if",
        "then",
        "else",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_DYNAMIC = ("$dynamicRef", "$recursiveRef")

_Path = tuple[str | int, ...]


class SchemaRefError(UsageError):
    """A reference that cannot be inlined; `path` is where it is in the schema (`properties.when.$ref`)."""

    def __init__(self, path: _Path, message: str) -> None:
        self.path = error_path(path) if path else ""
        self.message = message
        super().__init__(f"{self.path}: {message}" if path else message)


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with every local `$ref` replaced by the schema it points to and `$defs` dropped.

    A schema nested too deeply to read is given back as it is, for `check_schema` to refuse.

    Raises:
        SchemaRefError: A reference that cannot be inlined (see the module), located.
    """
    if too_deep(schema):
        return dict(schema)
    result = _Inliner(root=schema).node(schema, (), ("#",), 0)
    assert isinstance(result, dict)  # a mapping gives a dict
    return result


@dataclass(kw_only=True)
class _Inliner:
    root: Mapping[str, Any]
    schemas: int = 0

    def node(self, node: Any, path: _Path, refs: tuple[str, ...], depth: int) -> Any:
        """One schema inlined; `refs` are the references being inlined around it, `depth` its level."""
        if not isinstance(node, Mapping):
            return node  # `true`, `false`, or not a schema (the metaschema check names it)
        self.schemas += 1
        if self.schemas > MAX_SCHEMAS:
            raise SchemaRefError(path, f"more than {MAX_SCHEMAS:,} schemas once its $refs are inlined")
        if depth > MAX_DEPTH:
            raise SchemaRefError(path, f"nested more than {MAX_DEPTH} levels deep once its $refs are inlined")
        for key in _DYNAMIC:
            if key in node:
                raise SchemaRefError((*path, key), "not supported: use $ref to a schema in $defs")
        if "$ref" in node:
            return self.reference(node, path, refs, depth)
        return {
            key: self.child(key, value, path, refs, depth)
            for key, value in node.items()
            if key not in _DEFINITIONS
        }

    def child(self, key: str, value: Any, path: _Path, refs: tuple[str, ...], depth: int) -> Any:
        """The value of one keyword, its schemas inlined."""
        where = (*path, key)
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            return {name: self.node(v, (*where, name), refs, depth + 1) for name, v in value.items()}
        if key in _SCHEMA_LISTS and isinstance(value, list):
            return [self.node(v, (*where, i), refs, depth + 1) for i, v in enumerate(value)]
        if key in _SCHEMA_VALUES:
            return self.node(value, where, refs, depth + 1)
        return value

    def reference(self, node: Mapping[str, Any], path: _Path, refs: tuple[str, ...], depth: int) -> Any:
        """The schema a `$ref` points to, inlined, with the annotations beside the `$ref` over it."""
        ref, where = node["$ref"], (*path, "$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SchemaRefError(
                where, f"{ref!r} is not a reference inside the schema (only '#/$defs/Name' ones are resolved)"
            )
        if ref in refs:
            raise SchemaRefError(where, f"{ref!r} is recursive (it refers to a schema that contains it)")
        extra = sorted(set(node) - _ANNOTATIONS - _DEFINITIONS - {"$ref"})
        if extra:
            raise SchemaRefError(
                where, f"keywords beside $ref ({', '.join(extra)}): move them into the schema it refers to"
            )
        target, target_path = self.target(ref, where)
        inlined = self.node(target, target_path, (*refs, ref), depth + 1)
        if not isinstance(inlined, dict):
            return inlined
        return {**inlined, **{k: v for k, v in node.items() if k in _ANNOTATIONS}}

    def target(self, ref: str, where: _Path) -> tuple[Any, _Path]:
        """What a local reference (a JSON Pointer after `#`) points to, and its path."""
        pointer = unquote(ref[1:])
        if not pointer.startswith("/"):
            raise SchemaRefError(where, f"{ref!r} is not a JSON Pointer ('#/$defs/Name')")
        value: Any = self.root
        path: list[str | int] = []
        step: str | int
        for part in pointer[1:].split("/"):
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(value, Mapping) and key in value:
                value, step = value[key], key
            elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
                value, step = value[int(key)], int(key)
            else:
                raise SchemaRefError(where, f"{ref!r} points to nothing in the schema")
            path.append(step)
        return value, tuple(path)
