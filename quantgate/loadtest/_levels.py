"""`quantgate load`: the dataset's real prompts sent at several concurrency levels per variant.

A level is closed (below) or, with `--arrivals poisson`, open-loop: requests arriving as a
Poisson process at a rate, at most a bound in flight (`quantgate.loadtest._arrivals`).

Each level runs `concurrency` threads that take the cases' prompts round-robin and stream
them through the variant's chat model, with no retry (a retry would hide the error), until
`requests` have been sent or `duration_s` has passed, whichever comes first; requests in
flight at the deadline finish. Every request is appended to `RUN_DIR/load.jsonl` as it ends
and the figures per variant and level go into the `load` section of summary.json.

How a level of k is served is the backend's `BackendCapabilities.parallel`. The embedded
backend (`"slots"`) opens one model copy with as many slots as the largest level: k
requests are decoded as k sequences of one batch, the analogue of Ollama's `NUM_PARALLEL`,
and its memory is one copy plus one KV cache that the slots share. A backend with
`"instances"` opens k copies of the model, each with its own weights and KV cache, within
a memory bound. A server backend (Ollama, `"server"`) gets one client shared by the
threads, and the server's own parallelism decides what happens; any other backend
(`"none"`) shares its one opened object.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, closing, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

from evaluators.errors import UsageError
from evaluators.loadtest import LoadRequest, summarize_load
from graphs.extraction import ExtractionContext
from graphs.long_inputs import prompt_messages
from quantgate.backends import OpenedVariant, capabilities, open_variant
from quantgate.backends._extraction_context import case_context
from quantgate.evaluate._memory_sampler import RssSampler, rss_mb
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.evaluate.scheduler._warm_up import first_token_s
from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._examples import DEFAULT_EXAMPLES
from quantgate.inputs._variants import Variant
from quantgate.loadtest._arrivals import (
    DEFAULT_SEED,
    poisson_schedule,
    send_arrivals,
)
from quantgate.loadtest._bounds import load_problems
from quantgate.loadtest._level_specs import DEFAULT_LEVELS, LoadLevel, parse_levels
from quantgate.loadtest._one_request import CaseCheck, CaseModel, Prompt, stream_request
from quantgate.rundir._lines import LoadLine
from quantgate.rundir._loadtest_section import Arrivals, LoadLevelEntry, LoadVariantEntry
from quantgate.rundir._store import JsonLines

DEFAULT_REQUESTS = 8


@dataclass(frozen=True, kw_only=True)
class LoadOptions:
    """How much load to send.

    Attributes:
        levels: The concurrency levels, run in order.
        requests: Requests per level; with `duration_s`, whichever ends first. When neither
            is given, `DEFAULT_REQUESTS`.
        duration_s: Seconds per level after which no new request starts.
        max_tokens: Overrides the variants' generation limit, when set.
        memory_fraction: Embedded instances are capped so their weights fit in this share
            of the memory available when the first one is loaded.
        cases: Cases whose prompts are sent (None: all of the dataset's).
        examples: Few-shot examples taken from the cases when the dataset has none, as
            `quantgate run` takes them (`quantgate.inputs._examples.choose_examples`).
        seed: Seed of the Poisson levels' arrival times (every level uses it).
        ttft_target_s, itl_target_s: Goodput's targets: time to first token and mean gap
            between tokens (None: not constrained; goodput needs at least one).
    """

    levels: tuple[LoadLevel, ...] = field(default_factory=lambda: parse_levels(DEFAULT_LEVELS))
    requests: int | None = None
    duration_s: float | None = None
    max_tokens: int | None = None
    memory_fraction: float = 0.8
    cases: int | None = 10
    examples: int | None = DEFAULT_EXAMPLES
    seed: int = DEFAULT_SEED
    ttft_target_s: float | None = None
    itl_target_s: float | None = None

    @property
    def arrivals(self) -> Arrivals:
        """`poisson` when the levels are Poisson levels (they are all of one kind), else `closed`."""
        return "poisson" if any(level.rate_per_s is not None for level in self.levels) else "closed"

    def __post_init__(self) -> None:
        if self.requests is None and self.duration_s is None:
            object.__setattr__(self, "requests", DEFAULT_REQUESTS)
        problems = load_problems(
            requests=self.requests,
            duration_s=self.duration_s,
            max_tokens=self.max_tokens,
            fastest_rate=max((level.rate_per_s or 0.0 for level in self.levels), default=None),
            targets_s={"--ttft-target-ms": self.ttft_target_s, "--itl-target-ms": self.itl_target_s},
        )
        if problems:
            raise UsageError(f"load: {'; '.join(problems)}")


def send_requests(
    models: Sequence[CaseModel],
    prompts: Sequence[Prompt],
    *,
    level: LoadLevel,
    check: CaseCheck,
    requests: int | None,
    duration_s: float | None,
    on_request: Callable[[LoadRequest], None] | None = None,
) -> tuple[list[LoadRequest], float]:
    """Send prompts round-robin from `level.concurrency` threads until the bound is reached.

    Args:
        models: Each model copy's chat model per case; slot i uses `models[i % len(models)]`.
        prompts: (case id, messages) pairs, sent in turn.
        level: The level (its name is recorded on each request).
        check: Whether an answer's text is a valid output for its case.
        requests: Stop after this many requests in all.
        duration_s: Start no request after this many seconds.
        on_request: Called with each request as it ends (from the sending thread).

    Returns:
        The requests in the order they ended, and the wall time of the level.
    """
    if requests is None and duration_s is None:
        raise ValueError("a load level needs a request count or a duration")
    lock = threading.Lock()
    issued = 0
    done: list[LoadRequest] = []
    t0 = time.perf_counter()
    deadline = t0 + duration_s if duration_s is not None else None

    def next_index() -> int | None:
        nonlocal issued
        with lock:
            if (requests is not None and issued >= requests) or (
                deadline is not None and time.perf_counter() >= deadline
            ):
                return None
            issued += 1
            return issued - 1

    def work(slot: int) -> None:
        model = models[slot % len(models)]
        while (index := next_index()) is not None:
            request = stream_request(
                model, prompts[index % len(prompts)], check, level=level.name, slot=slot, t0=t0
            )
            with lock:
                done.append(request)
            if on_request is not None:
                on_request(request)

    threads = [threading.Thread(target=work, args=(i,), name=f"load-{i}") for i in range(level.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done, time.perf_counter() - t0


@dataclass(frozen=True, kw_only=True)
class LoadJob:
    """One variant's load test; picklable, so it can run in a worker process."""

    variant: Variant
    dataset: Dataset
    cases: tuple[Case, ...]
    options: LoadOptions
    records_path: Path


def _allowed_instances(job: LoadJob, count: int, per_instance: float) -> tuple[int, str | None]:
    """How many copies of `per_instance` MiB fit the memory bound (at least one), and why capped."""
    room = psutil.virtual_memory().available * job.options.memory_fraction / 2**20
    allowed = 1 + int(room // per_instance)
    if allowed >= count:
        return count, None
    capped = (
        f"{count} instances of about {per_instance:.0f} MiB would exceed "
        f"{job.options.memory_fraction:.0%} of the available memory; opened {allowed}"
    )
    print(f"quantgate load: {job.variant.name}: {capped}", file=sys.stderr)
    return allowed, capped


@contextmanager
def _instances(job: LoadJob, count: int) -> Iterator[tuple[list[OpenedVariant], dict[str, Any]]]:
    """Open the model once with `count` slots (`parallel="slots"`), up to `count` times
    (`"instances"`, within memory), else once."""
    schema = job.dataset.schema
    parallel = capabilities(job.variant).parallel
    with ExitStack() as stack:
        before = rss_mb()
        opened = [stack.enter_context(open_variant(job.variant, schema, slots=count))]
        cost: dict[str, Any] = {
            "instances_wanted": count if parallel != "slots" else 1,
            "capped": None,
            "instance_model_mb": None,
            "slots": count if parallel == "slots" else None,
        }
        if parallel == "instances":
            per_instance = max(rss_mb() - before, 1.0)
            allowed, cost["capped"] = _allowed_instances(job, count, per_instance)
            opened += [stack.enter_context(open_variant(job.variant, schema)) for _ in range(allowed - 1)]
            cost["instance_model_mb"] = per_instance
        cost["instances"] = len(opened)
        cost["rss_after_open_mb"] = rss_mb() if opened[0].memory_pid is None else None
        yield opened, cost


def _case_contexts(job: LoadJob, opened: OpenedVariant) -> dict[str, ExtractionContext]:
    """Each case's extraction context on a model copy, as the evaluation builds it: the dataset's, or,
    when cases bring their own tools, that of the case's tool set (its prompt, record schema and the
    model constrained to it, one per tool set: `case_context`)."""
    context = extraction_context(job.dataset, opened, RunOptions(progress=False))
    return {case.id: case_context(context, job.dataset, case.id) for case in job.cases}


def _prompts(job: LoadJob, contexts: Mapping[str, ExtractionContext]) -> list[Prompt]:
    """Each case's first-attempt messages, built as the evaluation builds them."""
    return [(case.id, prompt_messages(contexts[case.id], case.text)[0]) for case in job.cases]


def _case_models(contexts: Mapping[str, ExtractionContext]) -> CaseModel:
    """A model copy's chat model per case (its context's: constrained to its record schema)."""
    models = {case_id: context.model for case_id, context in contexts.items()}
    return models.__getitem__


def _warm_up(job: LoadJob, opened: OpenedVariant) -> float | None:
    """The warm-up prompt's first token (`quantgate.evaluate.scheduler._warm_up`), sent to a model copy before
    the first level and not recorded as a request: a fresh process's first decode is not latency.
    Its answer is read to the end, so that the first level meets a server at rest."""
    context = extraction_context(job.dataset, opened, RunOptions(progress=False))
    return first_token_s(context, to_the_end=True)


def _memory_process(variant: Variant, opened: OpenedVariant) -> str | None:
    """What holds the model: this process, a local server's process tree, or None (remote)."""
    if opened.memory_pid is not None:
        return f"server pid {opened.memory_pid} and children"
    return None if capabilities(variant).memory == "server" else "quantgate"


def _sampler(opened: OpenedVariant, process: str | None) -> AbstractContextManager[RssSampler | None]:
    if process is None:
        return nullcontext()
    if opened.memory_pid is None:
        return RssSampler()
    return RssSampler(pid=opened.memory_pid, include_children=True)


def _send_level(
    models: Sequence[CaseModel],
    prompts: Sequence[Prompt],
    *,
    level: LoadLevel,
    options: LoadOptions,
    check: CaseCheck,
    on_request: Callable[[LoadRequest], None],
) -> tuple[list[LoadRequest], float]:
    """One level's requests: closed threads, or Poisson arrivals from the options' seed."""
    if level.rate_per_s is None:
        return send_requests(
            models, prompts, level=level, check=check, requests=options.requests,
            duration_s=options.duration_s, on_request=on_request,
        )  # fmt: skip
    schedule = poisson_schedule(
        level.rate_per_s, seed=options.seed, requests=options.requests, duration_s=options.duration_s
    )
    return send_arrivals(
        models, prompts, level=level.name, schedule=schedule, check=check,
        in_flight=level.concurrency, on_request=on_request,
    )  # fmt: skip


def load_variant(job: LoadJob) -> LoadVariantEntry:
    """Run every level of the load against one variant; append its requests to `records_path`.

    Returns:
        The variant's entry of the summary's `load` section.
    """
    options = job.options
    largest = max(level.concurrency for level in options.levels)
    variant = job.variant
    if options.max_tokens is not None:
        variant = variant.model_copy(
            update={"options": {**variant.options, "max_tokens": options.max_tokens}}
        )
        job = replace(job, variant=variant)
    sink = JsonLines(job.records_path)
    levels: list[LoadLevelEntry] = []
    with _instances(job, largest) as (opened, cost), closing(sink):
        contexts = [_case_contexts(job, o) for o in opened]
        prompts = _prompts(job, contexts[0])
        warm_ups = [_warm_up(job, o) for o in opened]
        process = _memory_process(variant, opened[0])
        models = [_case_models(own) for own in contexts]
        for level in options.levels:
            shared = models[: level.concurrency]
            with _sampler(opened[0], process) as sampler:
                requests, wall = _send_level(
                    shared,
                    prompts,
                    level=level,
                    options=options,
                    check=lambda case_id, raw: contexts[0][case_id].format(outputs=raw).valid,
                    on_request=lambda r: sink.append(LoadLine.extending(r, variant=variant.name)),
                )
            stats = summarize_load(
                requests=requests,
                wall_s=wall,
                ttft_target_s=options.ttft_target_s,
                itl_target_s=options.itl_target_s,
                poisson=level.rate_per_s is not None,
            )
            levels.append(
                LoadLevelEntry.extending(
                    stats, name=level.name, concurrency=level.concurrency, instances=len(shared),
                    rss_peak_mb=sampler.peak_mb if sampler else None, arrivals=level.arrivals,
                    rate_per_s=level.rate_per_s,
                    seed=options.seed if level.rate_per_s is not None else None,
                )
            )  # fmt: skip
    first = opened[0]
    return LoadVariantEntry(
        name=variant.name,
        backend=variant.backend,
        status="ok",
        **cost,
        memory_process=process,
        num_parallel=first.runtime.get("num_parallel"),
        runtime=first.runtime,
        warm_up_first_token_s=warm_ups[0],
        levels=levels,
    )


def failed_entry(variant: Variant, error: Exception | str) -> LoadVariantEntry:
    """The `load` entry of a variant that could not be opened."""
    return LoadVariantEntry(name=variant.name, backend=variant.backend, status="skipped", error=str(error))
