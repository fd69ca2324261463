"""Few-shot examples for a run: the dataset's `examples.jsonl`, else some of its own labeled cases.

Most users bring a `cases.jsonl` and a `schema.json`, and no examples. A base model prompted
zero-shot then tends to echo the schema's field descriptions (`"food": "Kind of food"`), which
scores exactly the share of null gold fields and looks like a result. So when a dataset has gold
but no examples, `choose_examples` takes `k` labeled cases as few-shot examples, spread across
languages and tags, and leaves them out of scoring. `ExamplesInfo` (the summary's `examples` key)
records where the examples came from and their ids.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from quantgate.inputs._dataset import Case, Dataset

DEFAULT_EXAMPLES = 3
"""Labeled cases taken as examples from a dataset without `examples.jsonl`."""

ExamplesSource = Literal["dataset", "cases", "none"]


@dataclass(frozen=True, kw_only=True)
class ChosenExamples:
    """A dataset ready for a run, and where its few-shot examples came from.

    Attributes:
        dataset: The dataset to evaluate: with `source` "cases", its `examples` are the chosen
            cases and its `cases` no longer hold them.
        source: "dataset" (examples.jsonl), "cases" (taken from the labeled cases) or "none".
        ids: The examples' ids.
        message: What was done, for the user (None when examples.jsonl was used as is).
        warning: Why the prompt is zero-shot, when it is (None otherwise).
    """

    dataset: Dataset
    source: ExamplesSource
    ids: tuple[str, ...]
    message: str | None = None
    warning: str | None = None


def interleaved(cases: Sequence[Case], *, seed: int | None = None) -> list[Case]:
    """All cases, languages taking turns and, within a language, its tag groups taking turns:
    any prefix is spread across languages and tags.

    Within a group the order is the file's, or with `seed` a seeded shuffle of it (a sequential
    run's rounds should not follow whatever order the file was written in).
    """
    groups: dict[tuple[str | None, tuple[str, ...]], list[Case]] = defaultdict(list)
    for case in cases:
        groups[(case.lang, tuple(sorted(case.tags)))].append(case)
    if seed is not None:
        rng = random.Random(seed)
        for members in groups.values():
            rng.shuffle(members)
    by_lang: dict[str | None, list[list[Case]]] = defaultdict(list)
    for (lang, _), members in groups.items():
        by_lang[lang].append(members)
    per_lang = [
        [c for batch in itertools.zip_longest(*lists) for c in batch if c is not None]
        for lists in by_lang.values()
    ]
    return [c for batch in itertools.zip_longest(*per_lang) for c in batch if c is not None]


def spread(cases: Sequence[Case], k: int) -> list[Case]:
    """`k` cases spread across languages and tags (`interleaved`), in file order."""
    chosen = {c.id for c in interleaved(cases)[:k]}
    return [c for c in cases if c.id in chosen]


_ZERO_SHOT = (
    "the prompt is zero-shot (no few-shot examples): a base model such as the embedded Gemma 3 270M "
    "then tends to echo the schema's field descriptions instead of extracting; "
)


def choose_examples(dataset: Dataset, k: int | None = DEFAULT_EXAMPLES) -> ChosenExamples:
    """The dataset's few-shot examples for a run.

    Args:
        dataset: The loaded dataset.
        k: How many labeled cases to take as examples when the dataset has no examples.jsonl;
            None or 0 for a zero-shot prompt (also ignoring examples.jsonl).

    Returns:
        The dataset to run (cases taken as examples are removed from its cases) and the record.
    """
    if not k:
        stripped = dataclasses.replace(dataset, examples=())
        why = "--examples none was given" if dataset.examples else "examples are turned off"
        return ChosenExamples(dataset=stripped, source="none", ids=(), warning=_ZERO_SHOT + why)
    if dataset.examples:
        return ChosenExamples(dataset=dataset, source="dataset", ids=tuple(e.id for e in dataset.examples))
    labeled = [c for c in dataset.cases if c.expected is not None]
    if not labeled:
        why = f"{dataset.name} has no examples.jsonl and no labeled case to take examples from"
        return ChosenExamples(dataset=dataset, source="none", ids=(), warning=_ZERO_SHOT + why)
    if len(labeled) <= k:
        why = f"{dataset.name} has only {len(labeled)} labeled case(s), too few to give {k} as examples"
        return ChosenExamples(dataset=dataset, source="none", ids=(), warning=_ZERO_SHOT + why)
    chosen = spread(labeled, k)
    ids = tuple(c.id for c in chosen)
    rest = tuple(c for c in dataset.cases if c.id not in set(ids))
    message = (
        f"{dataset.name} has no examples.jsonl: {len(ids)} of its labeled cases are the few-shot "
        f"examples and are left out of scoring: {', '.join(ids)} (--examples N|none to change)"
    )
    return ChosenExamples(
        dataset=dataclasses.replace(dataset, cases=rest, examples=tuple(chosen)),
        source="cases",
        ids=ids,
        message=message,
    )
