"""What a dataset's JSON schema becomes for constrained decoding, and what the decoder cannot enforce.

Two converters turn a schema into a grammar: llama.cpp's JSON-schema-to-GBNF converter (the
`gbnf` engine; llama-cpp-python's port of it, and the one Ollama's server runs in C++) and
llguidance's. Neither enforces every keyword the validator checks, and the GBNF one silently
drops some: given `{"type": ["string", "null"], "format": "date"}` it makes `string | null`
and lets any string through. `grammar_schema` rewrites the schema into forms the converter does
honour, and `unenforced_keywords` names what is still left unenforced (once per run, in
`variants.json` and as a warning), so a low validity is explained:

- a nullable (`type` list) node with keywords of one type becomes an `anyOf` of one branch per
  type, each carrying its own keywords (GBNF);
- a checked `format` gets its exact `pattern` (`FORMAT_PATTERNS`): the converters' own date
  rules allow `2023-02-29` and `0000-01-01`, which the validator refuses (both engines;
  llguidance intersects the pattern with the format);
- an `enum` loses its `type` after keeping only the values of that type (GBNF ignores `enum`
  under a `type` list) and `oneOf` becomes `anyOf` (GBNF; its exclusivity is not enforced);
- every array without `maxItems` gets `maxItems: max_items`: greedy decoding of a small model
  can repeat one array item until the token limit, and the cap ends such a loop early.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from jsonschema import Draft202012Validator

GrammarEngineName = Literal["gbnf", "llguidance"]
GRAMMAR_ENGINES: tuple[GrammarEngineName, ...] = get_args(GrammarEngineName)

_YEAR = "([0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP_YEAR = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (
    "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))"
)
_DATE = f"({_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
_TIME = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_HEX = "[0-9a-fA-F]"

FORMAT_PATTERNS: dict[str, str] = {
    "date": f"^{_DATE}$",
    "time": f"^{_TIME}$",
    "date-time": f"^{_DATE}T{_TIME}$",
    "email": "^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}([.][A-Za-z0-9-]{1,63}){1,4}$",
    "ipv4": f"^{_OCTET}([.]{_OCTET}){{3}}$",
    "uuid": f"^{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}$",
}
"""Exact patterns of the formats the grammar can enforce: every string they match, the validator's
format check accepts (real calendar days, leap years, no year 0; a time with its offset, as
RFC 3339 wants; a dotted IPv4 address without leading zeros)."""

VALIDATION_KEYWORDS = frozenset({
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "format", "maxItems", "minItems", "uniqueItems", "contains",
    "maxContains", "minContains", "items", "prefixItems", "unevaluatedItems", "maxProperties",
    "minProperties", "required", "dependentRequired", "properties", "patternProperties",
    "additionalProperties", "propertyNames", "unevaluatedProperties", "dependentSchemas", "allOf", "anyOf",
    "oneOf", "not", "if", "then", "else", "$ref",
})  # fmt: skip
"""The JSON Schema 2020-12 keywords that can make an instance invalid (`format` only for the
formats the validator checks, `checked_formats`)."""

_TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "number": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}),
    "array": frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains",
                        "minContains", "maxContains", "unevaluatedItems"}),
    "object": frozenset({"properties", "required", "additionalProperties", "patternProperties",
                         "minProperties", "maxProperties", "propertyNames", "dependentRequired",
                         "dependentSchemas", "unevaluatedProperties"}),
}  # fmt: skip
_TYPE_KEYWORDS["integer"] = _TYPE_KEYWORDS["number"]


@dataclass(frozen=True, kw_only=True)
class UnenforcedKeyword:
    """A schema keyword the validator checks and the decoder's grammar does not enforce.

    Attributes:
        path: Where in the output (`organizer.email`, `line_items[].amount`, `<root>`), or
            `<schema>` when the converter does not say where.
        keyword: The keyword (`minimum`, `format: ipv6`, ...), or the converter's own words.
        why: Why it is not enforced.
    """

    path: str
    keyword: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}: {self.keyword} ({self.why})"


def checked_formats() -> frozenset[str]:
    """The `format` values the validator checks here (the others are annotations and pass anything)."""
    return frozenset(Draft202012Validator.FORMAT_CHECKER.checkers)


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path != "<root>" else key


def _with_type(value: Any, types: Any) -> bool:
    names = types if isinstance(types, list) else [types]
    checker = Draft202012Validator.TYPE_CHECKER
    return any(checker.is_type(value, name) for name in names if isinstance(name, str))


def _unsafe_gbnf_pattern(pattern: str) -> str | None:
    """Why llama.cpp's converter cannot turn `pattern` into a grammar of JSON strings, or None.

    It needs `^...$` anchors (it fails without them); it writes an escape such as `\\.` as a GBNF
    escape llama.cpp cannot parse (write `[.]`); and a bare `.` or a negated class `[^...]`
    becomes a grammar that lets a raw `"` or a control character through, ending the string early.
    """
    if not (pattern.startswith("^") and pattern.endswith("$")):
        return "the GBNF converter needs a pattern anchored with ^ and $"
    if "\\" in pattern:
        return "the GBNF converter writes escapes llama.cpp cannot parse (write [.] for \\.)"
    in_class = False
    for index, char in enumerate(pattern):
        if char == "[" and not in_class:
            in_class = True
            if pattern[index + 1 : index + 2] == "^":
                return "a negated class [^...] would let a raw quote through the GBNF grammar"
        elif char == "]" and in_class:
            in_class = False
        elif char == "." and not in_class:
            return "a bare . would let a raw quote through the GBNF grammar"
    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf

        json_schema_to_gbnf(json.dumps({"type": "string", "pattern": pattern}))
    except Exception as exc:  # the converter asserts and raises on syntax it does not know
        return f"the GBNF converter cannot read it ({exc})"
    return None


class _Preparation:
    """One rewriting of a schema for one engine, noting the keywords it had to give up."""

    def __init__(self, engine: GrammarEngineName, max_items: int | None) -> None:
        self.engine = engine
        self.max_items = max_items
        self.dropped: list[UnenforcedKeyword] = []

    def node(self, schema: Mapping[str, Any], path: str) -> dict[str, Any]:
        node = dict(schema)
        if self.engine == "gbnf":
            node = self._split_type_list(node)
        self._children(node, path)
        self._local(node, path)
        return node

    def _split_type_list(self, node: dict[str, Any]) -> dict[str, Any]:
        types = node.get("type")
        if not isinstance(types, list) or "enum" in node or "const" in node:
            return node
        specific = set().union(*(_TYPE_KEYWORDS.get(t, frozenset()) for t in types)) & node.keys()
        if not specific or "anyOf" in node or "oneOf" in node:
            return node  # nothing to keep, or a type list beside a union: left as written (reported)
        branches = [
            {"type": t, **{k: node[k] for k in _TYPE_KEYWORDS.get(t, ()) if k in node}} for t in types
        ]
        rest = {k: v for k, v in node.items() if k != "type" and k not in specific}
        return {**rest, "anyOf": branches}

    def _children(self, node: dict[str, Any], path: str) -> None:
        if isinstance(node.get("properties"), Mapping):
            node["properties"] = {k: self._any(v, _child(path, k)) for k, v in node["properties"].items()}
        if isinstance(node.get("items"), Mapping):
            node["items"] = self.node(node["items"], f"{path}[]")
        for key in ("prefixItems", "anyOf", "oneOf", "allOf"):
            if isinstance(node.get(key), list):
                paths = [f"{path}[{i}]" if key == "prefixItems" else path for i in range(len(node[key]))]
                node[key] = [self._any(v, at) for v, at in zip(node[key], paths, strict=True)]
        if isinstance(node.get("additionalProperties"), Mapping):
            node["additionalProperties"] = self.node(node["additionalProperties"], _child(path, "*"))
        for key in ("$defs", "definitions"):
            if isinstance(node.get(key), Mapping):
                node[key] = {k: self._any(v, f"{key}.{k}") for k, v in node[key].items()}

    def _any(self, value: Any, path: str) -> Any:
        return self.node(value, path) if isinstance(value, Mapping) else value

    def _local(self, node: dict[str, Any], path: str) -> None:
        types = node.get("type")
        is_array = types == "array" or (isinstance(types, list) and "array" in types)
        if is_array and "maxItems" not in node and self.max_items is not None:
            node["maxItems"] = self.max_items
        format_pattern = FORMAT_PATTERNS.get(node.get("format", ""))
        if format_pattern is not None and "pattern" not in node:
            node["pattern"] = format_pattern
        if isinstance(node.get("enum"), list) and "type" in node:
            types = node.pop("type")
            node["enum"] = [v for v in node["enum"] if _with_type(v, types)]
        if self.engine != "gbnf":
            return
        if "oneOf" in node and "anyOf" not in node:
            node["anyOf"] = node.pop("oneOf")
            why = "enforced as anyOf: an output matching two branches is not refused"
            self.dropped.append(UnenforcedKeyword(path=path, keyword="oneOf", why=why))
        pattern = node.get("pattern")
        if isinstance(pattern, str) and (unsafe := _unsafe_gbnf_pattern(pattern)) is not None:
            del node["pattern"]
            self.dropped.append(UnenforcedKeyword(path=path, keyword="pattern", why=unsafe))


def grammar_schema(
    schema: Mapping[str, Any], max_items: int | None, engine: GrammarEngineName = "gbnf"
) -> dict[str, Any]:
    """The schema as handed to `engine`'s JSON-schema converter (see the module docstring).

    Every output the rewritten schema allows, the original allows too.
    """
    return _Preparation(engine, max_items).node(schema, "<root>")


def unenforced_keywords(
    schema: Mapping[str, Any], *, engine: GrammarEngineName, max_items: int | None = None
) -> tuple[UnenforcedKeyword, ...]:
    """The keywords of `schema` that `engine`'s grammar does not enforce: those the rewriting gave
    up first, then the converter's, in schema order.

    For `gbnf` the rules of llama.cpp's converter are followed node by node; for `llguidance`
    its own warnings are given (it compiles the schema leniently, ignoring what it cannot do).
    """
    preparation = _Preparation(engine, max_items)
    prepared = preparation.node(schema, "<root>")
    if engine == "llguidance":
        return (*preparation.dropped, *_llguidance_warnings(prepared))
    return (*preparation.dropped, *_gbnf_unenforced(prepared, "<root>", checked_formats()))


def _llguidance_warnings(prepared: Mapping[str, Any]) -> Iterator[UnenforcedKeyword]:
    import llguidance

    grammar = llguidance.LLMatcher.grammar_from_json_schema(dict(prepared), defaults={"lenient": True})
    _, warnings = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    for warning in dict.fromkeys(warnings):
        yield UnenforcedKeyword(path="<schema>", keyword=warning, why="llguidance ignores it")


def _gbnf_honoured(node: Mapping[str, Any]) -> set[str]:
    """The keywords of `node` that llama.cpp's converter turns into grammar (its `visit` order)."""
    types, fmt = node.get("type"), node.get("format")
    if "$ref" in node:
        return {"$ref"}
    if "anyOf" in node or "oneOf" in node:
        return {"oneOf" if "oneOf" in node else "anyOf"}
    if isinstance(types, list):
        return {"type"}
    if "const" in node or "enum" in node:
        return {"const", "enum", "type"}
    closed = "additionalProperties" in node and node["additionalProperties"] is not True
    if types in (None, "object") and ("properties" in node or closed):
        return {"type", "properties", "required", "additionalProperties"}
    if types in (None, "object") and "allOf" in node:
        return {"type"}
    if types in (None, "array") and ("items" in node or "prefixItems" in node):
        items = node.get("items") or node["prefixItems"]
        if isinstance(items, list):
            return {"type", "items", "prefixItems"}
        return {"type", "items", "minItems", "maxItems"}
    if types in (None, "string") and "pattern" in node:
        exact_format = FORMAT_PATTERNS.get(fmt or "") == node["pattern"]
        return {"type", "pattern", "format"} if exact_format else {"type", "pattern"}
    if types in (None, "string") and re.fullmatch(r"uuid[1-5]?", fmt or ""):
        return {"type", "format"}
    if types == "string" and ("minLength" in node or "maxLength" in node):
        return {"type", "minLength", "maxLength"}
    return {"type"}


