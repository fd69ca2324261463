"""A variant kept warm: loaded once, warmed up, then given the cases of one round at a time.

A run in rounds (`quantgate.evaluate.scheduler._rounds`) keeps one `WarmVariant` per variant, where its
model lives (a worker process of its own, `quantgate.evaluate.scheduler._pool`): each round sends it
the round's cases, and it runs them through the evaluation graph, writing each case's record
as it finishes. What is not a case is measured apart and kept out of the case figures:

- `load_s`: opening the variant (reading the weights, or reaching the server);
- the cold first token: the time to the first token of a warm-up prompt (the run's prompt
  prefix with a placeholder text), which pays for reading the shared prefix once (and, for a
  server, for loading the model there). A server may unload a model while others run, so a
  variant whose model lives in a server is warmed up again before each later round, untimed.
  A warm-up that fails leaves the figure missing; it never fails the variant.

Its memory sampler runs while it loads, warms up and runs a round, and pauses between rounds
(an idle model neither grows nor should take CPU from the variant running), so its peak
covers every round.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from evaluators.machine_load import CpuReading
from evaluators.memory import MemorySummary, summarize_memory
from graphs.evaluation import CaseOutcome, EvaluationContext, rounds_limit
from graphs.evaluation import graph as evaluation_graph
from graphs.extraction import ExtractionContext, GivenAnswer
from quantgate.backends import VERIFY_KWARG, OpenedVariant, capabilities, open_variant
from quantgate.backends._extraction_context import case_input
from quantgate.evaluate._memory_sampler import RssSampler, rss_mb
from quantgate.evaluate._options import extraction_context, variant_concurrency
from quantgate.evaluate._signals import stop_asked
from quantgate.evaluate.scheduler._variant import VariantJob, memory_reading, rss_sampler
from quantgate.evaluate.scheduler._warm_up import first_token_s
from quantgate.rundir._build import variant_metadata
from quantgate.rundir._summary import VariantMetadata

__all__ = ["NodeReadings", "RoundRan", "WarmVariant", "Warmed", "WorkerEnd"]


@dataclass(frozen=True, kw_only=True)
class Warmed:
    """A variant as it became ready: what loading and warming up took, what serves it.

    Attributes:
        load_s: Seconds to open it.
        cold_first_token_s: Time to the first token of the warm-up prompt (None: no token came).
        metadata: Its line of variants.json (runtime, hardware).
        quantization: Its quantization, as declared or as its backend reported it.
        concurrency: Cases in flight at once.
    """

    load_s: float
    cold_first_token_s: float | None
    metadata: VariantMetadata
    quantization: str | None
    concurrency: int


@dataclass(frozen=True, kw_only=True)
class NodeReadings:
    """The CPU counters of the node a variant's round ran on, read there before and after it (a Ray
    actor's node: `quantgate.cluster._variant_actor`), and which node it is."""

    before: CpuReading
    after: CpuReading
    node_id: str
    host: str


@dataclass(frozen=True, kw_only=True)
class RoundRan:
    """One round of a variant: its cases' outcomes (as the graph keeps them) and its wall time.

    Attributes:
        node: The load of the node it ran on, read there (None: it ran on this machine, whose
            load the run reads itself).
    """

    outcomes: tuple[CaseOutcome, ...]
    wall_s: float | None
    node: NodeReadings | None = None


@dataclass(frozen=True, kw_only=True)
class WorkerEnd:
    """What a variant's life in a worker measured beyond its cases: its memory figures."""

    memory: MemorySummary


