"""`quantgate serve` started as a process on a free port, for tests that talk HTTP to it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[3]


@contextmanager
def running_server(
    roots: Sequence[Path], out: Path, *, token: str | None = None, flags: Sequence[str] = ()
) -> Iterator[str]:
    """The server's URL once it answers `/health`; it is stopped on exit. Without `token`,
    `QUANTGATE_TOKEN` is left out of its environment."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {key: value for key, value in os.environ.items() if key != "QUANTGATE_TOKEN"}
    if token is not None:
        env["QUANTGATE_TOKEN"] = token
    flags = [*flags, *(arg for root in roots for arg in ("--root", str(root)))]
    command = [sys.executable, "-m", "quantgate", "serve", "--port", str(port), *flags, "--out", str(out)]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        assert server.stdout is not None
        assert "quantgate serve on http://127.0.0.1:" in server.stdout.readline()
        for _ in range(300):  # uvicorn binds just after the banner
            try:
                httpx.get(f"{url}/health", headers=headers)
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=60)
