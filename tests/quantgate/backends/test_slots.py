"""The slot scheduler against a fake model context: ordering, refill, early ends, grammar
state per sequence, the shared prefix, the KV budget and failures."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from quantgate.backends.llamacpp._greedy import Generation, common_prefix
from quantgate.backends.llamacpp._slots import SlotScheduler

VOCAB = 32
EOS = 0
PREFIX = [1, 9, 9, 9, 9, 9, 9, 9]  # what every prompt starts with (BOS and a shared instruction)


class FakeGrammar:
    """Allows exactly the tokens of `sequence`, in order, then only the end.

    The tokens in `forced` are the ones it reports as forced (fast-forward) when it reaches them.
    """

    def __init__(self, sequence: Sequence[int], forced: Sequence[int] = ()) -> None:
        self.sequence = list(sequence)
        self.forced = set(forced)
        self.at = 0
        self.fallbacks = 0
        self.closed = False

    def choose(self, logits: np.ndarray[Any, Any]) -> int:
        wanted = self.sequence[self.at] if self.at < len(self.sequence) else EOS
        if int(np.argmax(logits)) != wanted:
            self.fallbacks += 1
        return wanted

    def accept(self, token: int) -> None:
        assert token == self.sequence[self.at]
        self.at += 1

    def fast_forward(self) -> list[int]:
        run: list[int] = []
        while self.at < len(self.sequence) and self.at in self.forced:
            run.append(self.sequence[self.at])
            self.at += 1
        return run

    def rollback(self, tokens: int) -> None:
        assert 0 <= tokens <= self.at
        self.at -= tokens

    def close(self) -> None:
        self.closed = True


class FakeContext:
    """A 'model' that continues each known prompt with its scripted output, then ends.

    It keeps each sequence's tokens as a KV cache would (positions must follow on), so a
    wrong prefix copy or a wrong position makes the script lookup fail.
    """

    def __init__(
        self,
        scripts: dict[tuple[int, ...], list[int]],
        *,
        n_ctx: int = 4096,
        n_batch: int = 16,
        strict: bool = True,
    ) -> None:
        self.scripts = scripts
        self.strict = strict
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.kv: dict[int, list[int]] = {}
        self.batches: list[list[tuple[int, int]]] = []
        """Per decode, (owner, tokens) in batch order; owner: a prompt's first own token, -1 the prefix."""
        self.decoded_tokens = 0
        self.grammars: list[FakeGrammar] = []
        self._rows: list[np.ndarray[Any, Any] | None] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.fail_next: str | None = None

    def _next(self, history: list[int]) -> int:
        for prompt, output in self.scripts.items():
            if tuple(history[: len(prompt)]) == prompt:
                generated = history[len(prompt) :]
                if not self.strict:  # a grammar may steer off the script: the model keeps wanting the same
                    return output[0]
                assert generated == output[: len(generated)], "the sequence went off its script"
                return output[len(generated)] if len(generated) < len(output) else EOS
        raise AssertionError(f"no script starts like {history}")

    def decode(self, tokens: Sequence[int], positions: Sequence[int], seqs: Sequence[int],
               logits: Sequence[bool]) -> None:  # fmt: skip
        self.entered.set()
        self.gate.wait()
        if self.fail_next is not None:
            message, self.fail_next = self.fail_next, None
            raise RuntimeError(message)
        assert len(tokens) <= self.n_batch
        composition: list[tuple[int, int]] = []
        self._rows = []
        for token, pos, seq, want in zip(tokens, positions, seqs, logits, strict=True):
            history = self.kv.setdefault(seq, [])
            assert pos == len(history), f"seq {seq}: position {pos} after {len(history)} tokens"
            history.append(token)
            row = None
            if want:
                row = np.zeros(VOCAB, dtype=np.float32)
                row[self._next(history)] = 1.0
            self._rows.append(row)
            owner = history[len(PREFIX)] if len(history) > len(PREFIX) else -1
            if composition and composition[-1][0] == owner:
                composition[-1] = (owner, composition[-1][1] + 1)
            else:
                composition.append((owner, 1))
        self.decoded_tokens += len(tokens)
        self.batches.append(composition)

    def logits(self, index: int) -> np.ndarray[Any, Any]:
        row = self._rows[index]
        assert row is not None, "logits asked for an entry decoded without them"
        return row

    def copy_sequence(self, src: int, dst: int) -> None:
        assert not self.kv.get(dst), f"seq {dst} is not empty before the copy"
        self.kv[dst] = list(self.kv.get(src, []))

    def remove(self, seq: int, start: int = 0) -> None:
        del self.kv.setdefault(seq, [])[start:]

    def is_end(self, token: int) -> bool:
        return token == EOS

    def piece(self, token: int) -> bytes:
        return bytes([ord("a") + token - 1])

    def grammar(self, text: str) -> FakeGrammar:
        """`text` lists the allowed tokens, e.g. "7,8!,9": a `!` marks a token the grammar forces."""
        if text == "bad":
            raise ValueError("cannot parse the grammar")
        items = text.split(",")
        forced = [i for i, item in enumerate(items) if item.endswith("!")]
        grammar = FakeGrammar([int(item.rstrip("!")) for item in items], forced)
        self.grammars.append(grammar)
        return grammar


