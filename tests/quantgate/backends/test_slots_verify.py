"""Verification in the slot scheduler: a given answer (the reference's) is read with the prompt at
prefill speed, and the text is the one decoding gives: the answer where the model chooses it, its
own tokens from the first position where it does not (fake model context, fake grammar)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from quantgate.backends.llamacpp._greedy import Generation
from quantgate.backends.llamacpp._logprobs import TOP_LOGPROBS, TokenTop
from quantgate.backends.llamacpp._slots import SlotScheduler
from tests.quantgate.backends.test_slots import EOS, VOCAB, FakeContext, collect, prompt, run_threads, text_of


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


def _decode_keeping_tops(context: FakeContext, tokens: tuple[int, ...]) -> Generation:
    scheduler = SlotScheduler(context, slots=2)
    try:
        stats = Generation(top_logprobs=[])
        "".join(scheduler.generate(list(tokens), None, 64, stats))
        return stats
    finally:
        scheduler.close()


def test_a_decoding_model_keeps_its_top_logprobs_per_token_when_asked():
    stats = _decode_keeping_tops(OffScriptContext({prompt(3, 4): [5, 6, 7]}), prompt(3, 4))
    tops = stats.top_logprobs or []
    assert [t["token"] for t in tops] == [5, 6, 7]
    top_share = math.e / (math.e + VOCAB - 1)  # the fake's row: 1 at its token, 0 elsewhere
    for top in tops:
        assert len(top["top"]) == TOP_LOGPROBS
        assert top["top"][0][0] == top["token"]
        assert top["top"][0][1] == pytest.approx(math.log(top_share), abs=1e-6)
        assert top["top"][1][1] == pytest.approx(math.log(top_share / math.e), abs=1e-6)
    assert Generation().top_logprobs is None  # not asked for: none kept


def test_verifying_compares_each_row_read_with_the_answers_top_logprobs():
    script = {prompt(3, 4): [5, 6, 7]}
    tops = _decode_keeping_tops(OffScriptContext(script), prompt(3, 4)).top_logprobs
    scheduler = SlotScheduler(OffScriptContext(script), slots=2)
    try:
        stats = Generation()
        "".join(scheduler.generate(list(prompt(3, 4)), None, 64, stats, answer=[5, 6, 7], answer_top=tops))
    finally:
        scheduler.close()
    assert stats.fidelity is not None
    assert stats.fidelity.kld == pytest.approx([0.0] * 3, abs=1e-9)  # the same model: no divergence
    assert stats.fidelity.top1 == [True] * 3
    assert stats.fidelity.delta_p == pytest.approx([0.0] * 3, abs=1e-9)


def test_fidelity_stops_at_the_first_differing_position_and_is_not_measured_on_other_tokens():
    sure_of_nine = math.log(0.99)  # a reference that put 0.99 on token 9
    other = [[t, math.log(0.01 / 7)] for t in range(10, 17)]
    tops: list[TokenTop] = [
        {"token": 5, "top": [[5, sure_of_nine], *other]},
        {"token": 9, "top": [[9, sure_of_nine], *other]},
        {"token": 9, "top": [[9, sure_of_nine], *other]},
    ]
    context = OffScriptContext({prompt(3, 4): [5, 6, 7, 8]})
    scheduler = SlotScheduler(context, slots=2)
    try:
        stats = Generation()
        "".join(scheduler.generate(list(prompt(3, 4)), None, 64, stats, answer=[5, 9, 9], answer_top=tops))
        misaligned = Generation()
        "".join(scheduler.generate(list(prompt(3, 4)), None, 64, misaligned, answer=[5, 6], answer_top=tops))
    finally:
        scheduler.close()
    fidelity = stats.fidelity
    assert fidelity is not None
    assert fidelity.top1 == [True, False]  # read: the kept token 5, then the row where it chose 6
    p_nine = 1 / (math.e + VOCAB - 1)
    assert fidelity.delta_p[1] == pytest.approx(p_nine - 0.99, abs=1e-6)
    assert fidelity.kld[1] > 2.0  # 0.99 on a token the candidate gives 3%
    assert misaligned.fidelity is None  # the lists are for other tokens: not compared
    assert misaligned.obtained == "verified_then_decoded"
