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


class ServerProcess:
    """A real server process on a free loopback port, its log in a file (a full pipe nobody reads
    stalls a server), up once `ready_path` answers 200; `stop` kills it. Subclasses say how to
    start it."""

    name = "server"
    port: int

    def _start(
        self, args: list[str], ready_path: str, headers: dict[str, str], timeout_s: float = 120.0
    ) -> None:
        import subprocess
        import tempfile

        self.log = tempfile.TemporaryFile(mode="w+", prefix=f"{self.name}-")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log, text=True)
        self._wait_until_up(f"http://127.0.0.1:{self.port}{ready_path}", headers, timeout_s)

    @staticmethod
    def free_port() -> int:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return int(probe.getsockname()[1])

    def log_tail(self, chars: int = 2000) -> str:
        """The end of what the server logged."""
        self.log.seek(0)
        return self.log.read()[-chars:]

    def _wait_until_up(self, url: str, headers: dict[str, str], timeout_s: float) -> None:
        import time

        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}: {self.log_tail()}")
            try:
                if httpx.get(url, headers=headers, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        tail = self.log_tail()
        self.stop()
        raise RuntimeError(f"{self.name} did not answer on {url} within {timeout_s:.0f} s: {tail}")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self.log.close()


class LlamaCppServerProcess(ServerProcess):
    """llama-cpp-python's real OpenAI-compatible server (`python -m llama_cpp.server`), not a
    double, serving one GGUF on a free loopback port; `options` are its own flags."""

    name = "llama_cpp.server"

    def __init__(self, model: str, *options: str, alias: str = "q4_k_m", api_key: str | None = None) -> None:
        import sys

        pytest.importorskip("sse_starlette", reason="llama-cpp-python[server] is not installed")
        self.port = self.free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.model = alias
        args = [sys.executable, "-m", "llama_cpp.server", "--model", model, "--model_alias", alias]
        args += ["--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "2048", *options]
        if api_key is not None:
            args += ["--api_key", api_key]
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._start(args, "/v1/models", headers)


class LlamaServerProcess(ServerProcess):
    """llama.cpp's own `llama-server`, built by scripts/install-llama-tools.sh and found as
    `quantgate doctor` finds it, serving one GGUF on a free loopback port with `CONTEXT` tokens of
    context, 2 threads and one slot, its /metrics on; `options` are its own flags.

    Skips the test when the tool is not built; a tool that is built and fails to start fails it,
    with the end of the server's log."""

    name = "llama-server"
    CONTEXT = 2048

    def __init__(self, model: str, *options: str, alias: str = "q4_k_m") -> None:
        from quantgate.ladder import find_llama_tools

        tools = find_llama_tools()
        if "llama-server" in tools.missing:
            pytest.skip(f"llama.cpp's llama-server is not built (looked in {tools.where}): run bash "
                        "scripts/install-llama-tools.sh")  # fmt: skip
        self.port = self.free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.model = alias
        self.path = tools.require("llama-server")
        args = [
            str(self.path),
            "-m",
            model,
            "--alias",
            alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        args += ["-c", str(self.CONTEXT), "-t", "2", "--parallel", "1", "--metrics", "--no-webui", *options]
        self._start(args, "/health", {})
