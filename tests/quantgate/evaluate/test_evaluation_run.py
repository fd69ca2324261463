import json

import pytest

from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation, select_cases
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run, read_records
from tests.fakes import GOOD, SCHEMA, QueuedChatModel

SUMMARY_KEYS = {
    "name", "backend", "quantization", "file_size_mb", "memory_mb", "model_memory_mb", "field_accuracy",
    "field_accuracy_delta", "format_validity", "first_attempt_validity", "agreement_with_reference",
    "ttft_s_p50", "tokens_per_s", "latency_s_p50", "latency_s_p95", "errors", "fields", "slices",
}  # fmt: skip


def variants():
    wrong = json.dumps({**GOOD, "currency": "USD"})
    quant = QueuedChatModel(outputs=[json.dumps(GOOD)], by_text={"case 1": wrong})
    reference = QueuedChatModel(outputs=[json.dumps(GOOD)])
    return VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("quant", quant, quantization="Q4"),
            Variant.from_chat_model("ref", reference, quantization="F16"),
        ],
    )


def test_run_writes_records_variants_and_summary(dataset, tmp_path):
    run_dir = run_evaluation(dataset, variants(), options=RunOptions(out=tmp_path / "runs", progress=False))
    run = load_run(run_dir)
    summary = run.summary
    assert summary.format_version == 15
    assert summary.run_id == run_dir.name
    assert summary.status == "complete"
    dataset_info = summary.dataset
    assert (dataset_info.name, dataset_info.sha256, dataset_info.cases) == ("tiny", dataset.sha256, 5)
    assert summary.reference == "ref"
    ref, quant = summary.variants
    assert [ref.name, quant.name] == ["ref", "quant"]  # reference first
    on_disk = json.loads((run_dir / "summary.json").read_text())
    for entry in on_disk["variants"]:
        assert set(entry) >= SUMMARY_KEYS
    assert ref.field_accuracy == 1.0
    assert ref.field_accuracy_delta is None
    assert ref.agreement_with_reference is None
    assert quant.field_accuracy == pytest.approx(1 - 1 / 20)
    assert quant.field_accuracy_delta == pytest.approx(-1 / 20)
    assert quant.agreement_with_reference == pytest.approx(1 - 1 / 20)
    assert quant.fields["currency"] == pytest.approx(4 / 5)
    assert quant.slices["lang:es"] == pytest.approx(1 - 1 / 12)
    assert quant.file_size_mb is None  # a chat model object has no file: not measured, not 0
    assert summary.options is not None
    assert summary.options.concurrency is None  # not given: each backend's default
    assert quant.concurrency == 1  # a chat model object: one case at a time
    assert quant.wall_s is not None
    assert quant.wall_s > 0
    assert quant.memory_mb is not None
    records = list(read_records(run_dir))
    assert len(records) == 10
    first = next(r for r in records if r.variant == "quant" and r.case_id == "c1")
    assert first.fields["currency"] == 0.0
    assert first.outcomes["currency"] == "wrong"
    assert first.raw is not None
    assert json.loads(first.raw)["currency"] == "USD"
    assert first.ttft_s is not None
    assert [v.name for v in run.variants.variants] == ["ref", "quant"]
    assert run.variants.variants[0].quantization == "F16"
    variants_on_disk = json.loads((run_dir / "variants.json").read_text())["variants"]
    assert "runtime" in variants_on_disk[0]
    assert "hardware" in variants_on_disk[0]
    assert run.variants.variants[0].hardware is not None  # the variant was evaluated: its machine is known
    frame = run.to_frame()
    assert len(frame) == 10
    assert "field:currency" in frame.columns


def test_limit_balances_languages(dataset):
    chosen = select_cases(dataset.cases, 2)
    assert sorted(c.lang or "" for c in chosen) == ["en", "es"]
    assert select_cases(dataset.cases, None) == list(dataset.cases)


def test_unknown_reference_is_refused(dataset, tmp_path):
    with pytest.raises(ValueError, match="reference 'nope' is not one of the variants"):
        run_evaluation(
            dataset, variants(), reference="nope", options=RunOptions(out=tmp_path, progress=False)
        )


def test_variant_that_cannot_load_is_skipped(dataset, tmp_path):
    broken = Variant(name="missing", backend="llamacpp", model=str(tmp_path / "nope.gguf"))
    variant_set = VariantSet(reference="ref", variants=[*variants().variants, broken])
    summary = load_run(
        run_evaluation(dataset, variant_set, options=RunOptions(out=tmp_path, progress=False))
    ).summary
    skipped = summary.variants[-1]
    assert skipped.status == "skipped"
    assert skipped.error is not None
    assert "no GGUF file" in skipped.error
    assert summary.status == "complete"


