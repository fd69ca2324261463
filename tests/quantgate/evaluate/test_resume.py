"""`resume_evaluation`: an interrupted run goes on in its own directory, each (variant, case)
recorded once, the records written before left as they were, the figures those of a run that
was never interrupted."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from quantgate.evaluate._evaluation_run import resume_evaluation, run_evaluation
from quantgate.evaluate._options import run_cases
from quantgate.evaluate._resume import ResumeError, planned_variants
from quantgate.inputs._dataset import Case, load_dataset, write_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._completeness import run_completeness
from quantgate.rundir._files import FIDELITY_FILE, RECORDS_FILE, SUMMARY_FILE, VARIANTS_FILE
from quantgate.rundir._store import RunStore, load_run, read_records, read_summary
from quantgate.rundir._summary import RunSummary
from tests.fakes import GOOD, SCHEMA, QueuedChatModel
from tests.quantgate.evaluate.resumable_runs import (
    assert_refused,
    interrupted_run,
    resume_dataset,
    resume_options,
    resume_variants,
)

COMPARED = ("cases", "field_accuracy", "format_validity", "agreement_with_reference", "errors", "fields")
"""Figures of a variant that a resumed run must give exactly as an uninterrupted one."""


def _counts(run_dir: Path) -> Counter[tuple[str, str]]:
    return Counter((r.variant, r.case_id) for r in read_records(run_dir))


@pytest.mark.parametrize("stops", [{"stop_quant": "c3"}, {"stop_ref": "c2"}], ids=["in-quant", "in-ref"])
def test_an_interrupted_run_goes_on_with_each_case_recorded_once(tmp_path, stops):
    dataset = resume_dataset(tmp_path / "d")
    whole = load_run(
        run_evaluation(dataset, resume_variants(), options=resume_options(tmp_path / "whole"))
    ).summary
    run_dir = interrupted_run(dataset, tmp_path, **stops)
    before = (run_dir / RECORDS_FILE).read_bytes()
    held = _counts(run_dir)
    assert read_summary(run_dir).status == "interrupted"
    assert 0 < len(held) < 12

    assert resume_evaluation(run_dir, variant_set=resume_variants(), progress=False) == run_dir

    after = (run_dir / RECORDS_FILE).read_bytes()
    assert after.startswith(before)  # the records written before are left as they were
    assert _counts(run_dir) == Counter({(v, f"c{i}"): 1 for v in ("ref", "quant") for i in range(6)})
    summary = read_summary(run_dir)
    assert summary.status == "complete"
    assert run_completeness(run_dir).complete
    for resumed, uninterrupted in zip(summary.variants, whole.variants, strict=True):
        assert resumed.name == uninterrupted.name
        assert [getattr(resumed, k) for k in COMPARED] == [getattr(uninterrupted, k) for k in COMPARED]
        assert resumed.complete
        assert resumed.field_accuracy_delta == uninterrupted.field_accuracy_delta
    quant = summary.entry("quant")
    assert quant is not None
    assert quant.field_accuracy == pytest.approx(1 - 2 / 24)  # currency wrong on 2 of 6 cases, 4 fields
    # the variants run in rounds, so neither entry was written: each goes on from its records
    resumed_cases = {e.name: e.resumed_cases for e in summary.variants}
    held_per_variant = Counter(variant for variant, _ in held)
    assert resumed_cases == {name: held_per_variant[name] or None for name in ("ref", "quant")}
    assert [v.runtime is not None for v in load_run(run_dir).variants.variants] == [True, True]


def test_variants_json_lists_every_variant_from_the_start(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_ref="c1")
    lines = load_run(run_dir).variants.variants
    # both were loaded before the reference's first case was interrupted: what serves each is written
    # as it loads, beside the spec every variant had from the start
    assert [(v.name, v.quantization, v.error) for v in lines] == [("ref", "F16", None), ("quant", "Q4", None)]
    assert [(v.runtime is not None, v.hardware is not None) for v in lines] == [(True, True), (True, True)]


def test_a_torn_last_line_is_set_aside_and_its_case_runs_again(tmp_path, capsys):
    dataset = resume_dataset(tmp_path / "d")
    run_dir = interrupted_run(dataset, tmp_path, stop_quant="c3")
    records = run_dir / RECORDS_FILE
    lines = records.read_bytes().splitlines(keepends=True)
    torn = lines[-1][:40]  # the last record, cut off mid-write
    records.write_bytes(b"".join(lines[:-1]) + torn)
    resume_evaluation(run_dir, variant_set=resume_variants(), progress=False)
    assert (run_dir / (RECORDS_FILE + ".torn")).read_bytes() == torn + b"\n"
    assert set(_counts(run_dir).values()) == {1}
    assert len(_counts(run_dir)) == 12
    assert f"{RECORDS_FILE}: its last line was cut short (40 bytes" in capsys.readouterr().err


def test_a_sequential_run_goes_on_judging_in_rounds_until_settled(tmp_path):
    cases = [Case(id=f"c{i}", text=f"case <{i}>", expected=GOOD, tags=("lang:en",)) for i in range(48)]
    write_dataset(
        tmp_path / "d", schema=SCHEMA, cases=cases, examples=[Case(id="e1", text="e", expected=GOOD)]
    )
    dataset = load_dataset(tmp_path / "d")
    blank = json.dumps(dict.fromkeys(GOOD))
    # one case at a time: exactly the cases before the interrupted one are recorded (side by side,
    # how many others of its round finish first depends on timing, and 7 can already settle it)
    # the accuracy gate alone (a blank answer flips every field: the flip gate would fail it before the stop)
    gates = Gates(max_flip_share=None)
    options = resume_options(
        tmp_path, sequential=True, round_size=4, max_repairs=0, concurrency=1, gates=gates
    )

    def variants(stop: str | None) -> VariantSet:
        answers: dict[str, object] = {f"case <{stop[1:]}>": KeyboardInterrupt()} if stop else {}
        return VariantSet(
            reference="ref",
            variants=[
                Variant.from_chat_model("ref", QueuedChatModel(outputs=[json.dumps(GOOD)])),
                Variant.from_chat_model("quant", QueuedChatModel(outputs=[blank], by_text=answers)),
            ],
        )

    order = [c.id for c in run_cases(dataset.cases, options)]  # the run's order: shuffled, by a seed
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(dataset, variants(order[2]), options=options)
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert read_summary(run_dir).options.method == "sequential"  # type: ignore[union-attr]
    resume_evaluation(run_dir, variant_set=variants(None), progress=False)
    quant = read_summary(run_dir).entry("quant")
    assert quant is not None
    assert quant.sequential is not None
    assert (quant.sequential.stopped, quant.sequential.settled) == ("settled", "fail")
    assert quant.complete
    assert quant.resumed_cases is not None
    assert 0 < quant.resumed_cases < quant.sequential.cases <= 16
    assert set(_counts(run_dir).values()) == {1}


def test_an_unfinished_token_fidelity_step_is_kept_aside(tmp_path, capsys):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    (run_dir / FIDELITY_FILE).write_text('{"variant": "quant"}\n')
    resume_evaluation(run_dir, variant_set=resume_variants(), progress=False)
    assert (run_dir / (FIDELITY_FILE + ".interrupted")).read_text() == '{"variant": "quant"}\n'
    assert "the token-fidelity step had not finished" in capsys.readouterr().err


def test_the_run_variants_are_read_back_and_chat_models_must_be_given_again(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    with pytest.raises(ResumeError, match="variant ref is a chat model given from Python"):
        planned_variants(run_dir)


def test_a_suites_finished_task_gives_its_variants_back(tmp_path):
    """`run --resume SUITE_DIR` reads the variants of the first task, which may be complete: it
    gets past the completeness check to the variants (here chat models, refused as such)."""
    run_dir = run_evaluation(
        resume_dataset(tmp_path / "d"), resume_variants(), options=resume_options(tmp_path)
    )
    with pytest.raises(ResumeError, match="variant ref is a chat model given from Python"):
        planned_variants(run_dir, finished=True)
    with pytest.raises(ResumeError, match="the run is complete; nothing to resume"):
        planned_variants(run_dir)


# what stops a resume, before anything is written


def test_a_complete_run_has_nothing_to_resume(tmp_path):
    run_dir = run_evaluation(
        resume_dataset(tmp_path / "d"), resume_variants(), options=resume_options(tmp_path)
    )
    assert_refused(run_dir, r"the run is complete; nothing to resume \(quantgate decide")


def test_no_run_directory(tmp_path):
    with pytest.raises(ResumeError, match=f"--resume {tmp_path / 'nope'}: no such run directory"):
        resume_evaluation(tmp_path / "nope", progress=False)


def test_another_dataset_is_refused_by_its_sha256(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    other = resume_dataset(tmp_path / "other", cases=5)
    assert_refused(run_dir, r"--dataset .*other: not the run's dataset \(sha256 ", dataset=other)


def test_other_variants_are_refused(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    renamed = VariantSet(variants=[Variant.from_chat_model("other", QueuedChatModel(outputs=["{}"]))])
    assert_refused(run_dir, r"--variants: other; the run's variants are ref, quant", variant_set=renamed)


def test_a_variant_spec_that_differs_is_refused_naming_what_differs(tmp_path):
    dataset = resume_dataset(tmp_path / "d")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    other = Variant.from_chat_model("other", QueuedChatModel(outputs=["{}"]))
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", QueuedChatModel(outputs=[KeyboardInterrupt()])),
            Variant(name="file", backend="llamacpp", model=str(gguf), quantization="Q8_0", sha256="ab" * 32),
            other,
        ],
    )
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(dataset, variants, options=resume_options(tmp_path))
    (run_dir,) = (tmp_path / "runs").iterdir()
    moved = variants.variants[1].model_copy(update={"model": "/elsewhere/m.gguf"})  # same sha256: accepted
    changed = variants.variants[1].model_copy(update={"quantization": "Q4_0"})
    ref = Variant.from_chat_model("ref", QueuedChatModel(outputs=["{}"]))
    with pytest.raises(
        ResumeError, match="variant file is not the run's: quantization 'Q4_0' where the run has 'Q8_0'"
    ):
        resume_evaluation(
            run_dir, variant_set=VariantSet(reference="ref", variants=[ref, changed, other]), progress=False
        )
    resume_evaluation(
        run_dir, variant_set=VariantSet(reference="ref", variants=[ref, moved, other]), progress=False
    )
    line = load_run(run_dir).variants.by_name()["file"]  # evaluated from where it is now (and not a model)
    assert (line.model, line.error is not None) == ("/elsewhere/m.gguf", True)


def test_a_damaged_record_line_stops_the_resume_naming_it(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    records = run_dir / RECORDS_FILE
    lines = records.read_text().splitlines(keepends=True)
    records.write_text(lines[0] + '{"variant": "ref", "cas\n' + "".join(lines[1:]))
    assert_refused(
        run_dir,
        rf"{RECORDS_FILE} has damaged lines, so which cases they held is unknown: "
        rf"{RECORDS_FILE} line 2: not JSON",
    )


def test_records_of_a_stranger_stop_the_resume(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    records = run_dir / RECORDS_FILE
    line = json.loads(records.read_text().splitlines()[0])
    with records.open("a") as handle:
        handle.write(json.dumps({**line, "variant": "Q9"}) + "\n")
    assert_refused(run_dir, f"{RECORDS_FILE} has records of variant Q9, which the run has not")


def test_a_record_that_scores_otherwise_now_stops_the_resume(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    records = run_dir / RECORDS_FILE
    lines = records.read_text().splitlines()
    first = json.loads(lines[0])
    first["fields"]["currency"] = 0.5
    records.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    assert_refused(
        run_dir,
        r"case c0 of variant ref scores differently now \(fields was .*'currency': 0.5.*the scoring changed",
    )


def test_a_run_still_being_written_cannot_be_resumed(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    with RunStore.resume(run_dir):  # as the process still writing it holds it
        assert_refused(run_dir, "another quantgate process is still writing this run")
    resume_evaluation(run_dir, variant_set=resume_variants(), progress=False)  # its lock went with it
    assert read_summary(run_dir).status == "complete"


def test_a_run_of_an_earlier_quantgate_cannot_be_resumed(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    del summary["options"]["gates"]
    (run_dir / SUMMARY_FILE).write_text(json.dumps(summary))
    assert_refused(run_dir, "written by an earlier quantgate, which did not record what resuming needs")
    assert (run_dir / VARIANTS_FILE).is_file()


# a full disk


class FullDisk:
    """A file handle on a disk that fills up: the next write gets part of its text out, then ENOSPC."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def write(self, text: str) -> int:
        import errno

        self.handle.write(text[:22])
        self.handle.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.handle.close()


