"""Runtimes compared: the same model file on two backends, judged like a quantization.

Variants whose model files have the same sha256 (variants.json's `sha256`: given in the variants
file, written by `quantgate ladder`, or recorded by a backend from the file it serves) and whose
backends differ form a group (`quantgate.backends._runtime_pairs`). Its base is the embedded variant
when there is one (of a backend quantgate runs in its own process on the model file: llama.cpp; the
runtime quantgate controls end to end), else the run's reference, else the variant listed first in
the run; each other member on another backend is compared with the base:

- agreement: its records scored against the base's records field by field, with the scorer the
  run's agreement with the reference uses (`CaseScorer.fields`), summarized with its betting
  interval (`summarize_agreement`); beside it, the cases whose normalized records are equal;
- accuracy: the paired delta, variant minus base, on the labeled cases both have, with the
  interval the accuracy gate judges (`compare_paired`), which the gate `max_runtime_accuracy_drop`
  judges like `max_accuracy_drop`;
- token fidelity: the pair's own, measured by the run against an embedded base
  (`runtime_token_fidelity`: the base's full logits cut to top-k against the server's top-k, along
  the base's outputs, `quantgate.evaluate.token_fidelity._pair_fidelity`); else the variant's own
  against the reference when the base is the reference; else not measured, and said why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluators.case import CaseScorer, case_language
from evaluators.comparison import AgreementSummary, ComparisonOptions, compare_paired, summarize_agreement
from quantgate.backends._runtime_pairs import same_file_pairs
from quantgate.inputs._dataset import Dataset
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._pairing import paired_cases
from quantgate.rundir._runtime_comparison import RuntimeComparison
from quantgate.rundir._store import Run
from quantgate.rundir._summary import TokenFidelityEntry, VariantEntry


def _agreement(
    base: Sequence[CaseRecord], own: Mapping[str, CaseRecord], scorer: CaseScorer, options: ComparisonOptions
) -> AgreementSummary | None:
    """The variant's records scored against the base's, over the cases where the base gave a record."""
    per_case = []
    for gold in base:
        if not gold.valid or gold.record is None or gold.case_id not in own:
            continue
        record = own[gold.case_id]
        scored = scorer.for_case(gold.case_id).fields(  # a case's own tools, when it brings them
            outputs=record.record if record.valid else None,
            reference_outputs=gold.record,
            lang=case_language(gold.tags),
        )
        per_case.append({name: f.score for name, f in scored.fields.items()})
    return summarize_agreement(per_case, options=options) if per_case else None


def _identical(base: Sequence[CaseRecord], own: Mapping[str, CaseRecord]) -> int:
    """Cases both answered with a valid record, the same one."""
    return sum(
        b.valid
        and b.record is not None
        and b.case_id in own
        and own[b.case_id].valid
        and own[b.case_id].record == b.record
        for b in base
    )


def _token_fidelity(
    entry: VariantEntry | None, base: str, reference: str
) -> tuple[TokenFidelityEntry | None, str | None]:
    """The variant's token fidelity against the base, or why it is not measured: the pair's own
    measurement (`runtime_token_fidelity`, against an embedded base) when it was made against this
    base, else the variant's own against the reference when the base is the reference."""
    if entry is not None and entry.runtime_token_fidelity_base == base and entry.runtime_token_fidelity:
        return entry.runtime_token_fidelity, None
    if entry is not None and base == reference and entry.token_fidelity is not None:
        return entry.token_fidelity, None
    pair_missing = (
        entry.runtime_token_fidelity_missing if entry and entry.runtime_token_fidelity_base == base else None
    )
    if pair_missing:
        return None, pair_missing
    if base != reference:
        return (
            None,
            f"not measured: token fidelity is measured against the run's reference, and {base} is not it",
        )
    why = (entry.token_fidelity_missing if entry else None) or "not measured"
    return None, why if why.startswith("not measured") else f"not measured: {why}"


def runtime_comparisons(
    run: Run,
    records: Mapping[str, Mapping[str, CaseRecord]],
    options: ComparisonOptions,
    case_order: Mapping[str, int],
    dataset: Dataset | None,
) -> list[RuntimeComparison]:
    """Every same-file pair of the run compared (see the module's docstring).

    Args:
        run: The run.
        records: Its latest records, variant -> case -> record.
        options: How the paired deltas and agreements are judged (the gates' options).
        case_order: The run's case order (an interval depends on it).
        dataset: The run's cases (None: gone; then agreement is not measured).
    """
    reference = run.summary.reference or ""
    metadata = run.variants.by_name()
    entries = {e.name: e for e in run.summary.variants if e.status == "ok"}
    listed = [(name, metadata[name].backend, metadata[name].sha256) for name in entries if name in metadata]
    pairs = same_file_pairs(listed, reference)
    if not pairs:
        return []
    scorer = dataset.scorer() if dataset else None
    found = []
    for base, name, why in pairs:
        last = len(case_order)
        base_records = sorted(records.get(base, {}).values(), key=lambda r: case_order.get(r.case_id, last))
        own = records.get(name, {})
        paired = paired_cases({r.case_id: r for r in base_records}, own)
        fidelity, fidelity_missing = _token_fidelity(entries.get(name), base, reference)
        found.append(
            RuntimeComparison(
                base=base,
                variant=name,
                base_backend=metadata[base].backend,
                variant_backend=metadata[name].backend,
                sha256=metadata[name].sha256 or "",
                base_is=why,
                cases=sum(r.case_id in own for r in base_records),
                identical=_identical(base_records, own) if own else None,
                agreement=_agreement(base_records, own, scorer, options) if scorer else None,
                accuracy=compare_paired(paired, options=options).overall if paired else None,
                token_fidelity=fidelity,
                token_fidelity_missing=fidelity_missing,
            )
        )
    return found


def runtime_evidence(
    comparisons: Sequence[RuntimeComparison], name: str
) -> tuple[RuntimeComparison | None, bool]:
    """A variant's runtime comparison (None: it is no pair's compared variant), and whether it is a
    pair's base."""
    own = next((c for c in comparisons if c.variant == name), None)
    return own, any(c.base == name for c in comparisons)
