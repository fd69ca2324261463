"""The noise floor's arm: the reference answers the first cases again, one at a time, against its
first answers; the rerun goes to noise_floor.jsonl, never to records.jsonl."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import PrivateAttr

from quantgate.evaluate._evaluation_run import RunOptions, resume_evaluation, run_evaluation
from quantgate.evaluate.scheduler._warm_up import WARM_UP_TEXT
from quantgate.inputs._dataset import Case, Dataset, load_dataset, write_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import NOISE_FLOOR_FILE
from quantgate.rundir._jsonl import read_lines
from quantgate.rundir._lines import NoiseFloorLine
from quantgate.rundir._store import read_records, read_summary
from tests.fakes import GOOD, SCHEMA, QueuedChatModel

WRONG = json.dumps({**GOOD, "currency": "USD"})


class _Rerunning(QueuedChatModel):
    """Answers GOOD, but `changed` differently the second time it is asked; notes how many calls
    were in flight at each call, first answers and second apart."""

    changed: str = "case <1>"
    delay_s: float = 0.03
    _seen: Counter[str] = PrivateAttr(default_factory=Counter)
    _flight: int = PrivateAttr(default=0)
    _guard: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _in_flight: dict[str, list[int]] = PrivateAttr(default_factory=lambda: {"first": [0], "again": []})

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        text = " ".join(str(m.content) for m in messages)
        if WARM_UP_TEXT in text:
            yield from super()._answer(messages)
            return
        case = text[text.rindex("case <") :].split(">")[0] + ">"
        with self._guard:
            self._seen[case] += 1
            self._flight += 1
            again = self._seen[case] > 1
            self._in_flight["again" if again else "first"].append(self._flight)
        try:
            time.sleep(self.delay_s)
            answer = WRONG if again and case == self.changed else json.dumps(GOOD)
            for piece in (answer[:10], answer[10:]):
                yield ChatGenerationChunk(message=_chunk(piece))
        finally:
            with self._guard:
                self._flight -= 1


def _chunk(text: str) -> Any:
    from langchain_core.messages import AIMessageChunk

    return AIMessageChunk(content=text)


def _dataset(root: Path, cases: int = 6) -> Dataset:
    lines = [Case(id=f"c{i}", text=f"case <{i}>", expected=GOOD, tags=("lang:en",)) for i in range(cases)]
    write_dataset(root, schema=SCHEMA, cases=lines, examples=[Case(id="e1", text="example", expected=GOOD)])
    return load_dataset(root)


def _variants(reference: QueuedChatModel, candidate: QueuedChatModel | None = None) -> VariantSet:
    candidate = candidate or QueuedChatModel(outputs=[json.dumps(GOOD)])
    return VariantSet(
        reference="ref",
        variants=[Variant.from_chat_model("ref", reference), Variant.from_chat_model("quant", candidate)],
    )


def _options(tmp_path: Path, **more: Any) -> RunOptions:
    return RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False, concurrency=4, **more)


def test_the_reference_answers_the_sample_again_one_at_a_time(tmp_path):
    reference = _Rerunning(outputs=[json.dumps(GOOD)])
    run_dir = run_evaluation(
        _dataset(tmp_path / "d"), _variants(reference), options=_options(tmp_path, noise_floor_cases=3)
    )

    assert reference._seen == Counter({f"case <{i}>": 2 if i < 3 else 1 for i in range(6)})
    assert reference._in_flight["again"] == [1, 1, 1]  # one case at a time
    assert max(reference._in_flight["first"]) > 1  # the slots' batches the first time
    records = Counter((r.variant, r.case_id) for r in read_records(run_dir))
    assert records == Counter({(v, f"c{i}"): 1 for v in ("ref", "quant") for i in range(6)})  # no rerun there
    lines = list(read_lines(run_dir / NOISE_FLOOR_FILE, NoiseFloorLine, problems=[]))
    assert [(ln.case_id, ln.identical, ln.fields_changed) for ln in lines] == [
        ("c0", True, 0.0),
        ("c1", False, 0.25),
        ("c2", True, 0.0),
    ]
    assert lines[1].first_record == GOOD
    assert lines[1].rerun_record == {**GOOD, "currency": "USD"}
    floor = read_summary(run_dir).noise_floor
    assert floor is not None
    assert (floor.cases, floor.identical, floor.agreement_cases) == (3, 2, 3)
    assert floor.agreement == pytest.approx(11 / 12)
    assert floor.fields_changed_share == pytest.approx(0.25 / 3)
    assert (floor.first_concurrency, floor.rerun_concurrency, floor.first_from) == (4, 1, [])
    assert floor.noise_floor_s is not None
    assert floor.noise_floor_s > 0
    assert floor.kld_mean is None
    assert floor.kld_missing is not None
    assert "no logits" in floor.kld_missing


def test_the_arm_is_not_counted_in_the_budgets_case_evaluation(tmp_path):
    reference = _Rerunning(outputs=[json.dumps(GOOD)], delay_s=0.2)
    run_dir = run_evaluation(
        _dataset(tmp_path / "d", 2), _variants(reference), options=_options(tmp_path, noise_floor_cases=2)
    )
    summary = read_summary(run_dir)
    assert summary.noise_floor is not None
    assert summary.noise_floor.noise_floor_s is not None
    assert summary.noise_floor.noise_floor_s >= 0.4  # two cases one after the other
    assert summary.evaluation_s is not None
    assert summary.evaluation_s < 0.4 + 0.4 + 0.3


def test_zero_cases_switch_it_off(tmp_path):
    reference = _Rerunning(outputs=[json.dumps(GOOD)])
    run_dir = run_evaluation(
        _dataset(tmp_path / "d"), _variants(reference), options=_options(tmp_path, noise_floor_cases=0)
    )
    assert set(reference._seen.values()) == {1}
    assert not (run_dir / NOISE_FLOOR_FILE).exists()
    summary = read_summary(run_dir)
    assert summary.noise_floor is None
    assert summary.noise_floor_missing is None
    assert summary.options is not None
    assert summary.options.noise_floor_cases == 0


def test_a_negative_count_is_a_usage_error():
    from evaluators.errors import UsageError

    with pytest.raises(UsageError, match="noise-floor-cases must be 0 or more"):
        RunOptions(noise_floor_cases=-1)


def test_a_resumed_run_keeps_its_noise_floor_and_does_not_measure_again(tmp_path):
    dataset = _dataset(tmp_path / "d")
    stopping = QueuedChatModel(outputs=[json.dumps(GOOD)], by_text={"case <3>": KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(dataset, _variants(_Rerunning(outputs=[json.dumps(GOOD)]), stopping),
                       options=_options(tmp_path, noise_floor_cases=3))  # fmt: skip
    run_dir = next((tmp_path / "runs").iterdir())
    before = read_summary(run_dir)
    assert before.status == "interrupted"
    assert before.noise_floor is not None
    written = (run_dir / NOISE_FLOOR_FILE).read_bytes()

    again = _Rerunning(outputs=[json.dumps(GOOD)])
    resume_evaluation(run_dir, variant_set=_variants(again), progress=False)

    after = read_summary(run_dir)
    assert after.status == "complete"
    assert after.noise_floor is not None
    kept = {"cases", "identical", "agreement", "fields_changed_share", "first_concurrency"}
    assert after.noise_floor.model_dump(include=kept) == before.noise_floor.model_dump(include=kept)
    assert after.noise_floor.cases == 3
    assert (run_dir / NOISE_FLOOR_FILE).read_bytes() == written
    assert not again._seen  # the reference had answered every case, and the arm was done
