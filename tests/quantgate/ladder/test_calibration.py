"""`quantgate ladder --calibrate`: the split, the text, the tools' calls, the record and the bad
inputs, with fake llama.cpp tools (tests/quantgate/ladder/fake_llama_tools.py) and no model (issue 48)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.errors import UsageError
from quantgate.inputs._dataset import Dataset, load_dataset
from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._variants import VariantSet, load_variants_file, write_variants_file
from quantgate.ladder._calibrate import CalibrationRequest, calibrate
from quantgate.ladder._calibration_record import read_calibration_record
from quantgate.ladder._calibration_split import (
    DEFAULT_CALIBRATION_CASES,
    calibration_split,
    calibration_text,
)
from quantgate.ladder._llama_tool_calls import CalibrationError
from quantgate.ladder._llama_tools import ENV_VAR as TOOLS_ENV
from quantgate.ladder._reference_answers import answer_cases, reference_variant
from tests.fakes import write_tiny_dataset
from tests.quantgate.ladder.conftest import REFERENCE_ANSWER, UNANSWERABLE


def count_tokens(text: str) -> int:
    """A stand-in tokenizer: four characters a token."""
    return len(text) // 4


@pytest.fixture(scope="module")
def restaurants() -> Dataset:
    return load_dataset("restaurants")


def _calibrate(
    dataset: Dataset, fake_ladder: Path, cases: int = 8, quants=("Q2_K", "IQ3_XXS"), answers="reference"
):
    request = CalibrationRequest(dataset=dataset, cases=cases, quants=list(quants), answers=answers)
    reference = fake_ladder / "model-F16.gguf"
    return calibrate(
        request, reference=reference, directory=fake_ladder, count_tokens=count_tokens, progress=False
    )


def _calls(log: Path) -> list[list[str]]:
    """The tools' calls, without those asking their version (a finder may ask that too)."""
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return [call for call in calls if call[1:] != ["--version"]]


def test_calibrated_variants_are_quantized_with_the_matrix_of_the_split_and_record_it(
    restaurants, tools, fake_ladder, fake_reference
):
    variants = _calibrate(restaurants, fake_ladder)
    final = fake_ladder / "calibration-restaurants"
    assert [v.name for v in variants] == ["Q2_K+imat", "IQ3_XXS+imat"]
    q2 = Path(variants[0].model)
    assert q2 == final / "model-Q2_K+imat.gguf"
    assert q2.read_text() == "fake Q2_K of model-F16.gguf with imatrix.gguf"
    record = read_calibration_record(final / "calibration.json")
    text = (final / "calibration.txt").read_text()
    assert record.tokens == count_tokens(text)
    assert record.chunks == record.tokens // 512 >= 2
    assert record.imatrix_sha256 == file_sha256(final / "imatrix.gguf")
    assert record.tool_version == "version: 4242 (fake)"
    assert record.dataset == "restaurants"
    assert record.dataset_sha256 == restaurants.sha256
    assert len(record.cases) == 8
    imatrix_call = next(c for c in _calls(tools) if c[0] == "llama-imatrix")
    assert imatrix_call[1:3] == ["-m", str(fake_ladder / "model-F16.gguf")]
    assert imatrix_call[-5:] == ["-c", "512", "--chunks", str(record.chunks), "--no-ppl"]
    quantize_types = [c[-1] for c in _calls(tools) if c[0] == "llama-quantize"]
    assert quantize_types == ["Q2_K", "IQ3_XXS"]
    imatrix = variants[1].imatrix
    assert imatrix is not None
    assert imatrix.file == str(final / "calibration.json")
    assert (imatrix.cases, imatrix.tokens, imatrix.chunks) == (8, record.tokens, record.chunks)
    assert "importance matrix from restaurants (8 cases" in variants[1].calibration
    assert sorted(p.name for p in fake_ladder.iterdir()) == ["calibration-restaurants", "model-F16.gguf"]


