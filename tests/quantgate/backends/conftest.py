"""Fixtures of the grammar tests: Gemma 3's vocabulary and a walker of each grammar engine over it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.quantgate.backends.grammar_walks import Walker


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled Gemma 3 270M GGUF (its vocabulary is all the walkers load)."""
    from quantgate.ladder._quantize import default_source

    return default_source(tmp_path_factory.mktemp("vocab"))


@pytest.fixture(scope="module", params=["gbnf", "llguidance"])
def walker(request: pytest.FixtureRequest, gguf: Path) -> Walker:
    """A walker of each grammar engine over the vocabulary (no model weights)."""
    from tests.quantgate.backends.grammar_walks import Walker  # imports llama.cpp, which may be absent

    return Walker.open(request.param, gguf)
