"""How a run is configured, and what it builds from its options: the case selection and
the extraction graph's context for an opened variant (built, as production builds it, by
`quantgate.backends._extraction_context`, so that they prompt alike).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evaluators.betting import DEFAULT_TRUNCATION
from evaluators.errors import UsageError
from graphs.extraction import DEFAULT_MAX_REPAIRS, ExtractionContext
from quantgate.backends import OpenedVariant, capabilities
from quantgate.backends._extraction_context import variant_context
from quantgate.evaluate.scheduler._stopping_rule import DEFAULT_ROUND_SIZE
from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._examples import DEFAULT_EXAMPLES, interleaved
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant

ROUND_ORDER_SEED = 0
DEFAULT_TOKEN_FIDELITY_CASES = 5
"""Cases of a run whose token fidelity is measured: about 11 s each for a reference and 4 variants."""
DEFAULT_LATENCY_CASES = DEFAULT_ROUND_SIZE
"""Cases of a verifying run that every variant decodes in full, whose timings are its latency figures:
the run's first round."""
DEFAULT_NOISE_FLOOR_CASES = 4
"""Cases the command line's noise-floor arm reruns (the reference's, one at a time): 3 to 8 s each."""


@dataclass(kw_only=True)
class RunOptions:
    """How to run.

    Attributes:
        limit: Evaluate only this many cases, balanced across `lang:` tags in file order.
        concurrency: Cases in flight at once per variant; None: the backend's default
            (`BackendCapabilities.default_concurrency`: 4 slots for embedded variants, which
            decode that many sequences in one batch, 1 otherwise).
        max_repairs: Extra attempts after an invalid output.
        out: Directory under which `<run-id>/` is created.
        progress: Show progress bars.
        token_fidelity: Measure token-level KLD and top-1 agreement of embedded variants
            against the reference by teacher forcing, after all variants have run.
        examples: Labeled cases taken as few-shot examples (and left out of scoring) when
            the dataset has no examples.jsonl; 0 or None for a zero-shot prompt
            (`quantgate.inputs._examples.choose_examples`).
        sequential: Evaluate in rounds and stop each variant once its accuracy gates are
            settled (`quantgate.evaluate.scheduler._stopping_rule`); `limit` is then not used.
        gates: The gates a sequential run judges after each round (those `decide` uses).
        round_size: Cases per round of a sequential run.
        max_cases: At most this many cases in a sequential run (None: the whole dataset).
        budget_s: Seconds of case evaluation a sequential run may spend, all variants
            together (loads, warm-ups and token fidelity come on top); a round starts only
            when its expected time fits in what is left.
        truncation: The betting truncation of the confidence sequences and intervals
            (`evaluators.betting.DEFAULT_TRUNCATION`).
        reference_cache: Where the reference's answers are kept across runs
            (`quantgate.evaluate._cache`); None: no cache (the Python default; the command line
            uses `default_reference_cache()` unless `--no-cache`).
        token_fidelity_cases: Token fidelity is measured on the run's first this many cases
            (those the reference answered validly at the first attempt; it costs about as much
            per case as the evaluation itself); None: on all of them.
        run_name: The run directory's name under `out` (a suite names each task's run so);
            None: a fresh run id.
        verify: Candidates whose backend declares `verification` read the reference's answer to
            each prompt at prefill speed and keep it as far as they would have written it, decoding
            from the first position where they would not (`quantgate.evaluate.scheduler._verification`);
            False: every case of every variant is decoded (`--no-verify`).
        latency_cases: The run's first this many cases are decoded in full by every variant (the
            reference too, even when its cache has them), with `verify` or without: the latency
            figures of every variant come from them, the same cases for all. 0 (from Python only;
            the command line asks for at least 1): no case is timed, every latency figure is
            missing, and the reference's cache serves every case it holds.
        noise_floor_cases: The reference answers the first this many cases of the first round a
            second time, one case at a time, against its first answers (the runtime's own noise
            floor, `quantgate.evaluate._noise_floor_arm`); 0 switches it off (the Python default; the
            command line uses `DEFAULT_NOISE_FLOOR_CASES`).
    """

    limit: int | None = None
    concurrency: int | None = None
    max_repairs: int = DEFAULT_MAX_REPAIRS
    out: Path = field(default_factory=lambda: Path("runs"))
    progress: bool = True
    token_fidelity: bool = True
    examples: int | None = DEFAULT_EXAMPLES
    sequential: bool = False
    gates: Gates = field(default_factory=Gates)
    round_size: int = DEFAULT_ROUND_SIZE
    max_cases: int | None = None
    budget_s: float | None = None
    truncation: float = DEFAULT_TRUNCATION
    reference_cache: Path | None = None
    token_fidelity_cases: int | None = DEFAULT_TOKEN_FIDELITY_CASES
    run_name: str | None = None
    verify: bool = True
    latency_cases: int = DEFAULT_LATENCY_CASES
    noise_floor_cases: int = 0

    def __post_init__(self) -> None:
        """Refuse the counts the command line refuses, naming the option (as its flag)."""
        for name in ("limit", "max_cases", "token_fidelity_cases", "concurrency"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"{name.replace('_', '-')} must be at least 1, got {value}")
        for name in ("latency_cases", "noise_floor_cases", "max_repairs", "examples"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise UsageError(f"{name.replace('_', '-')} must be 0 or more, got {value}")
        if self.round_size < 1:
            raise UsageError(f"round size must be at least 1, got {self.round_size}")
        if self.budget_s is not None and self.budget_s <= 0:
            raise UsageError(f"the budget must be positive, got {self.budget_s / 60:g} minutes")


def variant_concurrency(options: RunOptions, variant: Variant) -> int:
    """Cases in flight for `variant`: the run's `concurrency`, else its backend's default."""
    return options.concurrency or capabilities(variant).default_concurrency


def run_cases(cases: Sequence[Case], options: RunOptions) -> list[Case]:
    """The cases a run evaluates, in the order it evaluates them.

    Sequential: all (or `max_cases`), languages and tag groups taking turns, so every round is
    spread across them, in a shuffled order within each group (`ROUND_ORDER_SEED`, so the same
    dataset gives the same order). Otherwise `select_cases` with the limit, in file order.
    """
    if options.sequential:
        return interleaved(cases, seed=ROUND_ORDER_SEED)[: options.max_cases]
    return select_cases(cases, options.limit)


def select_cases(cases: Sequence[Case], limit: int | None) -> list[Case]:
    """The first `limit` cases, taken in turn from each language so both are represented."""
    if limit is None or limit >= len(cases):
        return list(cases)
    groups: dict[str | None, list[Case]] = defaultdict(list)
    for case in cases:
        groups[case.lang].append(case)
    interleaved = (c for batch in itertools.zip_longest(*groups.values()) for c in batch if c is not None)
    chosen = {id(c) for c in itertools.islice(interleaved, limit)}
    return [c for c in cases if id(c) in chosen]


def extraction_context(dataset: Dataset, opened: OpenedVariant, options: RunOptions) -> ExtractionContext:
    """The extraction graph's context for a dataset and an opened variant, with the run's repairs."""
    return variant_context(dataset, opened, max_repairs=options.max_repairs)