def test_the_split_is_seeded_leaves_the_few_shot_examples_and_the_text_is_the_prompt_then_the_gold(
    restaurants,
):
    prompted, cases = calibration_split(restaurants, 5)
    again = calibration_split(restaurants, 5)[1]
    other = calibration_split(restaurants, 5, seed=1)[1]
    assert [c.id for c in cases] == [c.id for c in again] != [c.id for c in other]
    assert not {c.id for c in cases} & {e.id for e in prompted.examples}
    text = calibration_text(prompted, cases[:1])
    gold = json.dumps(cases[0].expected, ensure_ascii=False)
    assert text.endswith(f"Text:\n{cases[0].text.strip()}\nJSON: {gold}\n\n")
    assert text.count("Text:\n") == 1 + len(prompted.examples)  # the examples, then the case


def test_a_split_too_small_for_llama_imatrix_is_refused_with_the_token_count(
    restaurants, tools, fake_ladder, fake_reference
):
    too_few = r"make \d+ tokens .*needs at least 1024 \(two chunks of 512\)"
    with pytest.raises(CalibrationError, match=too_few):
        _calibrate(restaurants, fake_ladder, cases=1)
    assert [p.name for p in fake_ladder.iterdir()] == ["model-F16.gguf"]


def test_a_dataset_with_too_few_labeled_cases_is_refused(tmp_path, tools, fake_ladder):
    tiny = load_dataset(write_tiny_dataset(tmp_path / "tiny"))
    with pytest.raises(CalibrationError, match=r"5 labeled cases .* cannot give 3 calibration cases"):
        _calibrate(tiny, fake_ladder, cases=3)


def test_a_missing_tool_names_the_install_script(restaurants, tmp_path, monkeypatch, fake_ladder):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv(TOOLS_ENV, str(tmp_path / "empty"))
    with pytest.raises(UsageError, match=r"llama-imatrix not found .*bash scripts/install-llama-tools"):
        _calibrate(restaurants, fake_ladder)
    assert [p.name for p in fake_ladder.iterdir()] == ["model-F16.gguf"]


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("imatrix-fails", r"(?s)llama-imatrix exited with status 1.*\nmain: you need at least 1024 tokens"),
        ("quantize-fails", r"(?s)to Q2_K .*llama-quantize exited with status 1.*\n.*unknown type Q2_K"),
        ("quantize-writes-nothing", "succeeded but wrote no model-Q2_K"),
        ("other-model", r"not of model-F16.gguf: 2 of its 2 entries .*blk.9.blk.0.attn_q.weight"),
    ],
)
def test_a_failing_tool_or_a_matrix_of_another_model_leaves_the_previous_calibration_as_it_was(
    restaurants, tools, fake_ladder, fake_reference, monkeypatch, mode, message
):
    _calibrate(restaurants, fake_ladder, quants=["Q4_K_M"])
    before = {p.name: p.read_bytes() for p in (fake_ladder / "calibration-restaurants").iterdir()}
    monkeypatch.setenv("FAKE_MODE", mode)
    with pytest.raises(CalibrationError, match=message):
        _calibrate(restaurants, fake_ladder, cases=9)
    assert sorted(p.name for p in fake_ladder.iterdir()) == ["calibration-restaurants", "model-F16.gguf"]
    after = {p.name: p.read_bytes() for p in (fake_ladder / "calibration-restaurants").iterdir()}
    assert after == before


def test_a_calibrated_variant_keeps_its_record_in_the_variants_file(
    restaurants, tools, fake_ladder, fake_reference
):
    variants = _calibrate(restaurants, fake_ladder, quants=["Q4_K_M"])
    write_variants_file(fake_ladder / "variants.toml", VariantSet(variants=variants))
    loaded = load_variants_file(fake_ladder / "variants.toml").variants[0]
    assert loaded.imatrix == variants[0].imatrix
    assert loaded.calibration == variants[0].calibration


def test_the_command_lines_default_is_the_ladders():
    from quantgate.cli._ladder import DEFAULT_CALIBRATION_CASES as SHOWN

    assert SHOWN == DEFAULT_CALIBRATION_CASES


