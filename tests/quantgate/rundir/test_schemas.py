"""The exported JSON Schemas validate every file a run writes, and refuse a broken one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.loadtest._level_specs import parse_levels
from quantgate.loadtest._levels import LoadOptions
from quantgate.loadtest._loadtest_run import run_load_test
from quantgate.rundir._schemas import SCHEMAS, write_schemas
from tests.fakes import SleepyChatModel
from tests.quantgate.run_factory import make_fake_run


def _validators(directory: Path) -> dict[str, Draft202012Validator]:
    """Run file name -> a validator of the schema `write_schemas` wrote for it."""
    written = write_schemas(directory)
    assert [p.name for p in written] == list(SCHEMAS)
    found = {}
    for path in written:
        schema = json.loads(path.read_text(encoding="utf-8"))
        Draft202012Validator.check_schema(schema)
        found[SCHEMAS[path.name][1]] = Draft202012Validator(schema)
    return found


def _documents(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json.loads(text)]


def validate_run(run_dir: Path, schema_dir: Path) -> dict[str, int]:
    """Validate each run file present against its schema; the number of documents checked per file."""
    checked = {}
    for name, validator in _validators(schema_dir).items():
        path = run_dir / name
        if not path.is_file():
            continue
        documents = _documents(path)
        for number, document in enumerate(documents, 1):
            errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
            assert not errors, (
                f"{path} document {number}: {errors[0].message} at {list(errors[0].absolute_path)}"
            )
        checked[name] = len(documents)
    return checked


@pytest.fixture
def fake_run_with_load(tmp_path: Path) -> Path:
    """A decided run of the real pipeline over fake models, with a load test added."""
    run_dir = make_fake_run(tmp_path)
    variants = VariantSet(variants=[Variant.from_chat_model("quant", SleepyChatModel(delay_s=0.001))])
    options = LoadOptions(levels=parse_levels("normal=1,peak=2"), requests=3)
    run_load_test(load_dataset(run_dir / "dataset"), variants, options=options, run_dir=run_dir)
    return run_dir


def test_every_file_of_a_run_validates(fake_run_with_load: Path, tmp_path: Path) -> None:
    checked = validate_run(fake_run_with_load, tmp_path / "schemas")
    # 6 cases x 2 variants; one load variant at two levels of 3 requests; no token fidelity (fake models)
    assert checked == {
        "summary.json": 1,
        "records.jsonl": 12,
        "variants.json": 1,
        "load.jsonl": 6,
        "decision.json": 1,
    }


@pytest.mark.parametrize(
    ("file", "breakage"),
    [
        ("records.jsonl", lambda d: d.pop("variant")),
        ("summary.json", lambda d: d.update(status="finished")),
        ("decision.json", lambda d: d["variants"]["quant"].update(passes="yes")),
        ("load.jsonl", lambda d: d.update(surprise=1)),
    ],
)
def test_a_broken_file_is_refused(fake_run_with_load: Path, tmp_path: Path, file: str, breakage: Any) -> None:
    document = _documents(fake_run_with_load / file)[0]
    validator = _validators(tmp_path / "schemas")[file]
    assert validator.is_valid(document)
    breakage(document)
    assert not validator.is_valid(document)


def test_the_schemas_describe_their_files(tmp_path: Path) -> None:
    write_schemas(tmp_path)
    record = json.loads((tmp_path / "record.schema.json").read_text())
    assert record["$id"] == "quantgate/records.jsonl"
    assert "one line of the file" in record["description"]
    assert record["properties"]["format_version"]["const"] == 4
    assert {"variant", "case_id"} <= set(record["required"])
    decision = json.loads((tmp_path / "decision.schema.json").read_text())
    assert decision["properties"]["format_version"]["const"] == 9
    summary = json.loads((tmp_path / "summary.schema.json").read_text())
    assert summary["properties"]["format_version"]["const"] == 15
    entry = summary["$defs"]["VariantEntry"]["properties"]
    assert (entry["missing_cases"]["type"], entry["missing_cases"]["items"]) == ("array", {"type": "string"})
    assert entry["complete"]["anyOf"] == [{"type": "boolean"}, {"type": "null"}]


@pytest.mark.model
def test_a_real_run_validates_token_fidelity_included(small_real_run: Path, tmp_path: Path) -> None:
    checked = validate_run(small_real_run, tmp_path / "schemas")
    assert checked["records.jsonl"] == 6  # F16 and Q4_K_M on 3 cases
    assert checked["fidelity.jsonl"] >= 1
    assert {"summary.json", "variants.json", "decision.json"} <= set(checked)
