"""The reference's answers to the calibration cases, for the calibration text.

Before `quantgate ladder --calibrate` writes its calibration text, the F16 reference answers each
calibration case as a run's reference would: opened by its backend (the embedded llama.cpp model,
greedy, constrained by the task's grammar) with as many slots as a run gives it, prompted with the
dataset's few-shot examples, through the evaluation graph's `run_case` (the extraction graph a run
uses, with its repairs). What follows each prompt in the text is what the reference wrote at its
first model call, since that is the answer to the prompt the text holds (a repair answers another
prompt); a case whose answer stays invalid after the repairs keeps what it wrote anyway, and is
counted.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from graphs.evaluation import CaseOutcome, EvaluationContext, rounds_limit
from graphs.evaluation import graph as evaluation_graph
from quantgate.backends import BackendError, capabilities, open_variant
from quantgate.backends._extraction_context import case_input, variant_context
from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._variants import Variant
from quantgate.ladder._llama_tool_calls import CalibrationError

REFERENCE_NAME = "F16"


@dataclass(frozen=True, kw_only=True)
class ReferenceAnswers:
    """The reference's first answer by case id, and how many of the cases it answered validly."""

    texts: dict[str, str]
    valid: int


def reference_variant(reference: Path) -> Variant:
    """The ladder's F16 reference as the embedded backend opens it (a run's default reference)."""
    return Variant(name=REFERENCE_NAME, backend="llamacpp", model=str(reference), quantization="F16")


def answer_cases(
    prompted: Dataset, cases: Sequence[Case], reference: Variant, *, progress: bool = True
) -> ReferenceAnswers:
    """The reference's first answer to each case's prompt, as a run's reference writes it.

    Args:
        prompted: The dataset with its few-shot examples (`calibration_split`).
        cases: The calibration cases.
        reference: The reference variant (`reference_variant`).
        progress: Show a progress bar.

    Raises:
        CalibrationError: The reference cannot be opened, or a case ends in an error without an
            answer; the message names the variant and the case.
    """
    outcomes: dict[str, CaseOutcome] = {}
    lock = threading.Lock()
    slots = capabilities(reference).default_concurrency
    bar = tqdm(
        total=len(cases),
        desc=f"{reference.name} answering the calibration cases",
        unit="case",
        disable=not progress,
    )

    def on_record(outcome: CaseOutcome) -> None:
        with lock:
            outcomes[outcome.case_id] = outcome
            bar.update(1)

    try:
        with bar, open_variant(reference, prompted.schema, slots=slots) as opened:
            context = EvaluationContext(
                extraction=variant_context(prompted, opened), scorer=prompted.scorer(), on_record=on_record
            )
            evaluation_graph.invoke(
                {"cases": [case_input(case) for case in cases]},
                context=context,
                config={"max_concurrency": slots, "recursion_limit": rounds_limit(len(cases), None)},
            )
    except BackendError as exc:
        raise CalibrationError(
            f"the reference {reference.name} cannot answer the calibration cases: {exc}"
        ) from exc
    return ReferenceAnswers(
        texts={case.id: _first_answer(reference, outcomes[case.id]) for case in cases},
        valid=sum(outcome.extraction.valid for outcome in outcomes.values()),
    )


def _first_answer(reference: Variant, outcome: CaseOutcome) -> str:
    """What the reference wrote at the case's first model call."""
    attempts = outcome.extraction.attempts
    if not attempts or "text" not in attempts[0]:
        raise CalibrationError(
            f"the reference {reference.name} wrote no answer to calibration case {outcome.case_id}: "
            f"{outcome.extraction.error or 'no model call was made'}"
        )
    return attempts[0]["text"]
