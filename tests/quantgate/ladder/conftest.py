"""Fixtures of the calibration tests: fake llama.cpp tools on the path, a ladder directory with a
fake F16 reference (tests/quantgate/ladder/fake_llama_tools.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantgate.ladder._llama_tools import ENV_VAR as TOOLS_ENV
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
