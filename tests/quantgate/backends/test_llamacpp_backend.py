"""The embedded backend's prompt rendering and grammar preparation (no model needed)."""

import json
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from graphs.prompting import repair_message
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends._schema_grammar import grammar_schema
from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._greedy import GreedyDecoder

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "currency": {"type": ["string", "null"], "enum": ["EUR", "USD", None]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "items": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {"codes": {"type": "array", "items": {"type": "integer"}}},
            },
        },
    },
    "required": ["currency", "tags", "items"],
}


def test_render_prompt_is_a_plain_few_shot_completion():
    messages = [
        SystemMessage("Extract."),
        HumanMessage("Bill A"),
        AIMessage('{"x": 1}'),
        HumanMessage("Bill B"),
        AIMessage('{"x": "two"}'),
        repair_message(["x: 'two' is not of type 'integer'"]),
    ]
    assert render_prompt(messages) == (
        "Extract.\n\n"
        'Text:\nBill A\nJSON: {"x": 1}\n\n'
        'Text:\nBill B\nJSON: {"x": "two"}\n\n'
        "\nError: The JSON is invalid: x: 'two' is not of type 'integer'. Write the whole JSON object again, "
        "corrected.\nCorrected JSON:"
    )


def test_grammar_schema_caps_arrays_and_keeps_enums_enforceable():
    prepared = grammar_schema(SCHEMA, 20)
    assert prepared["properties"]["tags"]["maxItems"] == 20
    assert prepared["properties"]["items"]["maxItems"] == 3  # an explicit cap is kept
    assert prepared["properties"]["items"]["items"]["properties"]["codes"]["maxItems"] == 20
    assert "type" not in prepared["properties"]["currency"]
    assert SCHEMA["properties"]["currency"]["type"] == ["string", "null"]  # the input is not changed


def test_grammar_enforces_enums_and_json_strings():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    engine = EmbeddedEngine.__new__(EmbeddedEngine)  # grammar conversion needs no model
    engine._grammars = {}
    engine.max_array_items = 20
    engine.grammar_engine = "gbnf"
    gbnf = engine.grammar(SCHEMA)
    rules = dict(line.split(" ::= ", 1) for line in gbnf.splitlines() if " ::= " in line)
    assert rules["currency"] == '"\\"EUR\\"" | "\\"USD\\"" | "null"'
    assert rules["char"].startswith(r'[^"\\\x00-\x1f]')
    assert rules["root"].startswith('" "? "{"')
    assert engine.grammar(json.loads(json.dumps(SCHEMA))) is gbnf  # converted once per schema
    numbers = engine.grammar({"type": "object", "properties": {"n": {"type": "number"}}})
    number = next(line for line in numbers.splitlines() if line.startswith("number ::= "))
    assert number.endswith("([eE] [-+]? [0-9] [0-9]?)? space")  # no 1e999, which reads as infinity


def test_llguidance_grammar_is_the_prepared_schema_after_an_optional_space():
    llguidance = pytest.importorskip("llguidance")
    engine = EmbeddedEngine.__new__(EmbeddedEngine)  # grammar conversion needs no model
    engine._grammars = {}
    engine.max_array_items = 7
    engine.grammar_engine = "llguidance"
    lark = engine.grammar(SCHEMA)
    start, answer = lark.splitlines()
    assert start == 'start: " "? answer'
    compiled = json.loads(answer.removeprefix("answer: %json "))
    assert compiled.pop("x-guidance") == {"lenient": True}  # what it cannot enforce is ignored, and named
    assert compiled == grammar_schema(SCHEMA, 7, "llguidance")
    assert llguidance.LLMatcher.validate_grammar(lark) == ""  # llguidance compiles it


class _FakeLlama:
    """The KV-cache bookkeeping of `llama_cpp.Llama`: input_ids, n_tokens, eval."""

    def __init__(self):
        self.input_ids = np.zeros(64, dtype=np.intc)
        self.n_tokens = 0
        self.evaluated = []

    def eval(self, tokens):
        self.evaluated.append(list(tokens))
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)


def test_shared_prompt_prefix_stays_in_the_kv_cache():
    decoder = GreedyDecoder.__new__(GreedyDecoder)  # prefix bookkeeping needs no model
    decoder.llama = _FakeLlama()
    few_shot = [1, 2, 3, 4, 5]
    decoder._eval_prompt([*few_shot, 10, 11])
    decoder.llama.eval([99])  # a generated token
    decoder._eval_prompt([*few_shot, 20, 21, 22])
    decoder._eval_prompt([*few_shot, 20, 21, 22])
    assert decoder.llama.evaluated == [[*few_shot, 10, 11], [99], [20, 21, 22], [22]]


def test_an_unknown_grammar_engine_is_named():
    with pytest.raises(ValueError, match="grammar_engine must be one of gbnf, llguidance"):
        EmbeddedEngine("missing.gguf", grammar_engine="regex")  # type: ignore[arg-type]


def test_fast_forward_needs_llguidance():
    with pytest.raises(ValueError, match='fast_forward needs grammar_engine = "llguidance"'):
        EmbeddedEngine("missing.gguf", grammar_engine="gbnf", slots=1, fast_forward=True)
