"""The noise floor's KLD: the reference's logits along its own answers, one position at a time
against batched, after the run's variants (`quantgate.evaluate._noise_floor_arm` measured the rest).

The reference is opened as token fidelity opens it (an embedded model without slots, in a worker
process of its own) and reads, for each case of the noise-floor sample it answered validly at
the first attempt, the case's first-attempt prompt and its own answer twice: one position per
llama.cpp call, as decoding reads, and `DEFAULT_ROWS_PER_BATCH` positions per call, as
verification and token fidelity read. The KLD between the two is what batching alone moves the
reference's next-token distributions (F16 on Gemma 3 270M: about 1e-6 nats); it does not see
the slots' multi-sequence batches, whose effect the rerun's identical share and agreement show.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from evaluators.fidelity import TokenFidelitySummary, summarize_token_fidelity, token_fidelity
from quantgate.backends import BackendError, capabilities, open_variant
from quantgate.backends._extraction_context import case_context
from quantgate.backends.llamacpp._llamacpp import LlamaCppChatModel
from quantgate.backends.llamacpp._teacher_forcing import DEFAULT_ROWS_PER_BATCH, forced_logits
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.evaluate._session import RunSession
from quantgate.evaluate.scheduler._worker import run_isolated
from quantgate.evaluate.token_fidelity._measurement import case_prompt
from quantgate.evaluate.token_fidelity._run_step import reference_outputs
from quantgate.inputs._dataset import Dataset
from quantgate.inputs._variants import Variant
from quantgate.rundir._files import NOISE_FLOOR_FILE
from quantgate.rundir._jsonl import read_lines
from quantgate.rundir._lines import NoiseFloorLine
from quantgate.rundir._store import latest_records, read_records

__all__ = ["KLD_METHOD", "measure_noise_floor_kld"]

KLD_METHOD = (
    "teacher forcing with llama.cpp (no slots, as token fidelity): the reference reads its own first "
    "answers to the sample's cases valid at the first attempt one position per call (as decoding reads) "
    f"and {DEFAULT_ROWS_PER_BATCH} per call (as verification reads); per position KL(one at a time || "
    "batched) of the full next-token distributions (nats), pooled over positions"
)


@dataclass(frozen=True, kw_only=True)
class _KldJob:
    """What the worker needs (picklable): the reference, the dataset, each case's text and answer."""

    reference: Variant
    dataset: Dataset
    texts: dict[str, str]
    outputs: dict[str, str]
    max_repairs: int


def _measure(job: _KldJob) -> TokenFidelitySummary:
    options = RunOptions(max_repairs=job.max_repairs, progress=False)
    with open_variant(job.reference, job.dataset.schema) as opened:
        if not isinstance(opened.chat_model, LlamaCppChatModel):
            raise BackendError(f"reference {job.reference.name}: not an embedded llama.cpp model")
        context = extraction_context(job.dataset, opened, options)
        chat_model = opened.chat_model
        llama = chat_model.engine.llama
        cases = []
        for case_id, output in job.outputs.items():
            own = case_context(context, job.dataset, case_id)
            text = case_prompt(own, job.texts[case_id])
            prompt = chat_model.engine.prompt.tokens(llama, text)
            target = llama.tokenize(output.encode("utf-8"), add_bos=False)
            one_at_a_time = forced_logits(llama, prompt, target, rows_per_batch=1)
            batched = forced_logits(llama, prompt, target)
            cases.append(token_fidelity(reference_logits=one_at_a_time, variant_logits=batched))
    return summarize_token_fidelity(cases=cases)


def _missing(session: RunSession) -> str | None:
    reference = next(v for v in session.variants if v.name == session.reference)
    if capabilities(reference).token_fidelity != "logits":
        return f"not measured: the {reference.backend} backend exposes no logits"
    return None


def measure_noise_floor_kld(session: RunSession) -> None:
    """Add the KLD to the run's noise floor (or why it is missing); nothing when the noise floor was
    not measured, or its KLD already was (a resumed run)."""
    floor = session.summary.noise_floor
    if floor is None or floor.kld_positions is not None or floor.kld_missing is not None:
        return
    missing = _missing(session)
    started = time.perf_counter()
    measured: TokenFidelitySummary | None = None
    if missing is None:
        try:
            measured = _kld(session)
        except (BackendError, RuntimeError, ValueError) as exc:
            missing = f"not measured: {str(exc).splitlines()[0]}"
    elapsed = time.perf_counter() - started
    update: dict[str, object] = {"noise_floor_s": (floor.noise_floor_s or 0.0) + elapsed}
    if missing is not None or measured is None:
        update["kld_missing"] = missing
    elif measured.positions:
        kept = ("kld_mean", "kld_max", "top1_agreement")
        update |= {"kld_method": KLD_METHOD, "kld_positions": measured.positions}
        update |= {key: getattr(measured, key) for key in kept}
    else:
        update["kld_missing"] = (
            "not measured: no case of the sample was answered validly at the first attempt"
        )
    session.summary.noise_floor = floor.model_copy(update=update)


def _kld(session: RunSession) -> TokenFidelitySummary:
    """The reference's one-at-a-time against batched logits on the sample, in a worker process."""
    lines = _sample_lines(session)
    records = latest_records(read_records(session.store.directory)).get(session.reference, {})
    outputs = reference_outputs(records, cases=[line.case_id for line in lines])
    by_id = {case.id: case for case in session.cases}
    job = _KldJob(
        reference=next(v for v in session.variants if v.name == session.reference),
        dataset=session.dataset,
        texts={case_id: by_id[case_id].text for case_id in outputs},
        outputs=outputs,
        max_repairs=session.options.max_repairs,
    )
    return run_isolated(_measure, job, name="quantgate-noise-floor", what="the noise floor's KLD")


def _sample_lines(session: RunSession) -> list[NoiseFloorLine]:
    return list(read_lines(session.store.directory / NOISE_FLOOR_FILE, NoiseFloorLine, problems=[]))
