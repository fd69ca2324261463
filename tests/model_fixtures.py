"""The real embedded ladder, built once per test session (tests marked `model`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantgate.inputs.variants import VariantSet


def build_test_ladder(directory: Path) -> VariantSet:
    """F16 reference, Q8_0 and Q4_K_M from the bundled Gemma 3 270M (about 30 s on 2 cores)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from quantgate.ladder.quantize import build_ladder

    variant_set, _ = build_ladder(quants=["Q8_0", "Q4_K_M"], out=directory, progress=False)
    return variant_set


class OllamaDoubleProcess:
    """The Ollama-protocol TEST DOUBLE (tests/ollama_double/) running in its own process."""

    def __init__(self, models: dict[str, str], *options: str) -> None:
        """Start it serving `models` (tag: GGUF path); `options` are its own flags
        (`--context-length N`, `--max-queue N`)."""
        import subprocess
        import sys

        args = [sys.executable, "-m", "tests.ollama_double", *options]
        for tag, path in models.items():
            args += ["--model", f"{tag}={path}"]
        root = Path(__file__).resolve().parents[1]
        self.process = subprocess.Popen(args, cwd=root, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("listening on "):
            self.process.kill()
            raise RuntimeError(f"the Ollama test double did not start: {line!r}")
        self.url = line.split()[-1]

    def faults(self, **values: object) -> None:
        """Inject failures (see tests/ollama_double.py)."""
        import httpx

        httpx.post(f"{self.url}/_double/faults", json=values, timeout=10).raise_for_status()

    def clear_faults(self) -> None:
        """Forget the failures a test injected and did not consume (the next test starts clean)."""
        none = dict.fromkeys(("busy", "error", "cut", "stream_error", "html", "html_chat", "spare"), 0)
        self.faults(**none, slow=0.0)

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