class WarmVariant:
    """One variant, opened and warmed up on entering; `run` evaluates a round's cases.

    Args:
        job: The variant's job (its cases are the run's, in run order).
        on_outcome: Called with each finished case (from the graph's worker threads).
    """

    def __init__(self, job: VariantJob, on_outcome: Callable[[CaseOutcome], None]) -> None:
        self.job = job
        self.on_outcome = on_outcome
        self._by_id = {case.id: case for case in job.cases}
        self._stack = ExitStack()
        self._opened: OpenedVariant | None = None
        self._sampler: RssSampler | None = None
        self._before_mb = 0.0
        self._concurrency = variant_concurrency(job.options, job.variant)
        self._rewarm = capabilities(job.variant).memory == "server"
        self._rounds_run = 0

    def __enter__(self) -> WarmVariant:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stack.close()

    def start(self) -> Warmed:
        """Open the variant (timed), start sampling its memory, and warm it up (timed)."""
        self._before_mb = rss_mb()
        started = time.perf_counter()
        opened = self._stack.enter_context(
            open_variant(self.job.variant, self.job.dataset.schema, slots=self._concurrency)
        )
        load_s = time.perf_counter() - started
        self._opened = opened
        self._sampler = self._stack.enter_context(rss_sampler(opened))
        cold = first_token_s(self._context())
        self._sampler.pause()  # sampled again while its rounds run
        variant = self.job.variant
        return Warmed(
            load_s=load_s,
            cold_first_token_s=cold,
            metadata=variant_metadata(variant, runtime=opened.runtime),
            quantization=variant.quantization or opened.quantization,
            concurrency=self._concurrency,
        )

    def _context(self) -> ExtractionContext:
        assert self._opened is not None, "start() first"
        context = extraction_context(self.job.dataset, self._opened, self.job.options)
        if capabilities(self.job.variant).verification:  # answers to verify come with a round's cases
            context.verify_kwarg = VERIFY_KWARG
        return context

    def run(
        self,
        case_ids: list[str],
        reference_records: Mapping[str, dict[str, Any] | None] | None,
        answers: Mapping[str, list[GivenAnswer | str | None]] | None = None,
        *,
        seconds_left: float | None = None,
        model_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> RoundRan:
        """Evaluate these cases (one round), each record handed to `on_outcome` as it finishes.

        Args:
            case_ids: The round's cases, in run order.
            reference_records: The reference's normalized records of these cases, for
                agreement; None when this variant is the reference.
            answers: The reference's answers to verify, per case and model call (cases without
                them decode; `quantgate.evaluate.scheduler._verification`).
            seconds_left: What is left of the run's budget: no case starts once that many
                seconds have passed from now (the cases in flight finish; the others leave no
                outcome). None: no budget.
            model_options: Keyword options of each case's model calls, by case id (the
                reference keeps its top log-probabilities for the candidates to compare with).
        """
        assert self._sampler is not None, "start() first"
        deadline = None if seconds_left is None else time.perf_counter() + seconds_left
        self._sampler.resume()
        try:
            return self._run(
                case_ids, reference_records, answers, deadline=deadline, model_options=model_options
            )
        finally:
            self._sampler.pause()

    def rerun(self, case_ids: list[str], first_records: Mapping[str, dict[str, Any] | None]) -> RoundRan:
        """Answer these cases again, one case at a time, scored against `first_records` (the
        noise floor's arm): the outcomes are returned whole and never handed to `on_outcome`."""
        assert self._sampler is not None, "start() first"
        self._sampler.resume()
        try:
            return self._run(case_ids, first_records, concurrency=1, record=False)
        finally:
            self._sampler.pause()

    def _run(
        self,
        case_ids: list[str],
        reference_records: Mapping[str, dict[str, Any] | None] | None,
        answers: Mapping[str, list[GivenAnswer | str | None]] | None = None,
        *,
        deadline: float | None = None,
        model_options: Mapping[str, Mapping[str, Any]] | None = None,
        concurrency: int | None = None,
        record: bool = True,
    ) -> RoundRan:
        if self._rewarm and self._rounds_run:  # a server may have unloaded it since the last round
            first_token_s(self._context())
        self._rounds_run += 1
        cases = [case_input(self._by_id[case_id]) for case_id in case_ids]
        started = time.perf_counter()
        last_end = started
        whole: list[CaseOutcome] = []

        def on_record(outcome: CaseOutcome) -> None:
            nonlocal last_end
            last_end = time.perf_counter()
            if record:
                self.on_outcome(outcome)
            else:
                whole.append(outcome)

        context = EvaluationContext(
            extraction=self._context(),
            scorer=self.job.dataset.scorer(),
            reference_records=reference_records,
            on_record=on_record,
            deadline=deadline,
            stop=stop_asked,
            answers=answers,
            model_options=model_options,
        )
        output = evaluation_graph.invoke(
            {"cases": cases, "round_size": None},
            context=context,
            config={
                "max_concurrency": concurrency or self._concurrency,
                "recursion_limit": rounds_limit(len(cases), None),
            },
        )
        outcomes: list[CaseOutcome] = output["outcomes"] if record else whole
        return RoundRan(outcomes=tuple(outcomes), wall_s=last_end - started if outcomes else None)

    def end(self) -> WorkerEnd:
        """Stop sampling and free the model; its memory figures over its whole life."""
        opened, sampler = self._opened, self._sampler
        assert opened is not None, "start() first"
        assert sampler is not None, "start() first"
        self._stack.close()
        reading = memory_reading(self.job.variant, opened, sampler, self._before_mb)
        return WorkerEnd(memory=summarize_memory(reading))