def text_of(tokens: Sequence[int]) -> str:
    return "".join(chr(ord("a") + t - 1) for t in tokens)


def prompt(*own: int) -> tuple[int, ...]:
    return (*PREFIX, *own)


def run_threads(jobs: Sequence[Callable[[], None]]) -> None:
    threads = [threading.Thread(target=job) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive(), "a request never finished"


def collect(scheduler: SlotScheduler, tokens: Sequence[int], results: dict[str, Any], key: str,
            *, max_tokens: int = 64, grammar: str | None = None) -> Callable[[], None]:  # fmt: skip
    def job() -> None:
        stats = Generation()
        try:
            results[key] = ("".join(scheduler.generate(list(tokens), grammar, max_tokens, stats)), stats)
        except Exception as exc:
            results[key] = (exc, stats)

    return job


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix([1, 2], [1, 2, 3]) == 2


def test_one_request_gets_its_script_and_counts():
    context = FakeContext({prompt(3, 4): [5, 6, 7]})
    scheduler = SlotScheduler(context, slots=2)
    try:
        stats = Generation()
        assert "".join(scheduler.generate(list(prompt(3, 4)), None, 64, stats)) == text_of([5, 6, 7])
        assert (stats.prompt_tokens, stats.output_tokens, stats.finish_reason) == (10, 3, "stop")
    finally:
        scheduler.close()


def test_finished_sequence_frees_its_slot_at_once_and_the_others_never_stall():
    a, b, c, d = prompt(2), prompt(3), prompt(4), prompt(5)
    scripts = {a: [6] * 12, b: [7, 7], c: [8, 8, 8], d: [10, 10, 10]}
    context = FakeContext(scripts)
    context.gate.clear()
    scheduler = SlotScheduler(context, slots=2)
    results: dict[str, Any] = {}
    first = threading.Thread(target=collect(scheduler, a, results, "a"))
    first.start()
    assert context.entered.wait(10)  # A's prompt is being read; B, C, D queue up meanwhile
    queued = (("b", b), ("c", c), ("d", d))
    rest = [threading.Thread(target=collect(scheduler, p, results, k)) for k, p in queued]
    for count, thread in enumerate(rest, start=1):
        thread.start()
        deadline = time.monotonic() + 10
        while len(scheduler._waiting) < count and time.monotonic() < deadline:
            time.sleep(0.001)
    context.gate.set()
    for thread in [first, *rest]:
        thread.join(timeout=30)
    scheduler.close()
    assert {k: v[0] for k, v in results.items()} == {
        "a": text_of(scripts[a]), "b": text_of(scripts[b]), "c": text_of(scripts[c]), "d": text_of(scripts[d])
    }  # fmt: skip
    batches = context.batches
    steps = {owner: [i for i, batch in enumerate(batches) if owner in dict(batch)] for owner in (2, 3, 4, 5)}
    assert steps[2] == list(range(0, 13))  # A: read, then one token per batch, in every batch
    assert steps[3] == [1, 2, 3]  # B is admitted (FIFO) once A's prompt is the shared prefix
    assert steps[4] == [4, 5, 6, 7]  # C takes B's slot in the very next batch
    assert steps[5] == [8, 9, 10, 11]  # and D takes C's
    assert context.batches[0] == [(-1, len(PREFIX)), (2, 1)]  # A's prompt, whole
    assert all(-1 not in dict(batch) for batch in context.batches[1:])  # the others read only their own part
    assert scheduler.peak_running == 2
    assert all(results[k][1].finish_reason == "stop" for k in "abcd")
    assert not any(context.kv[seq] for seq in (0, 1))  # finished sequences leave no cells behind


def test_prefix_is_read_once_and_copied_into_each_sequence():
    prompts = [prompt(2, 3), prompt(4), prompt(5, 6, 7)]
    context = FakeContext({p: [11, 12] for p in prompts})
    scheduler = SlotScheduler(context, slots=3)
    results: dict[str, Any] = {}
    try:
        for i, p in enumerate(prompts):  # one after another: the prefix sequence outlives each
            collect(scheduler, p, results, str(i))()
    finally:
        scheduler.close()
    assert all(results[str(i)][0] == text_of([11, 12]) for i in range(3))
    # the first prompt whole, then each later one past the shared prefix, plus 2 generated tokens each
    # (the last generated token is never decoded: its successor is not needed once the end is chosen)
    read = len(prompts[0]) + (len(prompts[1]) - len(PREFIX)) + (len(prompts[2]) - len(PREFIX))
    assert context.decoded_tokens == read + 3 * 2
    assert context.kv[3] == list(PREFIX)  # the prefix sequence shrank to what the prompts share


def test_each_sequence_keeps_its_own_grammar_state():
    a, b = prompt(2), prompt(3)
    context = FakeContext({a: [5], b: [6]}, strict=False)
    scheduler = SlotScheduler(context, slots=2)
    results: dict[str, Any] = {}
    try:
        run_threads([collect(scheduler, a, results, "a", grammar="7,8,9"),
                     collect(scheduler, b, results, "b", grammar="10,11")])  # fmt: skip
    finally:
        scheduler.close()
    assert results["a"][0] == text_of([7, 8, 9])
    assert results["b"][0] == text_of([10, 11])
    assert results["a"][1].grammar_fallbacks == 4  # the model wanted 5 each time, and no end
    assert results["b"][1].grammar_fallbacks == 3
    assert all(g.closed for g in context.grammars)


@pytest.mark.parametrize("fast_forward", [False, True])
def test_a_draft_of_forced_tokens_the_model_agrees_with_is_kept_in_one_step(fast_forward):
    a = prompt(2)
    context = FakeContext({a: [7, 8, 9, 10]})  # the model itself wants what the grammar forces
    scheduler = SlotScheduler(context, slots=2, fast_forward=fast_forward)
    results: dict[str, Any] = {}
    try:
        collect(scheduler, a, results, "full", grammar="7,8!,9!,10")()
        collect(scheduler, a, results, "cut", grammar="7,8!,9!,10", max_tokens=2)()
    finally:
        scheduler.close()
    text, stats = results["full"]
    assert (text, stats.output_tokens, stats.finish_reason) == (text_of([7, 8, 9, 10]), 4, "stop")
    assert stats.forced_tokens == (2 if fast_forward else 0)
    assert stats.grammar_fallbacks == 0
    read, one = [(-1, len(PREFIX)), (2, 1)], [(2, 1)]
    if fast_forward:  # 7 with its draft 8, 9 in one batch, then 10; the cut one: its prompt token, 7 + 8
        assert context.batches == [read, [(2, 3)], one, one, [(2, 2)]]
    else:  # one token per step: 7, 8, 9, 10; then the cut one's own prompt token and 7
        assert context.batches == [read, one, one, one, one, one, one]
    cut_text, cut = results["cut"]
    assert (cut_text, cut.output_tokens, cut.finish_reason) == (text_of([7, 8]), 2, "length")
    assert all(g.at == len(g.sequence) for g in context.grammars[:1])  # the grammar saw each token once


def test_a_draft_the_model_disagrees_with_is_dropped_and_positions_stay_right():
    a = prompt(2)
    context = FakeContext({a: [7]}, strict=False)  # the model always wants 7; the grammar steers
    scheduler = SlotScheduler(context, slots=2, fast_forward=True)
    results: dict[str, Any] = {}
    try:
        collect(scheduler, a, results, "a", grammar="7,8!,9!,10")()
        collect(scheduler, a, results, "again", grammar="7,8!,9!,10")()  # the slot is clean afterwards
    finally:
        scheduler.close()
    for key in ("a", "again"):
        text, stats = results[key]
        assert (text, stats.output_tokens, stats.finish_reason) == (text_of([7, 8, 9, 10]), 4, "stop")
        assert stats.forced_tokens == 0  # every drafted token was refused by the model
        assert stats.grammar_fallbacks == 4  # 8, 9, 10 and the end were the grammar's, not the model's
    # 7 + draft [8, 9] (refused: 8 chosen from the logits after 7), 8 + draft [9] (refused), 9, 10;
    # FakeContext checks that every position follows on from what the sequence holds
    read, one = [(-1, len(PREFIX)), (2, 1)], [(2, 1)]
    assert context.batches[:5] == [read, [(2, 3)], [(2, 2)], one, one]
    assert context.kv[0] == []


def test_length_limit_and_grammar_dead_end_and_bad_grammar():
    a = prompt(2)
    context = FakeContext({a: [5] * 20})
    context.grammar = lambda text: FakeGrammar([]) if text == "dead" else FakeContext.grammar(context, text)  # type: ignore[method-assign]
    scheduler = SlotScheduler(context, slots=2)
    try:
        stats = Generation()
        assert "".join(scheduler.generate(list(a), None, 3, stats)) == text_of([5, 5, 5])
        assert (stats.output_tokens, stats.finish_reason) == (3, "length")
        stats = Generation()
        with pytest.raises(ValueError, match="cannot parse"):
            list(scheduler.generate(list(a), "bad", 3, stats))
        zero = Generation()
        assert list(scheduler.generate(list(a), None, 0, zero)) == []
        assert zero.finish_reason == "length"
    finally:
        scheduler.close()


def test_a_caller_that_stops_reading_frees_its_slot():
    a, b = prompt(2), prompt(3)
    context = FakeContext({a: [5] * 30, b: [6, 6]})
    scheduler = SlotScheduler(context, slots=1)
    try:
        stream = scheduler.generate(list(a), None, 64, Generation())
        assert next(stream) == text_of([5])
        stream.close()  # what LangChain does when the consumer breaks off
        assert "".join(scheduler.generate(list(b), None, 64, Generation())) == text_of([6, 6])
    finally:
        scheduler.close()


def test_a_failed_decode_fails_its_requests_and_the_scheduler_goes_on():
    a = prompt(2)
    context = FakeContext({a: [5, 5]})
    scheduler = SlotScheduler(context, slots=2)
    try:
        context.fail_next = "no room left in the KV cache"
        with pytest.raises(RuntimeError, match="decoding failed: no room left"):
            list(scheduler.generate(list(a), None, 8, Generation()))
        assert "".join(scheduler.generate(list(a), None, 8, Generation())) == text_of([5, 5])
    finally:
        scheduler.close()


def test_requests_wait_for_kv_room_instead_of_overfilling():
    a, b = prompt(2), prompt(3)
    own = len(a) - len(PREFIX) + 8  # cells a request may hold past the prefix: own prompt + max_tokens
    context = FakeContext({a: [5] * 6, b: [6] * 6}, n_ctx=len(PREFIX) + 2 * own - 1)
    scheduler = SlotScheduler(context, slots=2)
    results: dict[str, Any] = {}
    try:
        run_threads([collect(scheduler, a, results, "a", max_tokens=8),
                     collect(scheduler, b, results, "b", max_tokens=8)])  # fmt: skip
    finally:
        scheduler.close()
    assert results["a"][0] == text_of([5] * 6)
    assert results["b"][0] == text_of([6] * 6)
    assert scheduler.peak_running == 1  # the prefix and two such requests do not fit


def test_close_fails_queued_requests_with_a_clear_error():
    context = FakeContext({prompt(2): [5] * 100})
    context.gate.clear()
    scheduler = SlotScheduler(context, slots=1)
    results: dict[str, Any] = {}
    thread = threading.Thread(target=collect(scheduler, prompt(2), results, "a"))
    thread.start()
    assert context.entered.wait(10)
    closer = threading.Thread(target=scheduler.close)
    closer.start()
    time.sleep(0.05)
    context.gate.set()
    closer.join(timeout=10)
    thread.join(timeout=10)
    error = results["a"][0]
    assert isinstance(error, RuntimeError)
    assert "closed" in str(error)
    with pytest.raises(RuntimeError, match="closed"):
        list(scheduler.generate(list(prompt(2)), None, 4, Generation()))
