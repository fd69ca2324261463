"""Every gate is complete: a field of `Gates` with a description, a check in `GATE_CHECKS`, a flag of
`run`, `decide` and `compare`, a line in docs/decision.md's gates file, and judged and reported by
`decide` (docs/development.md, "Adding a gate")."""

from __future__ import annotations

import argparse
import json
import re
import tomllib
from pathlib import Path

import pytest

from quantgate.cli._main import build_parser
from quantgate.decide._checks import GATE_CHECKS
from quantgate.decide._recommendation import decide
from quantgate.inputs._gates import GATE_KEYS, SETTING_KEYS, THRESHOLD_KEYS, Gates, value_type
from quantgate.render._markdown import escape_markdown
from tests.quantgate.run_factory import make_run

DOCS = Path(__file__).resolve().parents[3] / "docs" / "decision.md"


def _docs_gates_file() -> dict[str, object]:
    """The TOML block under docs/decision.md's "## Gates" heading."""
    section = DOCS.read_text(encoding="utf-8").split("\n## Gates\n", 1)[1]
    block = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert block is not None, "docs/decision.md: no ```toml block under ## Gates"
    return tomllib.loads(block.group(1))


def test_every_gate_has_its_check_in_the_order_of_the_model() -> None:
    assert list(GATE_CHECKS) == list(THRESHOLD_KEYS)
    assert set(SETTING_KEYS) <= set(GATE_KEYS)
    assert THRESHOLD_KEYS[:2] == ("max_accuracy_drop", "max_slice_accuracy_drop")


@pytest.mark.parametrize("key", GATE_KEYS)
def test_every_key_has_a_description(key: str) -> None:
    description = Gates.model_fields[key].description
    assert description is not None, f"Gates.{key} has no docstring beneath it"
    assert len(description.split()) >= 4


@pytest.mark.parametrize("command", ["run", "decide", "compare"])
def test_every_key_is_a_flag_with_its_type_and_description(command: str) -> None:
    subcommands = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ).choices
    flags = {a.dest: a for a in subcommands[command]._actions}
    for key in GATE_KEYS:
        action = flags[key]
        assert action.option_strings == ["--" + key.replace("_", "-")]
        assert action.type is value_type(key)
        assert " ".join((Gates.model_fields[key].description or "").split()) in (action.help or "")
    assert value_type("min_cases") is int
    assert value_type("max_accuracy_drop") is float


def test_the_docs_gates_file_has_every_key_and_is_valid() -> None:
    values = _docs_gates_file()
    assert list(values) == list(GATE_KEYS)
    Gates.model_validate(values)  # each value in its range


def test_every_gate_is_judged_and_reported_by_decide(tmp_path: Path) -> None:
    """With every gate of the docs' file set, a candidate gets a verdict from each gate, and
    decision.json and decision.md show each threshold and each verdict."""
    gates = Gates.model_validate(_docs_gates_file())
    right = {"a": 1.0, "b": 1.0}
    run = make_run(
        tmp_path / "run", {"R": [right] * 40, "A": [right] * 40}, footprints={"R": 700.0, "A": 450.0}
    )
    decision = decide(run, gates)
    judged = [g.gate for g in decision.variants["A"].gates]
    assert list(dict.fromkeys(g.split("[")[0] for g in judged)) == list(THRESHOLD_KEYS)
    assert {g.gate: g.status for g in decision.variants["A"].gates} == {
        "max_accuracy_drop": "inconclusive",  # 40 identical cases: the interval still reaches -10 points
        "max_slice_accuracy_drop[lang:en]": "inconclusive",  # each case is in both slices
        "max_slice_accuracy_drop[numbers]": "inconclusive",
        "max_runtime_accuracy_drop": "not_measured",  # no variant of the same file on another backend
        "max_flip_share": "pass",  # 40 identical cases: the upper bound is below 25%
        "min_format_validity": "pass",
        "max_error_rate": "pass",
        "max_memory_mb": "pass",  # 750 MiB
        "max_p95_latency_s": "pass",  # 4.7 s
        "min_neighbour_recall": "not_measured",  # no run --embeddings
        "min_cosine_p5": "not_measured",
        "max_recall_drop": "not_measured",
        "min_parallel_sequences": "not_measured",  # no memory-model record in variants.json
        "min_goodput_rps": "not_measured",  # no load test
    }
    on_disk = json.loads((run / "decision.json").read_text())
    assert list(on_disk["gates"]) == ["format_version", *GATE_KEYS]
    assert on_disk["gates"] == gates.model_dump()
    assert [g["gate"] for g in on_disk["variants"]["A"]["gates"]] == judged
    markdown = (run / "decision.md").read_text()
    for key in THRESHOLD_KEYS:
        shown = escape_markdown(key)
        assert f"| {shown} | {getattr(gates, key)} |" in markdown  # the thresholds table
        assert re.search(
            rf"\| {re.escape(shown)}(\\\[[^|]*\\\])? \| (pass|fail|inconclusive|not\\_measured) \|", markdown
        )