def test_a_full_disk_stops_the_run_saying_how_to_go_on_and_keeps_what_was_written(tmp_path, monkeypatch):
    """ENOSPC on the third record (simulated under the real writer): a clear error, the two records
    before it intact, then a resume once there is space records every case once."""
    from quantgate.rundir import _jsonl as jsonl
    from quantgate.rundir._jsonl import JsonLines

    real_append = JsonLines.append
    written: list[str] = []

    def append_until_full(self: JsonLines, line: Any) -> None:
        if self.path.name == RECORDS_FILE and len(written) >= 2:  # the disk is full from now on
            if self._handle is None:  # reopened after a failed write, as the writer does
                jsonl._drop_torn_tail(self.path)
                self._handle = self.path.open("a", encoding="utf-8")
            if not isinstance(self._handle, FullDisk):
                self._handle = FullDisk(self._handle)  # type: ignore[assignment]
        real_append(self, line)
        written.append(self.path.name)

    monkeypatch.setattr(JsonLines, "append", append_until_full)
    with pytest.raises(RuntimeError) as caught:
        run_evaluation(resume_dataset(tmp_path / "d"), resume_variants(), options=resume_options(tmp_path))
    (run_dir,) = (tmp_path / "runs").iterdir()
    message = str(caught.value)
    assert message.startswith(f"cannot write {run_dir / RECORDS_FILE}: No space left on device")
    assert message.endswith(f"go on with: quantgate run --resume {run_dir}")
    (line_1, line_2, torn) = (run_dir / RECORDS_FILE).read_text().split("\n")
    assert [json.loads(line)["case_id"] for line in (line_1, line_2)] == ["c0", "c1"]
    assert len(torn) == 22
    assert read_summary(run_dir).status == "interrupted"

    monkeypatch.setattr(JsonLines, "append", real_append)  # space again
    resume_evaluation(run_dir, variant_set=resume_variants(), progress=False)
    assert _counts(run_dir) == Counter({(v, f"c{i}"): 1 for v in ("ref", "quant") for i in range(6)})
    assert (run_dir / (RECORDS_FILE + ".torn")).read_text() == torn + "\n"


def test_a_summary_that_cannot_be_written_while_the_run_fails_is_said_not_raised(
    tmp_path, monkeypatch, capsys
):
    import errno

    from quantgate.rundir._jsonfile import RunWriteError

    original = RunStore.write_summary

    def no_space_at_the_end(self: RunStore, summary: RunSummary) -> None:
        if summary.status == "interrupted":
            raise RunWriteError(
                self.directory / SUMMARY_FILE, OSError(errno.ENOSPC, "No space left on device")
            )
        original(self, summary)

    monkeypatch.setattr(RunStore, "write_summary", no_space_at_the_end)
    with pytest.raises(KeyboardInterrupt):  # the first failure is the one raised
        run_evaluation(
            resume_dataset(tmp_path / "d"), resume_variants(stop_ref="c1"), options=resume_options(tmp_path)
        )
    err = capsys.readouterr().err
    assert "summary.json: No space left on device; what was written before it is kept" in err
    assert "(summary.json keeps its previous version)" in err
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert read_summary(run_dir).status == "running"  # the version written when the run started
