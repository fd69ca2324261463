"""`quantgate ladder --calibrate-text FILE`: the general-text arm of a calibration, with fake
llama.cpp tools and no model (issue 48, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import quantgate.ladder._calibrate as calibrate_module
import quantgate.ladder._calibrate_text as text_module
from quantgate.inputs._dataset import load_dataset
from quantgate.ladder._calibrate import CalibrationRequest
from quantgate.ladder._calibrate_text import TextCalibrationRequest, calibrate_text
from quantgate.ladder._calibration_record import read_calibration_record
from quantgate.ladder._llama_tool_calls import CalibrationError
from quantgate.ladder._quantize import _calibrated
from tests.quantgate.ladder.test_calibration import count_tokens

_PARAGRAPH = "The river rises in the hills and runs two hundred miles to the sea through old towns. "


def _imatrix_calls(log: Path) -> list[list[str]]:
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return [c for c in calls if c[0] == "llama-imatrix" and c[1:] != ["--version"]]


def test_a_text_file_makes_the_text_arm_with_its_record(tools, fake_ladder, tmp_path):
    text = tmp_path / "wiki.test.raw"
    text.write_text(_PARAGRAPH * 200, encoding="utf-8")  # 17,400 characters: 4,350 stand-in tokens
    request = TextCalibrationRequest(text=text, quants=["Q2_K"], max_chunks=5)
    variants = calibrate_text(
        request, reference=fake_ladder / "model-F16.gguf", directory=fake_ladder, count_tokens=count_tokens
    )
    final = fake_ladder / "calibration-text-wiki.test"
    assert [v.name for v in variants] == ["Q2_K+imat-text"]
    assert Path(variants[0].model) == final / "model-Q2_K+imat-text.gguf"
    record = read_calibration_record(final / "calibration.json")
    assert (record.source, record.dataset, record.cases, record.answers) == (
        "text",
        "wiki.test.raw",
        [],
        "none",
    )
    assert (record.chunks, record.tokens) == (5, 5 * 512)  # capped: the text has 8 chunks
    assert _imatrix_calls(tools)[0][-5:] == ["-c", "512", "--chunks", "5", "--no-ppl"]
    imatrix = variants[0].imatrix
    assert imatrix is not None
    assert (imatrix.source, imatrix.cases, imatrix.chunks) == ("text", 0, 5)
    assert "the text file wiki.test.raw" in variants[0].calibration
    assert sorted(p.name for p in fake_ladder.iterdir()) == ["calibration-text-wiki.test", "model-F16.gguf"]


def test_with_a_dataset_arm_the_text_reads_as_many_chunks_as_the_dataset_did(
    tools, fake_ladder, fake_reference, tmp_path, monkeypatch
):
    text = tmp_path / "general.txt"
    text.write_text(_PARAGRAPH * 400, encoding="utf-8")  # 17 stand-in chunks
    for module in (calibrate_module, text_module):
        monkeypatch.setattr(module, "vocabulary_token_counter", lambda _model: count_tokens)
    dataset_arm = CalibrationRequest(dataset=load_dataset("restaurants"), cases=4, quants=["Q2_K"])
    text_arm = TextCalibrationRequest(text=text, quants=["Q2_K"])
    variants = _calibrated(dataset_arm, text_arm, fake_ladder / "model-F16.gguf", fake_ladder)
    assert [v.name for v in variants] == ["Q2_K+imat", "Q2_K+imat-text"]
    dataset_chunks, text_chunks = (v.imatrix.chunks for v in variants if v.imatrix)
    assert dataset_chunks is not None
    assert dataset_chunks < 17
    assert text_chunks == dataset_chunks


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"too short",
            r"tokens; llama-imatrix needs at least 1024 \(two chunks of 512\): give a longer text",
        ),
        (b"\xff\xfe not utf-8" * 1000, r"not UTF-8 text \(byte 0\)"),
        (None, "cannot read the calibration text"),
    ],
)
def test_a_bad_text_file_is_refused_and_leaves_nothing(tools, fake_ladder, tmp_path, content, message):
    text = tmp_path / "general.txt"
    if content is not None:
        text.write_bytes(content)
    request = TextCalibrationRequest(text=text, quants=["Q2_K"])
    with pytest.raises(CalibrationError, match=message):
        calibrate_text(
            request,
            reference=fake_ladder / "model-F16.gguf",
            directory=fake_ladder,
            count_tokens=count_tokens,
        )
    assert sorted(p.name for p in fake_ladder.iterdir()) == ["model-F16.gguf"]


def test_without_a_file_the_bundled_text_is_read_and_its_card_names_its_source():
    from quantgate.cli._ladder import _text_calibration
    from quantgate.cli._main import build_parser

    args = build_parser().parse_args(["ladder", "--calibrate-text"])
    request = _text_calibration(args, ["Q2_K"])
    assert request is not None
    assert request.text == text_module.BUNDLED_TEXT
    text = text_module.read_calibration_text(request.text)
    assert text.startswith("It is a truth universally acknowledged, that a single man in possession")
    assert len(text) == 239_719
    card = (request.text.parent / "README.md").read_text()
    assert "936af28fdf47e9a50abf52183a04959df01daf17" in card
    assert "public domain" in card
