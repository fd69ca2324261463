"""Token fidelity of a runtime pair (the same model file embedded and behind a server): which pairs
are measured, the records with their base, the summary entry, and the reasons where not measured."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import BaseMessage, HumanMessage

import quantgate.backends.llamacpp._embedded_forcing as embedded_forcing
import quantgate.evaluate.token_fidelity._pair_fidelity as runtime_pairs
import quantgate.evaluate.token_fidelity._run_step as run_step
from quantgate.backends import BackendError
from quantgate.backends._forcing import ForcedPositions
from quantgate.backends.llamacpp._embedded_forcing import EmbeddedForcing, top_logprobs
from quantgate.evaluate.token_fidelity._job import NO_POSITION, FidelityJob, FidelityStep
from quantgate.evaluate.token_fidelity._pair_fidelity import measure_member, runtime_pair_fidelity
from quantgate.evaluate.token_fidelity._run_step import reference_outputs, token_fidelity_step
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant
from quantgate.rundir._files import FIDELITY_FILE, RECORDS_FILE
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import JsonLines, read_fidelity
from quantgate.rundir._summary import TokenFidelityEntry, VariantEntry

URL = "http://127.0.0.1:9/v1"
LN = math.log


def test_a_top_k_list_is_the_log_softmax_cut_to_k_and_alike_spellings_keep_the_larger():
    logits = np.log(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)) + 5.0  # probabilities .1 .2 .3 .4
    top = top_logprobs(logits, 2, "abcd".__getitem__)
    assert list(top) == ["d", "c"]
    assert top["d"] == pytest.approx(LN(0.4), abs=1e-6)
    assert top["c"] == pytest.approx(LN(0.3), abs=1e-6)
    merged = top_logprobs(logits, 3, "abxx".__getitem__)  # c and d spelled alike
    assert merged == pytest.approx({"x": LN(0.4), "b": LN(0.2)}, abs=1e-6)


class _Tokenizer:
    """A llama with one token per character (ids are code points)."""

    def tokenize(self, text: bytes, add_bos: bool = True) -> list[int]:
        return [0] * add_bos + [ord(c) for c in text.decode()]

    def detokenize(self, tokens: list[int]) -> bytes:
        return "".join(chr(t) for t in tokens).encode()


def test_the_embedded_forcing_follows_the_target_after_the_rendered_prompt(monkeypatch):
    seen: dict[str, Any] = {}

    def forced(llama, prompt_tokens, target_tokens, *, rows_per_batch):
        seen.update(prompt=prompt_tokens, target=target_tokens)
        rows = np.full((len(target_tokens), 128), -30.0, dtype=np.float32)
        for i, token in enumerate(target_tokens):
            rows[i, token] = 0.0  # the target's own token is (almost) certain
        return rows

    monkeypatch.setattr(embedded_forcing, "forced_logits", forced)
    forcing = EmbeddedForcing(llama=_Tokenizer(), top_logprobs=1, render=lambda m: "P:")
    followed = forcing.follow_text([HumanMessage(content="x")], "ab")
    assert seen == {"prompt": [0, ord("P"), ord(":")], "target": [ord("a"), ord("b")]}
    assert followed.tokens == ("a", "b")
    assert [list(top or {}) for top in followed.top] == [["a"], ["b"]]
    assert forcing.follow_tokens([HumanMessage(content="x")], ["a", "b"]).tokens == ("a", "b")
    with pytest.raises(BackendError, match="not this model's split"):
        forcing.follow_tokens([HumanMessage(content="x")], ["ab"])


class _Fixed:
    """A forcing that gives the same lists whatever it follows."""

    top_logprobs = 1

    def __init__(self, tokens: Sequence[str], top: Sequence[dict[str, float]]) -> None:
        self.positions = ForcedPositions(tokens=tuple(tokens), top=tuple(top), requests=1)

    def follow_text(self, messages: Sequence[BaseMessage], target: str) -> ForcedPositions:
        return self.positions

    def follow_tokens(self, messages: Sequence[BaseMessage], tokens: Sequence[str]) -> ForcedPositions:
        assert tuple(tokens) == self.positions.tokens
        return self.positions


def test_a_member_is_compared_with_the_bases_lists_and_its_records_name_the_base(tmp_path: Path):
    base = _Fixed(["{", "}"], [{"{": LN(0.6), "x": LN(0.4)}, {"}": LN(0.9), "y": LN(0.1)}])
    member = _Fixed(["{", "}"], [{"x": LN(0.6), "{": LN(0.4)}, {"}": LN(0.9), "y": LN(0.1)}])
    sink = JsonLines(tmp_path / FIDELITY_FILE)
    summary = measure_member(
        base="E", reference=base, member="S", forcing=member, messages={"c0": []},
        outputs={"c0": "{}"}, sink=sink, tags={},
    )  # fmt: skip
    sink.close()
    # position 1: 0.6 ln(.6/.4) + 0.4 ln(.4/.6) = 0.2 ln 1.5; position 2: the same lists, 0
    assert summary.positions == 2
    assert summary.kld_mean == pytest.approx(0.2 * LN(1.5) / 2)
    assert summary.top1_agreement == pytest.approx(0.5)
    [line] = read_fidelity(tmp_path)
    assert (line.variant, line.base, line.case_id, line.top1) == ("S", "E", "c0", [False, True])
    assert line.kld == pytest.approx([0.2 * LN(1.5), 0.0])


def _variant(name: str, backend: str, sha256: str | None, **options: Any) -> Variant:
    if backend == "openai":
        options = {"base_url": URL, **options}
    return Variant(name=name, backend=backend, model=f"{name}.gguf", sha256=sha256, options=options)


def _entries(names: Sequence[str]) -> list[VariantEntry]:
    return [VariantEntry(name=name, backend="x", is_reference=name == "R") for name in names]


DATASET = load_dataset("restaurants")
CASES = DATASET.cases[:2]  # the step's cases


def _write_outputs(run_dir: Path, variant: str, cases: int) -> None:
    sink = JsonLines(run_dir / RECORDS_FILE)
    for case in DATASET.cases[:cases]:
        sink.append(CaseRecord(variant=variant, case_id=case.id, raw=' {"a": 1}', valid=True, attempts=1))
    sink.close()


def _entry(positions: int) -> TokenFidelityEntry:
    return TokenFidelityEntry.model_validate(
        {
            "method": "m",
            "records": FIDELITY_FILE,
            "positions": positions,
            "cases": 2,
            "kld_mean": 0.001,
            "kld_p95": None,
            "kld_p99": None,
            "kld_max": None,
            "top1_agreement": 0.99,
        }
    )


def _step(variants: list[Variant], run_dir: Path, *, enabled: bool = True) -> list[VariantEntry]:
    entries = _entries([v.name for v in variants])
    step = FidelityStep(
        dataset=DATASET, cases=CASES, variants=variants, reference_name="R", entries=entries,
        run_dir=run_dir, enabled=enabled, max_repairs=0, progress=False,
    )  # fmt: skip
    runtime_pair_fidelity(step, outputs_of=reference_outputs)
    return entries


def test_only_a_completions_server_paired_with_an_embedded_base_is_measured(tmp_path, monkeypatch):
    jobs: list[FidelityJob] = []

    def measured(job: FidelityJob) -> dict[str, TokenFidelityEntry]:
        jobs.append(job)
        return {v.name: _entry(40) for v in job.variants}

    monkeypatch.setattr(runtime_pairs, "_measure_in_worker", measured)
    _write_outputs(tmp_path, "E", 3)
    variants = [
        _variant("R", "llamacpp", "f16"),
        _variant("E", "llamacpp", "q4"),
        _variant("S", "openai", "q4", api="completions"),
        _variant("C", "openai", "q4"),  # the chat API: the server's own template
        _variant("O", "ollama", "q8"),  # paired with G, no embedded base
        _variant("G", "openai", "q8", api="completions"),
        _variant("N", "openai", None, api="completions"),  # no sha256: in no pair
    ]
    entries = {e.name: e for e in _step(variants, tmp_path)}
    [job] = jobs
    assert (job.reference.name, [v.name for v in job.variants]) == ("E", ["S"])
    assert set(job.outputs) == {case.id for case in CASES}  # the base's outputs of the step's cases
    assert entries["S"].runtime_token_fidelity == _entry(40)
    assert (entries["S"].runtime_token_fidelity_base, entries["S"].runtime_token_fidelity_missing) == (
        "E",
        None,
    )
    assert entries["C"].runtime_token_fidelity is None
    assert "uses the chat API" in (entries["C"].runtime_token_fidelity_missing or "")
    assert 'api = "completions"' in (entries["C"].runtime_token_fidelity_missing or "")
    assert entries["G"].runtime_token_fidelity_base == "O"
    assert "base O (ollama) gives no full logits" in (entries["G"].runtime_token_fidelity_missing or "")
    for name in ("R", "E", "O", "N"):  # no pair's other member
        e = entries[name]
        unset = (e.runtime_token_fidelity, e.runtime_token_fidelity_base, e.runtime_token_fidelity_missing)
        assert unset == (None, None, None)


def test_reasons_when_switched_off_without_base_outputs_or_when_the_worker_fails(tmp_path, monkeypatch):
    pair = [_variant("R", "llamacpp", "q4"), _variant("S", "openai", "q4", api="completions")]
    monkeypatch.setattr(runtime_pairs, "_measure_in_worker", lambda job: pytest.fail("not measured"))
    _write_outputs(tmp_path, "S", 2)  # the server's records, none of the base's
    [_, off] = _step(pair, tmp_path, enabled=False)
    assert (
        off.runtime_token_fidelity_missing
        == "not measured: token fidelity was switched off (--no-token-fidelity)"
    )
    [_, none] = _step(pair, tmp_path)
    assert none.runtime_token_fidelity_missing == "not measured: no case answered validly by R at first try"

    def failing(job: FidelityJob) -> dict[str, TokenFidelityEntry]:
        raise BackendError("server at x answered 500\nmore")

    monkeypatch.setattr(runtime_pairs, "_measure_in_worker", failing)
    _write_outputs(tmp_path, "R", 1)
    [_, failed] = _step(pair, tmp_path)
    assert failed.runtime_token_fidelity_missing == "not measured: server at x answered 500"
    monkeypatch.setattr(runtime_pairs, "_measure_in_worker", lambda job: {"S": _entry(0)})
    [_, empty] = _step(pair, tmp_path)
    assert empty.runtime_token_fidelity is None
    assert empty.runtime_token_fidelity_missing == NO_POSITION


def test_a_pair_is_measured_when_the_reference_failed(tmp_path, monkeypatch):
    monkeypatch.setattr(
        runtime_pairs, "_measure_in_worker", lambda job: {v.name: _entry(40) for v in job.variants}
    )
    _write_outputs(tmp_path, "E", 2)
    variants = [
        _variant("R", "llamacpp", "f16"),
        _variant("E", "llamacpp", "q4"),
        _variant("S", "openai", "q4", api="completions"),
    ]
    entries = _entries([v.name for v in variants])
    entries[0].status = "skipped"
    token_fidelity_step(
        dataset=DATASET, cases=CASES, variants=variants, reference_name="R", entries=entries,
        run_dir=tmp_path, enabled=True, max_repairs=0, progress=False,
    )  # fmt: skip
    assert (entries[2].runtime_token_fidelity, entries[2].runtime_token_fidelity_base) == (_entry(40), "E")
    assert entries[1].token_fidelity is None  # against the skipped reference: nothing


def test_a_measurement_reaches_a_summary_entry_alike_against_the_reference_and_a_pairs_base():
    measured = {"A": _entry(40), "B": _entry(0)}
    reasons = {"C": "not measured: why"}
    against_reference = _entries(["R", "A", "B", "C", "D"])
    run_step.annotate(against_reference, measured, reasons)
    against_base = _entries(["R", "A", "B", "C", "D"])
    runtime_pairs._annotate(against_base, [("R", n) for n in "ABCD"], measured, reasons)
    expected = [
        (measured["A"], None),
        (None, NO_POSITION),
        (None, "not measured: why"),
        (None, "not measured"),
    ]
    assert [(e.token_fidelity, e.token_fidelity_missing) for e in against_reference[1:]] == expected
    pairs = [(e.runtime_token_fidelity, e.runtime_token_fidelity_missing) for e in against_base[1:]]
    assert pairs == expected
    assert against_reference[0].token_fidelity_missing is None  # the reference is not measured against itself
    assert {e.runtime_token_fidelity_base for e in against_base[1:]} == {"R"}