def _gbnf_unenforced(node: Any, path: str, formats: frozenset[str]) -> Iterator[UnenforcedKeyword]:
    if not isinstance(node, Mapping):
        return
    honoured = _gbnf_honoured(node)
    for keyword in node:
        if keyword not in VALIDATION_KEYWORDS or keyword in honoured:
            continue
        if keyword == "format" and node["format"] not in formats:
            continue  # an annotation only: the validator does not check it either
        name = f"format: {node['format']}" if keyword == "format" else keyword
        yield UnenforcedKeyword(path=path, keyword=name, why="llama.cpp's GBNF converter ignores it here")
    if "$ref" in honoured or isinstance(node.get("type"), list):
        return
    for branch in node.get("anyOf") or node.get("oneOf") or []:
        yield from _gbnf_unenforced(branch, path, formats)
    if "properties" in honoured:
        for key, value in (node.get("properties") or {}).items():
            yield from _gbnf_unenforced(value, _child(path, key), formats)
        yield from _gbnf_unenforced(node.get("additionalProperties"), _child(path, "*"), formats)
    if "items" in honoured:
        items = node.get("items") or node.get("prefixItems")
        if isinstance(items, list):
            for index, item in enumerate(items):
                yield from _gbnf_unenforced(item, f"{path}[{index}]", formats)
        else:
            yield from _gbnf_unenforced(items, f"{path}[]", formats)
    for key in ("$defs", "definitions"):
        for name, value in (node.get(key) or {}).items():
            yield from _gbnf_unenforced(value, f"{key}.{name}", formats)


