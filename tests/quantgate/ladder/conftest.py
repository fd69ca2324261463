"""Fixtures of the calibration tests: fake llama.cpp tools on the path, a ladder directory with a
fake F16 reference (tests/quantgate/ladder/fake_llama_tools.py), and a fake reference model that
answers the calibration cases."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from quantgate.backends import OpenedVariant
from quantgate.inputs._variants import Variant
from quantgate.ladder._llama_tools import ENV_VAR as TOOLS_ENV
from tests.fakes import QueuedChatModel
from tests.quantgate.ladder.fake_llama_tools import install_fake_tools, write_fake_f16


@pytest.fixture
def tools(tmp_path, monkeypatch) -> Path:
    """Fake llama-imatrix and llama-quantize found by quantgate; the path of their call log."""
    log = install_fake_tools(tmp_path / "bin")
    monkeypatch.setenv(TOOLS_ENV, str(tmp_path / "bin"))
    monkeypatch.setenv("FAKE_LOG", str(log))
    return log


@pytest.fixture
def fake_ladder(tmp_path: Path) -> Path:
    """A ladder directory holding a fake F16 reference, `model-F16.gguf`."""
    (tmp_path / "ladder").mkdir()
    write_fake_f16(tmp_path / "ladder" / "model-F16.gguf")
    return tmp_path / "ladder"


REFERENCE_ANSWER = {
    "name": "Answered By The Fake Reference",
    "eat_type": None,
    "food": None,
    "price_range": None,
    "customer_rating": None,
    "area": None,
    "family_friendly": None,
    "near": None,
}
"""What the fake reference writes for every restaurants case (a valid record, unlike any gold)."""
UNANSWERABLE = "Aromi coffee shop serves Chinese food"
"""A case whose text holds this gets an invalid answer from the fake reference, at every attempt."""


@pytest.fixture
def fake_reference(register_backend) -> QueuedChatModel:
    """The ladder's F16 reference answering as a fake: the `llamacpp` backend, for this test, opens
    every variant as a `QueuedChatModel` writing `REFERENCE_ANSWER` (`not json` for `UNANSWERABLE`
    cases); the model, whose `calls` the test can read."""
    model = QueuedChatModel(outputs=[json.dumps(REFERENCE_ANSWER)], by_text={UNANSWERABLE: "not json"})

    @contextmanager
    def open_fake(
        variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
    ) -> Iterator[OpenedVariant]:
        yield OpenedVariant(chat_model=model, runtime={"name": "fake reference", "version": "0"})

    register_backend("llamacpp", open_fake)
    return model
