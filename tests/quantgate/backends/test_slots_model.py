"""Slots and grammar engines on the real embedded model (Gemma 3 270M Q4_K_M)."""

from __future__ import annotations

import json
import threading
from typing import Any

import jsonschema
import psutil
import pytest

from graphs.prompting import build_messages
from quantgate.backends._base_prompt import render_prompt
from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._greedy import Generation
from quantgate.evaluate._options import select_cases
from quantgate.inputs._dataset import load_dataset

pytestmark = pytest.mark.model


def _q4(ladder: Any) -> str:
    return str(next(v.model for v in ladder.variants if v.name == "Q4_K_M"))


def _prompt(name: str, index: int = 0) -> tuple[str, dict[str, Any]]:
    dataset = load_dataset(name)
    examples = [(e.text, e.expected) for e in dataset.examples[:1] if e.expected is not None]
    case = select_cases(dataset.cases, index + 1)[index]
    prompt = render_prompt(build_messages(schema=dataset.schema, examples=examples, text=case.text))
    return prompt, dataset.schema


def _answer(
    engine: EmbeddedEngine, prompt: str, schema: dict[str, Any], max_tokens: int = 160
) -> tuple[str, Generation]:
    stats = Generation()
    return "".join(engine.generate(prompt, engine.grammar(schema), max_tokens, stats)), stats


def test_each_slot_keeps_its_own_grammar_with_two_schemas_at_once(ladder):
    """Two requests decoded in the same batches, each constrained to a different schema."""
    engine = EmbeddedEngine(_q4(ladder), n_ctx=8192, slots=2)
    prompts = {name: _prompt(name) for name in ("contacts-events", "tech-config")}
    answers: dict[str, tuple[str, Generation]] = {}

    def ask(name: str) -> None:
        answers[name] = _answer(engine, *prompts[name], max_tokens=512)

    try:
        threads = [threading.Thread(target=ask, args=(name,)) for name in prompts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert engine.scheduler is not None
        assert engine.scheduler.peak_running == 2  # the two were decoded side by side
    finally:
        engine.close()
    for name, (text, stats) in answers.items():
        assert stats.finish_reason == "stop", name
        jsonschema.validate(json.loads(text), prompts[name][1])  # each answer matches its own schema


def test_engine_uses_all_physical_cores_by_default(ladder):
    engine = EmbeddedEngine(_q4(ladder), n_ctx=1024, slots=1)
    try:
        assert engine.n_threads == psutil.cpu_count(logical=False)
        assert engine.llama.n_threads == engine.n_threads
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("engine_name", "fast_forward"), [("gbnf", False), ("llguidance", False), ("llguidance", True)]
)
def test_grammar_engines_give_schema_valid_answers(ladder, engine_name, fast_forward):
    engine = EmbeddedEngine(
        _q4(ladder), n_ctx=8192, slots=1, grammar_engine=engine_name, fast_forward=fast_forward
    )
    try:
        for index in range(2):
            prompt, schema = _prompt("tech-config", index)
            text, stats = _answer(engine, prompt, schema, max_tokens=400)
            assert stats.finish_reason == "stop"
            jsonschema.validate(json.loads(text), schema)
            assert stats.output_tokens > 10
            # every key of the schema's objects is forced text; without fast-forward none is taken at once
            assert (
                (stats.forced_tokens >= len(schema["properties"]))
                if fast_forward
                else stats.forced_tokens == 0
            )
            assert stats.forced_tokens < stats.output_tokens
    finally:
        engine.close()


def test_drafts_from_the_prompt_give_the_decoded_answer_in_fewer_steps(ladder):
    """F16 (whose answers barely move with the batch's shape): the same two restaurants answers
    decoded token by token and with drafts from the prompt (`lookup`), most tokens kept from drafts."""
    f16 = str(next(v.model for v in ladder.variants if v.name == "F16"))
    engine = EmbeddedEngine(f16, n_ctx=4096, slots=1)
    try:
        for index in range(2):
            prompt, schema = _prompt("restaurants", index)
            grammar = engine.grammar(schema)
            runs = []
            for lookup in (False, True):
                stats = Generation()
                text = "".join(engine.generate(prompt, grammar, 160, stats, lookup=lookup))
                assert engine.scheduler is not None
                runs.append((text, stats))
            (plain, plain_stats), (drafted, stats) = runs
            assert drafted == plain
            jsonschema.validate(json.loads(drafted), schema)
            assert plain_stats.lookup_drafted == 0
            assert stats.output_tokens == plain_stats.output_tokens
            # the keys and punctuation of the example's answer, and the names copied from the text
            assert stats.output_tokens / 2 < stats.lookup_kept <= stats.lookup_drafted
    finally:
        engine.close()