def test_the_text_holds_the_references_answers_and_the_record_says_so(
    restaurants, tools, fake_ladder, fake_reference, capsys
):
    """The fake reference answers every case (one invalidly, at every attempt): its first answer,
    not the gold, follows each case's prompt; the record counts the valid ones."""
    variants = _calibrate(restaurants, fake_ladder, quants=["Q2_K"])
    final = fake_ladder / "calibration-restaurants"
    text = (final / "calibration.txt").read_text()
    prompted, cases = calibration_split(restaurants, 8)
    answer = json.dumps(REFERENCE_ANSWER)
    assert text.count(f"JSON: {answer}\n\n") == 7
    unanswerable = next(c for c in cases if UNANSWERABLE in c.text)
    assert f"{unanswerable.text.strip()}\nJSON: not json\n\n" in text
    for case in cases:
        assert json.dumps(case.expected, ensure_ascii=False) not in text
    assert text == calibration_text(
        prompted, cases, {c.id: "not json" if c is unanswerable else answer for c in cases}
    )
    first_calls = [call for call in fake_reference.calls if len(call) == len(fake_reference.calls[0])]
    assert len(first_calls) == 8  # one first prompt per case, then the unanswerable case's repairs
    assert len(fake_reference.calls) == 8 + 2
    record = read_calibration_record(final / "calibration.json")
    assert (record.answers, record.valid_answers) == ("reference", 7)
    assert "the reference answered 7 of 8 calibration cases with a valid record" in capsys.readouterr().err
    assert (
        "importance matrix from restaurants (8 cases, answered by the reference," in variants[0].calibration
    )


def test_gold_answers_are_kept_on_request_and_recorded(restaurants, tools, fake_ladder, fake_reference):
    variants = _calibrate(restaurants, fake_ladder, quants=["Q2_K"], answers="gold")
    final = fake_ladder / "calibration-restaurants"
    prompted, cases = calibration_split(restaurants, 8)
    assert (final / "calibration.txt").read_text() == calibration_text(prompted, cases)
    assert fake_reference.calls == []
    record = read_calibration_record(final / "calibration.json")
    assert (record.answers, record.valid_answers) == ("gold", None)
    assert "(8 cases, with gold answers," in variants[0].calibration


def test_a_record_written_before_the_reference_answered_reads_as_gold(tmp_path):
    """calibration.json files of the first calibrations have no `answers`: they were made with gold."""
    record = {
        "format_version": 1,
        "dataset": "restaurants",
        "dataset_path": "datasets/restaurants",
        "dataset_sha256": "d" * 64,
        "seed": 0,
        "cases": [{"id": "e2e-0082", "text_sha256": "t" * 64}],
        "tokens": 1100,
        "chunk_tokens": 512,
        "chunks": 2,
        "text_sha256": "x" * 64,
        "model_sha256": "m" * 64,
        "imatrix_file": "imatrix.gguf",
        "imatrix_sha256": "i" * 64,
        "tool_version": "version: 1 (abc)",
        "bindings_version": "0.3.16",
    }
    (tmp_path / "calibration.json").write_text(json.dumps(record))
    read = read_calibration_record(tmp_path / "calibration.json")
    assert (read.answers, read.valid_answers) == ("gold", None)


@pytest.mark.model
def test_the_real_reference_answers_calibration_cases_with_records_of_the_schema(
    restaurants, reference_ladder
):
    """The F16 reference of the session ladder answers two calibration cases through the embedded
    backend, greedy and constrained by the task's grammar: each answer is a record of the schema."""
    prompted, cases = calibration_split(restaurants, 2)
    reference = reference_variant(Path(reference_ladder.variants[0].model))
    answered = answer_cases(prompted, cases, reference, progress=False)
    assert answered.valid == 2
    for case in cases:
        record = json.loads(answered.texts[case.id])
        assert set(record) == set(restaurants.schema["properties"])
    text = calibration_text(prompted, cases, answered.texts)
    assert text.count("\nJSON: {") == 2 + 2 * len(prompted.examples)
