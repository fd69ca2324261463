"""Drafts from text already seen (prompt lookup) in the slot scheduler: the text is the one decoding
gives, in fewer steps where the answer copies its prompt or a given answer; a drafted token the model
would not choose is dropped with the rest of its draft (fake model context, fake grammar)."""

from __future__ import annotations

from typing import Any

from quantgate.backends.llamacpp._greedy import Generation
from quantgate.backends.llamacpp._lookup import LookupIndex
from quantgate.backends.llamacpp._slots import SlotScheduler
from tests.quantgate.backends.test_slots import prompt, run_threads, text_of
from tests.quantgate.backends.test_slots_verify import OffScriptContext

COPYING = prompt(3, 11, 12, 13, 14, 2)
"""A prompt whose answer copies four of its tokens, then ends with one of its own."""
COPIED = [11, 12, 13, 14, 5]


def test_the_index_drafts_what_followed_the_longest_run_found():
    index = LookupIndex([7, 1, 2, 3, 4, 2, 9, 9, 5, 6])
    index.append(1)
    index.append(2)
    assert index.draft(8) == [3, 4]  # (1, 2) was followed by 3 (2 tokens for a run of 2); (2,) by 9
    assert index.draft(1) == [3]
    index.append(6)
    assert index.draft(8) == [1]  # what the context wrote is drafted from too (1 token for a run of 1)
    assert index.draft(0) == []
    assert LookupIndex([1, 2, 3]).draft(4) == []  # the last token was never followed by anything


def test_a_given_answer_is_looked_up_before_the_context():
    index = LookupIndex([4, 5, 6, 7, 4, 5], given=[5, 8, 9])
    assert index.draft(4) == [6, 7]  # the longer run (4, 5) is in the context
    index.append(3)
    index.append(5)
    assert index.draft(4) == [8]  # (5,) is in both: the answer's continuation wins
    assert LookupIndex([1, 2, 3, 8, 9, 6, 5, 1, 2, 3]).draft(8) == [8, 9, 6, 5]  # a run of 3: 4 tokens


def _generate(tokens: tuple[int, ...], script: list[int], **options: Any) -> tuple[str, Generation, Any]:
    context = OffScriptContext({tokens: script})
    scheduler = SlotScheduler(context, slots=2)
    try:
        stats = Generation()
        text = "".join(scheduler.generate(
            list(tokens), options.pop("grammar", None), options.pop("max_tokens", 64), stats, **options
        ))  # fmt: skip
        return text, stats, context
    finally:
        scheduler.close()


def test_an_answer_that_copies_its_prompt_takes_fewer_steps_and_the_same_text():
    plain, plain_stats, plain_context = _generate(COPYING, COPIED)
    text, stats, context = _generate(COPYING, COPIED, lookup=True)
    assert text == plain == text_of(COPIED)
    assert (stats.output_tokens, stats.finish_reason, stats.obtained) == (5, "stop", "decoded")
    # 11 from the prompt's row, (11,) drafts 12: kept; 13 chosen, (11, 12, 13) drafts 14 2 11 12:
    # 14 kept, 2 not (the model chooses 5), the rest dropped
    assert (stats.lookup_drafted, stats.lookup_kept) == (5, 2)
    assert (plain_stats.lookup_drafted, plain_stats.lookup_kept) == (0, 0)
    assert len(context.batches) == 4  # the prompt, 11 12, 13 14 (2 11 12), 5 (then the end)
    assert len(plain_context.batches) == 6
    assert context.kv[0] == []  # the slot freed; the fake checked every position on the way


def test_the_grammar_state_follows_the_kept_tokens_only():
    text, stats, context = _generate(COPYING, COPIED, lookup=True, grammar="11,12,13,14,5")
    assert text == text_of(COPIED)
    assert context.grammars[0].at == 5  # accepted each kept token once; the dropped 2 never reached it
    assert stats.lookup_kept == 2


def test_the_length_limit_holds_inside_a_draft():
    text, stats, _ = _generate(COPYING, COPIED, lookup=True, max_tokens=4)
    assert text == text_of([11, 12, 13, 14])
    assert (stats.finish_reason, stats.output_tokens) == ("length", 4)
    assert (stats.lookup_drafted, stats.lookup_kept) == (2, 2)  # 14 2 11 12 cut to the one token left


def test_a_candidate_that_leaves_the_given_answer_drafts_from_its_rest():
    answer = [5, 6, 7, 8, 9, 10]
    text, stats, _ = _generate(prompt(3, 4), [5, 6, 8, 9, 10], answer=answer)
    assert text == text_of([5, 6, 8, 9, 10])  # its own answer, which skips 7
    assert (stats.verified_tokens, stats.obtained) == (2, "verified_then_decoded")
    assert stats.lookup_kept == 0  # verifying alone drafts nothing once it leaves the answer
    text, stats, context = _generate(prompt(3, 4), [5, 6, 8, 9, 10], answer=answer, lookup=True)
    assert text == text_of([5, 6, 8, 9, 10])
    assert (stats.verified_tokens, stats.lookup_drafted, stats.lookup_kept) == (2, 1, 1)  # (8,) -> 9
    assert len(context.batches) == 3  # prompt and answer; 8 with 9; 10, whose row ends it


def test_drafting_and_plain_requests_share_batches():
    context = OffScriptContext({COPYING: COPIED, prompt(4): [7, 8, 9]}, n_batch=32)
    scheduler = SlotScheduler(context, slots=2)
    results: dict[str, Any] = {}

    def job(tokens: tuple[int, ...], key: str, lookup: bool) -> Any:
        def run() -> None:
            stats = Generation()
            results[key] = ("".join(scheduler.generate(list(tokens), None, 64, stats, lookup=lookup)), stats)

        return run

    try:
        run_threads([job(COPYING, "copying", True), job(prompt(4), "plain", False)])
    finally:
        scheduler.close()
    assert results["copying"][0] == text_of(COPIED)
    assert results["copying"][1].lookup_kept == 2
    assert results["plain"][0] == text_of([7, 8, 9])
    assert results["plain"][1].lookup_drafted == 0
