"""A backend of its own takes part in token fidelity by declaring its forcing
(`BackendCapabilities.logprobs_forcing`), as the built-ins do: no backend name is looked up."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from quantgate.backends import BackendCapabilities, OpenedVariant
from quantgate.backends._forcing import ForcedPositions, LogprobsForcing
from quantgate.evaluate._evaluation_run import run_evaluation
from quantgate.evaluate._options import RunOptions
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run
from tests.fakes import GOOD, QueuedChatModel, write_tiny_dataset

ANSWER = json.dumps(GOOD)


class _ToyForcing:
    """The toy server: the reference is sure of each character of its answer, the candidate less so."""

    top_logprobs = 2

    def __init__(self, variant: Variant) -> None:
        self.sure = float(variant.options["sure"])

    def _positions(self, tokens: Sequence[str]) -> ForcedPositions:
        top = tuple({token: math.log(self.sure), "~": math.log(1 - self.sure)} for token in tokens)
        return ForcedPositions(tokens=tuple(tokens), top=top, requests=1)

    def follow_text(self, messages: Sequence[BaseMessage], target: str) -> ForcedPositions:
        return self._positions(list(target))

    def follow_tokens(self, messages: Sequence[BaseMessage], tokens: Sequence[str]) -> ForcedPositions:
        return self._positions(tokens)


TOY_FORCING = LogprobsForcing(make=_ToyForcing, method="the toy's top-{k} lists")


@contextmanager
def _open_toy(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    yield OpenedVariant(chat_model=QueuedChatModel(outputs=[ANSWER]))


def test_a_toy_backend_declaring_its_forcing_gets_token_fidelity(register_backend, tmp_path: Path):
    register_backend(
        "toy",
        _open_toy,
        capabilities=BackendCapabilities(token_fidelity="logprobs", logprobs_forcing=TOY_FORCING),
    )
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant(name="ref", backend="toy", options={"sure": 0.9}),
            Variant(name="cand", backend="toy", options={"sure": 0.6}),
        ],
    )
    dataset = load_dataset(write_tiny_dataset(tmp_path / "d"))
    options = RunOptions(out=tmp_path / "runs", progress=False, limit=1)
    run = load_run(run_evaluation(dataset, variants, options=options))
    entry = {e.name: e for e in run.summary.variants}["cand"]
    fidelity = entry.token_fidelity
    assert fidelity is not None
    assert fidelity.method == "the toy's top-2 lists"  # the method text it declares, {k} its top-k
    # per position KL((0.9, 0.1) || (0.6, 0.4)) and Δp = 0.6 - 0.9, over each character of the answer
    kld = 0.9 * math.log(0.9 / 0.6) + 0.1 * math.log(0.1 / 0.4)
    assert (fidelity.positions, fidelity.cases, fidelity.top1_agreement) == (len(ANSWER), 1, 1.0)
    assert fidelity.kld_mean == pytest.approx(kld)
    assert fidelity.delta_p_mean == pytest.approx(-0.3)