_JSON_STRING_CHAR = r'char ::= [^"\\\x00-\x1f] |'
"""A JSON string character: the converter's rule also allows raw control characters
(a literal newline), which JSON forbids inside strings."""


_NUMBER_EXPONENT = "([eE] [-+]? integral-part)?"
_SHORT_EXPONENT = "([eE] [-+]? [0-9] [0-9]?)?"
"""A number's exponent: the converter allows 16 digits (`1e999` reads as infinity, which no
validator can check); two keep every number a double can hold."""


def gbnf_grammar(schema: Mapping[str, Any], max_array_items: int = 20) -> str:
    """The GBNF grammar of a JSON schema (arrays capped at `max_array_items`) that the embedded
    backend decodes with, and an OpenAI-compatible server's `api = "completions"` variants send as
    `grammar`: llama.cpp's converter, JSON strings without raw control characters, short exponents,
    and an optional space first (the prompt ends with `JSON:`)."""
    import llama_cpp

    prepared = grammar_schema(schema, max_array_items, "gbnf")
    gbnf = str(llama_cpp.llama_grammar.json_schema_to_gbnf(json.dumps(prepared)))
    gbnf = gbnf.replace(r'char ::= [^"\\] |', _JSON_STRING_CHAR, 1)
    gbnf = gbnf.replace(_NUMBER_EXPONENT, _SHORT_EXPONENT, 1)
    return gbnf.replace("root ::= ", 'root ::= " "? ', 1)
