"""The real embedded ladder, built once per test session (tests marked `model`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantgate.variants import VariantSet


def build_test_ladder(directory: Path) -> VariantSet:
    """F16 reference, Q8_0 and Q4_K_M from the bundled Gemma 3 270M (about 30 s on 2 cores)."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    assert llama_cpp
    from quantgate.ladder import build_ladder

    variant_set, _ = build_ladder(quants=["Q8_0", "Q4_K_M"], out=directory, progress=False)
    return variant_set
