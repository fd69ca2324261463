"""The real embedded ladder, built once per test session (tests marked `model`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantgate.inputs._variants import VariantSet


def build_test_ladder(directory: Path) -> VariantSet:
    """F16 reference, Q8_0 and Q4_K_M from the bundled Gemma 3 270M (about 30 s on 2 cores)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from quantgate.ladder._quantize import build_ladder

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
        """Inject failures (see tests/ollama_double/)."""
        import httpx

        httpx.post(f"{self.url}/_double/faults", json=values, timeout=10).raise_for_status()

    def clear_faults(self) -> None:
        """Forget the failures a test injected and did not consume (the next test starts clean)."""
        none = dict.fromkeys(("busy", "error", "cut", "stream_error", "html", "html_chat", "spare"), 0)
        self.faults(**none, slow=0.0)

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


class LlamaCppServerProcess:
    """llama-cpp-python's real OpenAI-compatible server (`python -m llama_cpp.server`), not a
    double, serving one GGUF on a free loopback port; `options` are its own flags."""

    def __init__(self, model: str, *options: str, alias: str = "q4_k_m", api_key: str | None = None) -> None:
        import socket
        import subprocess
        import sys

        pytest.importorskip("sse_starlette", reason="llama-cpp-python[server] is not installed")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.model = alias
        args = [sys.executable, "-m", "llama_cpp.server", "--model", model, "--model_alias", alias]
        args += ["--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "2048", *options]
        if api_key is not None:
            args += ["--api_key", api_key]
        import tempfile

        # The server logs much to stderr: a file, not a pipe nobody reads (a full pipe stalls it).
        self.log = tempfile.TemporaryFile(mode="w+", prefix="llama-server-")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log, text=True)
        self._wait_until_up(api_key)

    def _wait_until_up(self, api_key: str | None, timeout_s: float = 120.0) -> None:
        import time

        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.seek(0)
                error = self.log.read()
                raise RuntimeError(f"llama_cpp.server exited with {self.process.returncode}: {error[-2000:]}")
            try:
                if httpx.get(f"{self.url}/models", headers=headers, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer on {self.url} within {timeout_s:.0f} s")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self.log.close()
