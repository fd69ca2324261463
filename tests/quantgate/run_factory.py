"""Synthetic run directories: records and summaries written by hand (`make_run`), or a real
run of the evaluation pipeline over fake chat models with hostile text (`make_fake_run`), or
over a reference and a quantized fake answering by text (`ref_and_quant`, `run_ref_and_quant`);
`with_token_fidelity` gives a run's variants token fidelity of known figures."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluators.betting import DEFAULT_TRUNCATION
from evaluators.fidelity import TokenFidelity, summarize_token_fidelity
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import Case, load_dataset, write_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import DATASET_DIR, RECORDS_FILE, SUMMARY_FILE, VARIANTS_FILE
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import read_summary, write_model
from quantgate.rundir._summary import (
    DatasetInfo,
    RunOptionsInfo,
    RunSummary,
    TokenFidelityEntry,
    VariantEntry,
    VariantMetadata,
    VariantsFile,
)
from tests.fakes import QueuedChatModel

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": ["string", "null"]}, "b": {"type": ["number", "null"]}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def make_run(
    directory: Path,
    variants: dict[str, list[dict[str, float]]],
    *,
    footprints: dict[str, float],
    invalid: dict[str, int] | None = None,
    reference: str = "R",
    tags: Sequence[Sequence[str]] | None = None,
    record_values: dict[str, dict[str, Any]] | None = None,
) -> Path:
    """A complete run: one record per case per variant with the given field scores.

    `invalid[name]` makes that variant's first n cases invalid outputs (an error each).
    `tags[i]` are case i's tags (default: lang:en and numbers for every case).
    `record_values[name]` sets more fields of each of that variant's records (`output_tokens`, ...).
    The summary records the options of a fixed sample run by this quantgate (`method` "fixed", the
    default betting truncation), so the run is judged as one of today's runs would be.
    """
    directory.mkdir(parents=True)
    n = len(next(iter(variants.values())))
    case_tags = [tuple(t) for t in tags] if tags is not None else [("lang:en", "numbers")] * n
    cases = [
        Case(id=f"c{i}", text=f"case {i}", expected={"a": "x", "b": float(i)}, tags=case_tags[i])
        for i in range(n)
    ]
    write_dataset(directory / DATASET_DIR, schema=SCHEMA, cases=cases, card="synthetic\n")
    entries, lines = [], []
    for name, scores in variants.items():
        bad = (invalid or {}).get(name, 0)
        for i, fields in enumerate(scores):
            agreement = (
                None
                if name == reference
                else {k: float(v == variants[reference][i][k]) for k, v in fields.items()}
            )
            lines.append(
                CaseRecord(
                    variant=name,
                    case_id=f"c{i}",
                    tags=list(case_tags[i]),
                    fields=fields,
                    valid=i >= bad,
                    format_valid=i >= bad,
                    error_kind="invalid_output" if i < bad else None,
                    agreement_fields=agreement,
                    total_s=1.0 + i / 10,
                    **(record_values or {}).get(name, {}),
                )
            )
        entries.append(
            VariantEntry(
                name=name,
                backend="test",
                status="ok",
                is_reference=name == reference,
                quantization=name,
                model_memory_mb=footprints[name],
                memory_mb=footprints[name] + 300,
            )
        )
    (directory / RECORDS_FILE).write_text("".join(line.model_dump_json() + "\n" for line in lines))
    summary = RunSummary(
        run_id=directory.name,
        quantgate_version="test",
        status="complete",
        reference=reference,
        dataset=DatasetInfo(name="synthetic", path=str(directory / DATASET_DIR), sha256="x", cases=n),
        hardware={"cpu": "test"},
        options=RunOptionsInfo(
            limit=None, concurrency=None, max_repairs=0, method="fixed", betting_truncation=DEFAULT_TRUNCATION
        ),
        variants=entries,
    )
    write_model(directory / SUMMARY_FILE, summary)
    metadata = [
        VariantMetadata(name=name, backend="test", quantization=name, method="test") for name in variants
    ]
    write_model(directory / VARIANTS_FILE, VariantsFile(variants=metadata))
    return directory


HOSTILE_TEXT = "Factura de Acme <script>alert(1)</script> <img src=x onerror=alert(2)> por 12,50 EUR"
HOSTILE_OUTPUT = "<script>alert(3)</script><img src=x onerror=alert(4)>"
HOSTILE_GOLD = "Acme <script>alert(6)</script>"
HOSTILE_RAW = "not json <script>alert(5)</script>"


def make_fake_run(out: Path, *, decide: bool = True) -> Path:
    """A run of the real pipeline (`run_evaluation`, then `decide`) over two fake chat models.

    Six labeled cases over the slices lang:es/en, numbers, dates, lists, code and long. The
    reference `ref` gets everything right except `total` of c4 and `vendor` of c0 (whose gold
    and text are hostile HTML). The quantized `quant` also misses those, puts hostile HTML in
    `vendor` of c1 (where it alone fails) and answers c3 with invalid output every time (an
    error). Neither has a file, so file sizes are not measured.
    """
    from quantgate.decide._recommendation import decide as decide_run
    from tests.fakes import GOOD
    from tests.fakes import SCHEMA as INVOICE_SCHEMA

    texts_and_tags = [
        (HOSTILE_TEXT, ("lang:es", "numbers", "dates")),
        ("case 1: invoice from Acme", ("lang:en", "numbers", "lists")),
        ("case 2: config invoice", ("lang:es", "code")),
        ("case 3: a long invoice", ("lang:en", "long", "dates")),
        ("case 4: invoice total", ("lang:en", "numbers")),
        ("case 5: invoice lines", ("lang:es", "lists")),
    ]
    cases = [
        Case(id=f"c{i}", text=text, expected={**GOOD, "vendor": HOSTILE_GOLD} if i == 0 else GOOD, tags=tags)
        for i, (text, tags) in enumerate(texts_and_tags)
    ]
    examples = [Case(id="e1", text="example", expected=GOOD)]
    write_dataset(out / "dataset", schema=INVOICE_SCHEMA, cases=cases, examples=examples, card="fake\n")
    wrong_total = json.dumps({**GOOD, "total": 99.0})
    reference = QueuedChatModel(outputs=[json.dumps(GOOD)], by_text={"case 4": wrong_total})
    quant = QueuedChatModel(
        outputs=[json.dumps(GOOD)],
        by_text={
            "case 1": json.dumps({**GOOD, "vendor": HOSTILE_OUTPUT}),
            "case 3": HOSTILE_RAW,
            "case 4": wrong_total,
        },
    )
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", reference, quantization="F16"),
            Variant.from_chat_model("quant", quant, quantization="Q4_K_M"),
        ],
    )
    options = RunOptions(out=out / "runs", progress=False, max_repairs=1)
    run_dir = run_evaluation(load_dataset(out / "dataset"), variants, options=options)
    if decide:
        decide_run(run_dir)
    return run_dir


def ref_and_quant(
    right: Mapping[str, Any], quant: Mapping[str, Any], model: type[QueuedChatModel] = QueuedChatModel
) -> VariantSet:
    """Two fake variants that answer by the conversation's text (`QueuedChatModel.by_text`), `{}`
    to any other: the reference `ref` (F16) answers `right`, the quantized `quant` (Q4) `quant`."""
    return VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", model(outputs=["{}"], by_text=dict(right)), quantization="F16"),
            Variant.from_chat_model("quant", model(outputs=["{}"], by_text=dict(quant)), quantization="Q4"),
        ],
    )


def run_ref_and_quant(
    dataset_dir: Path, right: Mapping[str, Any], quant: Mapping[str, Any], out: Path, *, decide: bool = False
) -> Path:
    """A run (without token fidelity) of `ref_and_quant(right, quant)` on the dataset at
    `dataset_dir`, under `out`; decided with `decide`."""
    from quantgate.decide._recommendation import decide as decide_run

    options = RunOptions(out=out, progress=False, token_fidelity=False)
    run_dir = run_evaluation(load_dataset(dataset_dir), ref_and_quant(right, quant), options=options)
    if decide:
        decide_run(run_dir)
    return run_dir


_TAIL_KEYS = ("kld_p999", "delta_p", "structural", "value")

TAIL_CASE_A = TokenFidelity(
    kld=(0.4, 0.02, 0.03, 0.0),
    top1=(False, True, True, True),
    delta_p=(-0.3, -0.1, 0.1, 0.0),
    kinds=("structural", "structural", "structural", "value"),
    tags=("lang:en",),
)
"""KLD sorted 0, 0.02, 0.03, 0.4: mean 0.1125, p99 at rank 2.97 0.03 + 0.97 * 0.37 = 0.3889; largest
drop -0.3; top-1 2 of 3 structural (66.7%), 1 of 1 value (100.0%)."""
TAIL_CASE_B = TokenFidelity(
    kld=(0.1, 0.0),
    top1=(True, False),
    delta_p=(0.0, -0.5),
    kinds=("structural", "value"),
    tags=("lang:en",),
)
"""KLD mean 0.05, p99 at rank 0.99: 0.099; largest drop -0.5; top-1 1 of 1 structural (100.0%),
0 of 1 value (0.0%, measured: not missing)."""


def with_token_fidelity(
    run_dir: Path,
    cases: Mapping[str, Sequence[TokenFidelity]],
    *,
    older_format: bool = False,
) -> Path:
    """`run_dir`'s summary.json with each named variant's token fidelity pooled from `cases`
    (`summarize_token_fidelity`), as a run measuring it writes it.

    `older_format`: written as a run of summary.json format 8 wrote it, before the tail: no Δp,
    no structural or value top-1, no KLD p99.9 (its KLD mean, p95, p99, max and top-1 stay).
    """
    summary = read_summary(run_dir)
    for entry in summary.variants:
        if entry.name in cases:
            pooled = summarize_token_fidelity(cases=cases[entry.name])
            entry.token_fidelity = TokenFidelityEntry.of(pooled, method="test", records="fidelity.jsonl")
    data = summary.model_dump(mode="json")
    if older_format:
        data["format_version"] = 8
        for entry_data in data["variants"]:
            fidelity = entry_data.get("token_fidelity") or {}
            for figures in [fidelity, *fidelity.get("slices", {}).values()]:
                for key in [k for k in figures if k.startswith(_TAIL_KEYS)]:
                    del figures[key]
    (run_dir / SUMMARY_FILE).write_text(json.dumps(data), encoding="utf-8")
    return run_dir
