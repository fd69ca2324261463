import json
import threading
import time

import pytest

from evaluators import CaseScorer
from evaluators.memory import MemoryReading
from graphs.evaluation import CaseOutcome, EvaluationContext, graph, rounds_limit
from graphs.extraction import ExtractionContext
from tests.fakes import GOOD, SCHEMA, QueuedChatModel


def cases(n, **expected):
    return [
        {
            "id": f"c{i}",
            "text": f"case {i}",
            "expected": {**GOOD, **expected},
            "tags": ["lang:es" if i % 2 else "lang:en"],
        }
        for i in range(n)
    ]


def evaluate(model, inputs, reference_records=None, concurrency=1, memory=None, on_record=None):
    context = EvaluationContext(
        extraction=ExtractionContext(model=model, schema=SCHEMA),
        scorer=CaseScorer(schema=SCHEMA),
        reference_records=reference_records,
        on_record=on_record,
        memory=memory,
    )
    return graph.invoke({"cases": inputs}, context=context, config={"max_concurrency": concurrency})


def test_summary_from_evaluator_nodes():
    bad_total = json.dumps({**GOOD, "total": 99.0})
    model = QueuedChatModel(outputs=[json.dumps(GOOD)], by_text={"case 1": bad_total, "case 3": "not json"})
    reading = MemoryReading(
        rss_before_load_mb=100, rss_after_load_mb=350, rss_peak_mb=420, samples=5, file_size_bytes=2**20
    )
    out = evaluate(model, cases(4), memory=lambda: reading)
    summary = out["summary"]
    assert summary.cases == 4
    assert summary.fields["total"] == pytest.approx(2 / 4)
    assert summary.fields["vendor"] == pytest.approx(3 / 4)
    assert summary.field_accuracy == pytest.approx((4 + 3 + 4 + 0) / 16)
    assert summary.format_validity == pytest.approx(3 / 4)
    assert summary.first_attempt_validity == pytest.approx(3 / 4)
    assert summary.errors == 1
    assert summary.errors_by_kind == {"invalid_output": 1}
    assert summary.slices["lang:en"] == 1.0
    assert summary.slices["lang:es"] == pytest.approx(3 / 8)
    assert summary.memory_mb == 420
    assert summary.model_memory_mb == 250
    assert summary.file_size_mb == 1.0
    assert summary.ttft_s_p50 is not None
    assert summary.agreement_with_reference is None
    assert len(out["outcomes"]) == 4


def test_agreement_with_reference_needs_no_gold():
    model = QueuedChatModel(
        outputs=[json.dumps(GOOD)], by_text={"case 1": json.dumps({**GOOD, "currency": "USD"})}
    )
    unlabeled = [{**c, "expected": None} for c in cases(2)]
    reference = {"c0": GOOD, "c1": GOOD}
    summary = evaluate(model, unlabeled, reference_records=reference)["summary"]
    assert summary.field_accuracy is None
    assert summary.agreement_with_reference == pytest.approx(7 / 8)
    assert summary.agreement_fields["currency"] == 0.5
    assert summary.agreement_cases == 2


def test_not_measured_is_none():
    summary = evaluate(QueuedChatModel(outputs=[json.dumps(GOOD)]), cases(1))["summary"]
    assert summary.memory_mb is None
    assert summary.model_memory_mb is None
    assert summary.file_size_mb is None


def test_backend_errors_are_counted_and_the_run_goes_on():
    model = QueuedChatModel(outputs=[json.dumps(GOOD)], by_text={"case 2": TimeoutError("read timeout")})
    records: list[CaseOutcome] = []
    summary = evaluate(model, cases(4), on_record=records.append)["summary"]
    assert summary.errors_by_kind == {"timeout": 1}
    assert len(records) == 4
    failed = next(r for r in records if r.case_id == "c2")
    assert failed.extraction.error == "TimeoutError: read timeout"
    assert failed.score.fields is not None
    assert failed.score.fields.score == 0.0


def test_concurrency_is_bounded():
    active, peak, lock = [0], [0], threading.Lock()

    class SlowModel(QueuedChatModel):
        def _next(self, messages):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.05)
            with lock:
                active[0] -= 1
            return super()._next(messages)

    summary = evaluate(SlowModel(outputs=[json.dumps(GOOD)]), cases(8), concurrency=3)["summary"]
    assert summary.cases == 8
    assert 2 <= peak[0] <= 3


def test_no_cases():
    summary = evaluate(QueuedChatModel(outputs=["{}"]), [])["summary"]
    assert summary.cases == 0
    assert summary.field_accuracy is None
    assert summary.ttft_s_p50 is None


