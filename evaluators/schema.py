"""Reading a dataset's JSON Schema as a tree of typed fields.

The matcher used for a field, the dotted field names in results (`items.amount`) and
the checks on which JSON Schema constructs quantgate supports all come from here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from evaluators.errors import UsageError

FieldKind = Literal[
    "string",
    "number",
    "integer",
    "boolean",
    "date",
    "enum",
    "scalar_array",
    "object_array",
    "object",
]

SCALAR_TYPES = frozenset({"string", "number", "integer", "boolean"})

_UNSUPPORTED_KEYWORDS = (
    "$ref",
    "$defs",
    "definitions",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "prefixItems",
    "dependentSchemas",
    "dependentRequired",
    "unevaluatedProperties",
    "unevaluatedItems",
)


class SchemaSupportError(UsageError):
    """A schema uses a construct that quantgate cannot score."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '<root>'}: {message}")
        self.path = path
        self.message = message


@dataclass(frozen=True, kw_only=True)
class FieldSpec:
    """One node of the schema tree.

    Attributes:
        name: Dotted path from the root (`line_items.amount`); empty for the root.
        kind: Which matcher applies.
        nullable: Whether `null` is an allowed value.
        description: The schema's description, used in prompts.
        item_kind: For `scalar_array`, the kind of its items.
        children: For `object` and `object_array`, the sub-fields.
        enum: For `enum`, the allowed values.
    """

    name: str
    kind: FieldKind
    nullable: bool = False
    description: str = ""
    item_kind: FieldKind | None = None
    children: tuple[FieldSpec, ...] = field(default_factory=tuple)
    enum: tuple[Any, ...] = field(default_factory=tuple)

    def leaves(self) -> Iterator[FieldSpec]:
        """Yield the scored fields under this node (objects are flattened)."""
        if self.kind in ("object", "object_array"):
            for child in self.children:
                yield from child.leaves()
        else:
            yield self

    @property
    def leaf_name(self) -> str:
        """The last component of the dotted name."""
        return self.name.rsplit(".", 1)[-1]


def _types_of(node: Mapping[str, Any], path: str) -> tuple[set[str], bool]:
    raw = node.get("type")
    if raw is None:
        if "enum" in node:
            values = node["enum"]
            kinds = {_json_type(v) for v in values}
            return kinds - {"null"}, "null" in kinds
        raise SchemaSupportError(path, "every property needs a 'type' (or an 'enum')")
    types = {raw} if isinstance(raw, str) else set(raw)
    return types - {"null"}, "null" in types


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def parse_schema(schema: Mapping[str, Any]) -> FieldSpec:
    """Turn a dataset schema into a `FieldSpec` tree.

    Args:
        schema: A JSON Schema with an object at the root.

    Returns:
        The root `FieldSpec` (kind `object`).

    Raises:
        SchemaSupportError: On a construct quantgate cannot score; the error names its path.
    """
    root = _parse_node(schema, "")
    if root.kind != "object":
        raise SchemaSupportError("", "the root must be an object with 'properties'")
    return root


def _parse_node(node: Mapping[str, Any], path: str) -> FieldSpec:
    if not isinstance(node, Mapping):
        raise SchemaSupportError(path, "a property's schema must be an object")
    for keyword in _UNSUPPORTED_KEYWORDS:
        if keyword in node:
            raise SchemaSupportError(path, f"unsupported construct '{keyword}'")
    types, nullable = _types_of(node, path)
    if len(types) != 1:
        raise SchemaSupportError(
            path, f"exactly one non-null type is supported, got {sorted(types) or 'none'}"
        )
    (kind,) = types
    description = str(node.get("description", ""))
    if kind == "object":
        return _parse_object(node, path, nullable, description)
    if kind == "array":
        return _parse_array(node, path, nullable, description)
    if kind not in SCALAR_TYPES:
        raise SchemaSupportError(path, f"unsupported type '{kind}'")
    if "enum" in node:
        return FieldSpec(
            name=path,
            kind="enum",
            nullable=nullable,
            description=description,
            enum=tuple(node["enum"]),
        )
    scalar: FieldKind = "date" if kind == "string" and node.get("format") == "date" else kind  # type: ignore[assignment]
    return FieldSpec(name=path, kind=scalar, nullable=nullable, description=description)


def _parse_object(node: Mapping[str, Any], path: str, nullable: bool, description: str) -> FieldSpec:
    properties = node.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        raise SchemaSupportError(path, "an object needs non-empty 'properties'")
    children = []
    for name, child in properties.items():
        if "." in name:
            raise SchemaSupportError(path, f"property name {name!r} must not contain '.'")
        children.append(_parse_node(child, f"{path}.{name}" if path else name))
    return FieldSpec(
        name=path,
        kind="object",
        nullable=nullable,
        description=description,
        children=tuple(children),
    )


def _parse_array(node: Mapping[str, Any], path: str, nullable: bool, description: str) -> FieldSpec:
    items = node.get("items")
    if not isinstance(items, Mapping):
        raise SchemaSupportError(path, "an array needs an 'items' schema")
    item = _parse_node(items, path)
    if item.kind in ("scalar_array", "object_array"):
        raise SchemaSupportError(path, "arrays of arrays are not supported")
    of_objects = item.kind == "object"  # its fields are the object's; a scalar's kind is its items'
    return FieldSpec(
        name=path,
        kind="object_array" if of_objects else "scalar_array",
        nullable=nullable,
        description=description,
        item_kind=None if of_objects else item.kind,
        children=item.children,
    )


def field_names(schema: Mapping[str, Any]) -> list[str]:
    """The dotted names of every scored field of a schema, in schema order."""
    return [leaf.name for leaf in parse_schema(schema).leaves()]
