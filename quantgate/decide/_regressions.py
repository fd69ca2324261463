"""Regression cases exported as a dataset: the reference right, the variant wrong.

The exported directory is a standard dataset (schema.json, cases.jsonl, examples.jsonl,
README.md), so it can be checked with `quantgate datasets check` and run as a regression
set after the next model or runtime upgrade.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from evaluators.comparison import Regression
from quantgate.inputs._dataset import Dataset, write_dataset
from quantgate.render._markdown import escape_markdown
from quantgate.rundir._decision import RegressionSet
from quantgate.rundir._files import REGRESSIONS_DIR
from quantgate.rundir._store import Run


def _card(*, dataset: Dataset, run_id: str, reference: str, variant: str, found: Sequence[Regression]) -> str:
    text = escape_markdown
    reference_name, variant_name = text(reference), text(variant)
    lines = [
        f"# Regression cases of {variant_name} against {reference_name}",
        "",
        f"Written by `quantgate decide` from run {text(run_id)} on the dataset {text(dataset.name)}: the "
        f"{len(found)} case(s) where the reference ({reference_name}) got at least one field right "
        f"and {variant_name} did not. Texts, gold records and tags are copied unchanged from that "
        "dataset, and so is its license (below).",
        "",
        "| case | fields lost | reference score | variant score |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {text(r.case_id)} | {', '.join(map(text, r.fields))} | {r.reference_score:.2f} | "
        f"{r.variant_score:.2f} |"
        for r in found
    ]
    lines += ["", "---", "", dataset.card or "(the source dataset has no card)"]
    return "\n".join(lines) + "\n"


def export_regressions(
    *,
    out: Path,
    dataset: Dataset,
    found: Sequence[Regression],
    run_id: str,
    reference: str,
    variant: str,
) -> Path:
    """Write the regression cases of one variant as a dataset directory.

    Args:
        out: The directory to write (replaced if it exists).
        dataset: The run's dataset, with the cases' texts and gold records.
        found: The variant's regressions.
        run_id: The run they come from.
        reference: The reference variant's name.
        variant: The variant's name.

    Raises:
        KeyError: A regression names a case the dataset does not have.
    """
    by_id = {case.id: case for case in dataset.cases}
    missing = [r.case_id for r in found if r.case_id not in by_id]
    if missing:
        raise KeyError(f"cases {', '.join(missing)} are not in the dataset at {dataset.path}")
    cases = [by_id[r.case_id] for r in found]
    card = _card(dataset=dataset, run_id=run_id, reference=reference, variant=variant, found=found)
    return write_dataset(
        out, schema=dataset.schema, cases=cases, examples=dataset.examples, card=card, task=dataset.task
    )


def export_regression_sets(
    run: Run, dataset: Dataset | None, found_by_variant: Mapping[str, list[Regression]], reference: str
) -> dict[str, RegressionSet]:
    """Each quantized variant's regression cases exported under the run's regressions directory
    (none written when the run's cases are not available: the set says so)."""
    exported: dict[str, RegressionSet] = {}
    for name, found in found_by_variant.items():
        if name == reference or not found:
            continue
        if dataset is None:
            exported[name] = RegressionSet(
                path=None, cases=len(found), error="the run's cases are not available"
            )
            continue
        out = run.directory / REGRESSIONS_DIR / name
        export_regressions(
            out=out,
            dataset=dataset,
            found=found,
            run_id=run.directory.name,
            reference=reference,
            variant=name,
        )
        exported[name] = RegressionSet(path=str(out.relative_to(run.directory)), cases=len(found))
    return exported