def test_interrupt_keeps_the_records_written_so_far(dataset, tmp_path):
    interrupting = QueuedChatModel(outputs=[json.dumps(GOOD)], by_text={"case 3": KeyboardInterrupt()})
    variant_set = VariantSet(variants=[Variant.from_chat_model("only", interrupting)])
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(dataset, variant_set, options=RunOptions(out=tmp_path / "runs", progress=False))
    (run_dir,) = (tmp_path / "runs").iterdir()
    records = list(read_records(run_dir))
    ids = [r.case_id for r in records]
    assert ids[:3] == ["c0", "c1", "c2"]  # tasks already started may still finish
    assert "c3" not in ids
    assert load_run(run_dir).summary.status == "interrupted"


def test_unlabeled_dataset_reports_agreement_only(tmp_path):
    root = tmp_path / "u"
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    (root / "cases.jsonl").write_text(json.dumps({"id": "a", "text": "case a"}) + "\n")
    summary = load_run(
        run_evaluation(
            load_dataset(root), variants(), options=RunOptions(out=tmp_path / "runs", progress=False)
        )
    ).summary
    quant = summary.variants[1]
    assert quant.field_accuracy is None
    assert quant.field_accuracy_delta is None
    assert quant.agreement_with_reference == 1.0


def test_unloadable_gguf_fails_in_its_worker_process_and_is_skipped(dataset, tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + b"\0" * 64)
    variant_set = VariantSet(
        reference="ref",
        variants=[*variants().variants, Variant(name="junk", backend="llamacpp", model=str(junk))],
    )
    summary = load_run(
        run_evaluation(dataset, variant_set, options=RunOptions(out=tmp_path / "runs", progress=False))
    ).summary
    junk_entry = summary.variants[-1]
    assert junk_entry.status == "skipped"
    assert junk_entry.error is not None
    assert "llama.cpp could not load" in junk_entry.error
    assert summary.variants[0].status == "ok"


def test_wall_time_and_throughput_of_cases_side_by_side(dataset, tmp_path):
    """Cases that each take 0.2 s, 5 at once: the wall time is about one case's, not five."""
    import time

    class SlowChatModel(QueuedChatModel):
        def _answer(self, messages):
            time.sleep(0.2)
            yield from super()._answer(messages)

    slow = SlowChatModel(outputs=[json.dumps(GOOD)])
    variant_set = VariantSet(variants=[Variant.from_chat_model("slow", slow)])
    options = RunOptions(out=tmp_path / "runs", concurrency=5, progress=False, token_fidelity=False)
    run_dir = run_evaluation(dataset, variant_set, options=options)
    (entry,) = load_run(run_dir).summary.variants
    records = list(read_records(run_dir))
    assert entry.concurrency == 5
    assert entry.wall_s is not None
    assert entry.wall_s < 0.6 * sum(r.total_s or 0 for r in records)
    tokens = sum(r.output_tokens or 0 for r in records)
    assert tokens > 0
    assert entry.throughput_tokens_per_s == pytest.approx(tokens / entry.wall_s)


def test_schema_keywords_the_grammar_cannot_enforce_are_recorded_and_said_once(
    tmp_path, capsys, register_backend
):
    """A backend names what its grammar leaves unenforced: variants.json keeps it per variant, and
    the run warns once for the two variants that share the list."""
    from contextlib import contextmanager

    from quantgate.backends import OpenedVariant
    from quantgate.backends._schema_grammar import unenforced_keywords

    @contextmanager
    def open_gbnf_like(variant, schema, *, slots=None):
        runtime = {"unenforced_schema_keywords": [str(k) for k in unenforced_keywords(schema, engine="gbnf")]}
        yield OpenedVariant(chat_model=QueuedChatModel(outputs=[json.dumps(GOOD)]), runtime=runtime)

    register_backend("gbnf-like", open_gbnf_like)
    root = tmp_path / "bounded"
    root.mkdir()
    schema = json.loads(json.dumps(SCHEMA))
    schema["properties"]["total"]["minimum"] = 0
    (root / "schema.json").write_text(json.dumps(schema))
    (root / "cases.jsonl").write_text(json.dumps({"id": "c1", "text": "case 1", "expected": GOOD}) + "\n")
    pair = VariantSet(
        reference="ref",
        variants=[Variant(name=n, backend="gbnf-like", model=n) for n in ("ref", "quant")],
    )
    options = RunOptions(out=tmp_path / "runs", progress=False)
    run_dir = run_evaluation(load_dataset(root), pair, options=options)
    named = "total: minimum (llama.cpp's GBNF converter ignores it here)"
    for metadata in load_run(run_dir).variants.variants:
        assert metadata.runtime is not None
        assert metadata.runtime["unenforced_schema_keywords"] == [named]
    err = capsys.readouterr().err
    assert err.count("does not enforce 1 schema keyword(s)") == 1
    assert f"\n  {named}" in err
