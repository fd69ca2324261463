"""Records of two variants paired by case, as the paired statistics take them."""

from __future__ import annotations

from collections.abc import Mapping

from evaluators.comparison import PairedCase
from evaluators.latency import CaseLatency
from evaluators.paired_latency import LatencyAgainstReference, latency_against_reference
from quantgate.rundir._lines import CaseRecord


def paired_cases(reference: Mapping[str, CaseRecord], variant: Mapping[str, CaseRecord]) -> list[PairedCase]:
    """The labeled cases both sides have records for, in the reference's order."""
    return [
        PairedCase(
            case_id=case_id,
            tags=tuple(ref.tags),
            reference=ref.fields,
            variant=variant[case_id].fields,
            agreement=variant[case_id].agreement_fields,
        )
        for case_id, ref in reference.items()
        if case_id in variant and ref.fields
    ]


def _timed_here(records: Mapping[str, CaseRecord], sample: frozenset[str] | None) -> dict[str, CaseLatency]:
    """The latency of each case this run decoded in full, within the latency sample when there is one;
    a record copied from the reference cache (`cached_from`) brings another run's timings and is left out."""
    return {
        case_id: CaseLatency(
            ttft_s=r.ttft_s,
            total_s=r.total_s,
            input_tokens=r.input_tokens,
            output_tokens=r.output_tokens,
            prompt_tokens_per_s=r.prompt_tokens_per_s,
            generation_tokens_per_s=r.generation_tokens_per_s,
        )
        for case_id, r in records.items()
        if (sample is None or case_id in sample) and r.cached_from is None and r.obtained in (None, "decoded")
    }


def paired_latency(
    reference: Mapping[str, CaseRecord], variant: Mapping[str, CaseRecord], *, sample: frozenset[str] | None
) -> LatencyAgainstReference:
    """The variant's per-case latency against the reference's over the cases both decoded in full and
    timed in this run (`evaluators.paired_latency`), within `sample` (the run's latency sample; None:
    every case, as a run without verification decodes them all)."""
    return latency_against_reference(
        reference=_timed_here(reference, sample), variant=_timed_here(variant, sample)
    )
