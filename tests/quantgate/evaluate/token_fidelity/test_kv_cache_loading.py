"""Token fidelity loads each variant with its own KV-cache type (a `Q4_K_M-kv-q8_0` variant
shares its weight file with `Q4_K_M`: measured with an f16 cache, it would copy its figures)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from quantgate.evaluate.token_fidelity import _measurement as measurement
from quantgate.inputs._variants import KVCache


class _Engine:
    loaded: ClassVar[list[tuple[Path, Any, dict[str, Any]]]] = []

    def __init__(self, path: Path, *, kv_cache: Any = None, **options: Any) -> None:
        self.llama = SimpleNamespace(n_vocab=lambda: 262_144)
        _Engine.loaded.append((path, kv_cache, options))

    def close(self) -> None:
        pass


def test_each_variant_is_loaded_with_its_own_cache_type(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measurement, "EmbeddedEngine", _Engine)
    _Engine.loaded = []
    q8 = KVCache(k="q8_0", v="q8_0")
    weights = Path("gemma-3-270m-Q4_K_M.gguf")
    with ExitStack() as stack:
        loaded = measurement._load_variants(
            stack,
            _Engine(Path("F16.gguf")),  # type: ignore[arg-type]
            {"Q4_K_M": weights, "Q4_K_M-kv-q8_0": weights},
            {"n_ctx": 4096},
            {"Q4_K_M-kv-q8_0": q8},
        )
    assert set(loaded) == {"Q4_K_M", "Q4_K_M-kv-q8_0"}
    assert _Engine.loaded[1:] == [(weights, None, {"n_ctx": 4096}), (weights, q8, {"n_ctx": 4096})]