def test_state_keeps_only_what_the_evaluators_read():
    """Regression: the state held every case's raw output, parsed output and gold/predicted
    values until the end of the run (5,000 cases grew RSS by over 100 MB)."""
    streamed: list[CaseOutcome] = []
    model = QueuedChatModel(outputs=[json.dumps(GOOD)], by_text={"case 1": "not json"})
    out = evaluate(model, cases(2), on_record=streamed.append)
    full = {o.case_id: o for o in streamed}
    kept = {o.case_id: o for o in out["outcomes"]}
    full_format, kept_format = full["c0"].score.format, kept["c0"].score.format
    full_fields, kept_fields = full["c0"].score.fields, kept["c0"].score.fields
    assert full_format is not None
    assert kept_format is not None
    assert full_fields is not None
    assert kept_fields is not None
    assert full["c0"].extraction.raw == json.dumps(GOOD)
    assert full_format.parsed == GOOD
    assert full_fields.fields["vendor"].expected == GOOD["vendor"]
    assert full["c1"].extraction.validation_errors
    assert kept["c0"].extraction.record == full["c0"].extraction.record
    assert kept["c0"].extraction.raw is None
    assert kept_format.parsed is None
    assert kept_format.valid
    assert all(f.expected is None and f.predicted is None for f in kept_fields.fields.values())
    assert kept_fields.score == full_fields.score
    assert kept["c1"].extraction.validation_errors == []
    assert kept["c1"].error_kind == "invalid_output"
    assert out["summary"].format_validity == 0.5


def test_a_variant_keeps_no_records_when_the_reference_has_them():
    out = evaluate(QueuedChatModel(outputs=[json.dumps(GOOD)]), cases(2), reference_records={"c0": GOOD})
    assert [o.extraction.record for o in out["outcomes"]] == [None, None]
    assert out["summary"].agreement_with_reference == 1.0


def test_rounds_stop_when_the_judge_says_so():
    model = QueuedChatModel(outputs=[json.dumps(GOOD)])
    seen: list[list[str]] = []

    def judge(outcomes):
        seen.append([o.case_id for o in outcomes])
        return "settled" if len(outcomes) >= 6 else None

    extraction = ExtractionContext(model=model, schema=SCHEMA)
    context = EvaluationContext(extraction=extraction, scorer=CaseScorer(schema=SCHEMA), judge=judge)
    inputs = cases(10)
    out = graph.invoke(
        {"cases": inputs, "round_size": 3},
        context=context,
        config={"max_concurrency": 3, "recursion_limit": rounds_limit(10, 3)},
    )
    # before the first round (nothing yet), then in case order after each round
    assert seen == [[], ["c0", "c1", "c2"], [f"c{i}" for i in range(6)]]
    assert out["stopped"] == "settled"
    assert out["summary"].cases == 6
    assert sorted(o.case_id for o in out["outcomes"]) == [f"c{i}" for i in range(6)]


def test_rounds_run_to_the_last_case_without_a_stop():
    model = QueuedChatModel(outputs=[json.dumps(GOOD)])
    rounds = []
    context = EvaluationContext(
        extraction=ExtractionContext(model=model, schema=SCHEMA),
        scorer=CaseScorer(schema=SCHEMA),
        judge=lambda outcomes: rounds.append(len(outcomes)),
    )
    out = graph.invoke(
        {"cases": cases(7), "round_size": 3}, context=context, config={"recursion_limit": rounds_limit(7, 3)}
    )
    assert rounds == [0, 3, 6, 7]
    assert out["summary"].cases == 7
    assert out.get("stopped") is None
    assert rounds_limit(7, 3) == 16
    assert rounds_limit(7, None) == 12


def test_the_case_language_reaches_the_extraction_graph_normalization():
    german = json.dumps({**GOOD, "total": "1.234"})  # 1234 in German, 1.234 in English
    model = QueuedChatModel(outputs=[german])
    inputs = [
        {"id": "de", "text": "Rechnung", "expected": {**GOOD, "total": 1234.0}, "tags": ["lang:de"]},
        {"id": "en", "text": "invoice", "expected": {**GOOD, "total": 1234.0}, "tags": ["lang:en"]},
    ]
    out = evaluate(model, inputs)
    scores = {o.case_id: o.score.fields.fields["total"].score for o in out["outcomes"]}
    assert scores == {"de": 1.0, "en": 0.0}


def test_no_case_starts_after_the_deadline():
    model = QueuedChatModel(outputs=[json.dumps(GOOD)])
    extraction = ExtractionContext(model=model, schema=SCHEMA)
    judged: list[list[CaseOutcome]] = []
    context = EvaluationContext(
        extraction=extraction,
        scorer=CaseScorer(schema=SCHEMA),
        judge=judged.append,
        deadline=time.perf_counter() - 1,
    )
    out = graph.invoke({"cases": cases(6), "round_size": 3}, context=context, config={"recursion_limit": 20})
    assert out["outcomes"] == []
    assert out["summary"].cases == 0
    assert judged == [[], []]  # before the first round, then one round, all of it skipped
