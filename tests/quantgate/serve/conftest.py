"""Fixtures of the API tests: a root with 'datasets' the stand-in reacts to, and a client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from quantgate.serve import JobQueue, create_app
from tests.quantgate.serve.api_client import AUTH, FAKE, LOCAL, TOKEN


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root holding 'datasets' the stand-in reacts to, and a symlink out of the root."""
    root = tmp_path / "root"
    for name in ("ok", "slow", "fails", "stubborn", "leaks"):
        (root / name).mkdir(parents=True)
    (root / "escape").symlink_to(tmp_path)
    return root


@pytest.fixture
def client(root: Path, tmp_path: Path) -> Iterator[TestClient]:
    """The API with a token, over a queue running the stand-in (a 1 s grace after SIGTERM)."""
    queue = JobQueue(tmp_path / "runs", command=FAKE, stop_grace_s=1.0)
    app = create_app(roots=[root], out=tmp_path / "runs", token=TOKEN, queue=queue)
    with TestClient(app, headers=AUTH, base_url=LOCAL) as test_client:
        yield test_client
