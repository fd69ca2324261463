"""Verification on the real embedded model (Gemma 3 270M): a candidate given the reference's answer
keeps it where it agrees, and a given answer that differs gives the candidate's own decoded answer."""

from __future__ import annotations

import re
from typing import Any

import pytest

from quantgate.backends.greedy import Generation
from quantgate.backends.llamacpp import EmbeddedEngine
from tests.quantgate.backends.test_slots_model import _prompt

pytestmark = pytest.mark.model


def _generate(
    engine: EmbeddedEngine, prompt: str, schema: dict[str, Any], answer: str | None
) -> tuple[str, Generation]:
    stats = Generation()
    return "".join(engine.generate(prompt, engine.grammar(schema), 160, stats, answer=answer)), stats


def test_a_verified_answer_is_the_decoded_one_and_a_wrong_one_is_decoded_from_where_it_differs(ladder):
    model = {v.name: str(v.model) for v in ladder.variants}
    prompt, schema = _prompt("restaurants", 1)
    reference = EmbeddedEngine(model["F16"], n_ctx=4096, slots=2)
    try:
        answer, _ = _generate(reference, prompt, schema, None)
    finally:
        reference.close()
    engine = EmbeddedEngine(model["Q4_K_M"], n_ctx=4096, slots=2)
    try:
        decoded, plain = _generate(engine, prompt, schema, None)
        verified, stats = _generate(engine, prompt, schema, decoded)
        assert plain.obtained == "decoded"
        assert verified == decoded
        assert (stats.obtained, stats.verified_tokens, stats.finish_reason) == (
            "verified",
            plain.output_tokens,
            "stop",
        )
        wrong = re.sub(r'"name": "[^"]*"', '"name": "Zzyzx Qwerty"', decoded, count=1)
        assert wrong != decoded
        again, diverged = _generate(engine, prompt, schema, wrong)
        assert again == decoded  # its own answer, decoded from the first differing token
        assert diverged.obtained == "verified_then_decoded"
        assert 0 < diverged.verified_tokens < diverged.output_tokens
        _, from_reference = _generate(engine, prompt, schema, answer)
        assert from_reference.answer_tokens is not None
    finally:
        engine.close()
