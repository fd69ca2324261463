"""Verification in the slot scheduler: a given answer (the reference's) is read with the prompt at
prefill speed, and the text is the one decoding gives: the answer where the model chooses it, its
own tokens from the first position where it does not (fake model context, fake grammar)."""

from __future__ import annotations

from typing import Any

import pytest

from quantgate.backends.greedy import Generation
from quantgate.backends.slots import SlotScheduler
from tests.quantgate.backends.test_slots import EOS, FakeContext, collect, prompt, run_threads, text_of


class OffScriptContext(FakeContext):
    """A fake model that, off its script (a wrong token was read), still wants the script's token at
    that position: rows after a wrong answer token exist, as a real model's would."""

    def _next(self, history: list[int]) -> int:
        for start, output in self.scripts.items():
            if tuple(history[: len(start)]) == start:
                at = len(history) - len(start)
                return output[at] if at < len(output) else EOS
        raise AssertionError(f"no script starts like {history}")


def _verify(
    context: FakeContext, tokens: tuple[int, ...], answer: list[int], **options: Any
) -> tuple[str, Generation]:
    scheduler = SlotScheduler(context, slots=2)
    try:
        stats = Generation()
        text = "".join(scheduler.generate(list(tokens), options.get("grammar"), options.get("max_tokens", 64),
                                          stats, answer=answer))  # fmt: skip
        return text, stats
    finally:
        scheduler.close()


def test_an_answer_the_model_agrees_with_is_verified_in_one_batch():
    context = OffScriptContext({prompt(3, 4): [5, 6, 7]})
    text, stats = _verify(context, prompt(3, 4), [5, 6, 7])
    assert text == text_of([5, 6, 7])
    assert (stats.output_tokens, stats.verified_tokens, stats.answer_tokens) == (3, 3, 3)
    assert (stats.finish_reason, stats.obtained) == ("stop", "verified")
    assert len(context.batches) == 1  # prompt and answer read at once; decoding needs 4 steps
    assert context.decoded_tokens == len(prompt(3, 4)) + 3


def test_decoding_takes_over_at_the_first_differing_position():
    context = OffScriptContext({prompt(3, 4): [5, 6, 7, 8]})
    text, stats = _verify(context, prompt(3, 4), [5, 9, 9, 9])
    assert text == text_of([5, 6, 7, 8])  # the model's own answer, not the given one
    assert (stats.verified_tokens, stats.output_tokens, stats.finish_reason) == (1, 4, "stop")
    assert stats.obtained == "verified_then_decoded"
    assert context.kv[0] == []  # the slot freed; the positions stayed right (the fake checks them)


@pytest.mark.parametrize(
    ("answer", "verified"),
    [([5, 6], 2), ([5, 6, 7, 8], 3), ([], 0)],
    ids=["answer-ends-early", "answer-runs-on", "empty-answer"],
)
def test_answers_that_end_elsewhere_give_the_models_own_end(answer, verified):
    context = OffScriptContext({prompt(3, 4): [5, 6, 7]})
    text, stats = _verify(context, prompt(3, 4), answer)
    assert text == text_of([5, 6, 7])
    assert (stats.verified_tokens, stats.finish_reason, stats.obtained) == (
        verified,
        "stop",
        "verified_then_decoded",
    )


def test_the_grammar_state_is_carried_through_the_verified_tokens():
    context = OffScriptContext({prompt(3, 4): [5, 6, 7, 8]})
    text, stats = _verify(context, prompt(3, 4), [5, 6, 9], grammar="5,6,7,8")
    assert text == text_of([5, 6, 7, 8])
    assert context.grammars[0].at == 4  # accepted 5, 6 while verifying, then 7, 8 while decoding
    assert stats.verified_tokens == 2


def test_the_length_limit_holds_for_a_verified_answer():
    context = OffScriptContext({prompt(3, 4): [5, 6, 7, 8]})
    text, stats = _verify(context, prompt(3, 4), [5, 6, 7, 8], max_tokens=2)
    assert text == text_of([5, 6])
    assert (stats.finish_reason, stats.obtained, stats.answer_tokens) == ("length", "verified", 2)


def test_verified_and_decoded_requests_share_batches_and_the_prefix():
    scripts = {prompt(3): [5, 6], prompt(4): [7, 8, 9], prompt(2): [10]}
    context = OffScriptContext(scripts, n_batch=32)
    scheduler = SlotScheduler(context, slots=3)
    results: dict[str, Any] = {}
    try:

        def verified(tokens: tuple[int, ...], answer: list[int], key: str) -> Any:
            def job() -> None:
                stats = Generation()
                results[key] = (
                    "".join(scheduler.generate(list(tokens), None, 64, stats, answer=answer)),
                    stats,
                )

            return job

        run_threads([
            verified(prompt(3), [5, 6], "a"), verified(prompt(4), [7, 1, 1], "b"),
            collect(scheduler, prompt(2), results, "c"),
        ])  # fmt: skip
    finally:
        scheduler.close()
    assert results["a"][0] == text_of([5, 6])
    assert results["a"][1].obtained == "verified"
    assert results["b"][0] == text_of([7, 8, 9])
    assert (results["b"][1].obtained, results["b"][1].verified_tokens) == ("verified_then_decoded", 1)
    assert results["c"][0] == text_of([10])
    assert results["c"][1].obtained == "decoded"
