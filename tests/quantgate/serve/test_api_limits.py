"""The API's limits (body size, list lengths, the queue, small answers) and bad bodies that once
gave 500 (a NUL, a huge string, NaN): each a 4xx naming what is wrong, never echoing it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from quantgate.serve import JobQueue, create_app
from quantgate.serve._guards import MAX_BODY_BYTES
from quantgate.serve._requests import MAX_VARIANTS
from tests.quantgate.serve.api_client import FAKE, LOCAL, until, until_started


def _post(client: TestClient, body: str) -> tuple[int, str]:
    answer = client.post("/runs", content=body, headers={"content-type": "application/json"})
    return answer.status_code, answer.text


@pytest.mark.parametrize(
    ("body", "field"),
    [('{"dataset": "ok\\u0000"}', "dataset"), ('{"dataset": "ok\\n"}', "dataset"),
     ('{"dataset": "\\ud800"}', "dataset"), ('{"dataset": "' + "x" * 100_000 + '"}', "dataset"),
     ('{"variants": ["ollama:a\\u0000"]}', "variants"), ('{"limit": NaN}', "limit"),
     ('{"limit": 1e400}', "limit"), ('{"timeout_s": NaN}', "timeout_s"), ('{"timeout_s": 0}', "timeout_s"),
     ('{"gates": {"max_accuracy_drop": NaN}}', "gates.max_accuracy_drop"),
     ('{"gates": {"min_cases": Infinity}}', "gates.min_cases"), ('{"variants": []}', "variants"),
     ('{"gates": {"max_accuracy_drop": null}}', "gates.max_accuracy_drop: null is not a threshold")],
)  # fmt: skip
def test_a_bad_value_gets_422_naming_its_field_and_not_echoed(
    client: TestClient, body: str, field: str
) -> None:
    status, text = _post(client, body)
    assert status == 422
    assert field in text
    assert "xxxx" not in text
    assert "input" not in json.loads(text)["detail"][0]


def test_a_huge_unknown_field_is_named_not_echoed(client: TestClient) -> None:
    status, text = _post(client, json.dumps({"dataset": "ok", "extra": "y" * 900_000}))
    assert (status, json.loads(text)["detail"][0]["loc"]) == (422, ["body", "extra"])
    assert len(text) < 500


def test_a_body_over_the_limit_gets_413_declared_or_streamed(client: TestClient) -> None:
    body = json.dumps({"variants": ["ollama:x"] * 500_000}).encode()
    assert len(body) > MAX_BODY_BYTES
    assert client.post("/runs", content=body, headers={"content-type": "application/json"}).status_code == 413

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    streamed = client.post("/runs", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    assert client.get("/runs").json() == []


def test_variants_are_bounded_and_go_to_the_run_in_a_file(client: TestClient) -> None:
    too_many = [f"ollama:m{i}" for i in range(MAX_VARIANTS + 1)]
    status, text = _post(client, json.dumps({"dataset": "ok", "variants": too_many}))
    assert (status, "variants" in text) == (422, True)
    longest = [f"ollama:{i:04d}" + "m" * 1000 for i in range(MAX_VARIANTS)]
    answer = client.post("/runs", json={"dataset": "ok", "variants": longest})
    assert answer.status_code == 202
    until(client, answer.json()["id"], "complete")
    arguments = client.get(f"/runs/{answer.json()['id']}/summary").json()["arguments"]
    assert arguments[arguments.index("--variants") + 2] == "--out"  # one file, however many variants
    assert len(client.get(f"/runs/{answer.json()['id']}").content) < 80_000


def test_a_full_queue_answers_429_and_keeps_nothing(root: Path, tmp_path: Path) -> None:
    queue = JobQueue(tmp_path / "runs", command=FAKE, max_queued=2, stop_grace_s=1.0)
    with TestClient(create_app(roots=[root], out=tmp_path / "runs", queue=queue), base_url=LOCAL) as plain:
        running = plain.post("/runs", json={"dataset": "slow"}).json()
        until_started(plain, running["id"])
        assert [plain.post("/runs", json={"dataset": "ok"}).status_code for _ in range(3)] == [202, 202, 429]
        assert "2 runs are already waiting" in plain.post("/runs", json={"gates": {"min_cases": 2}}).text
        assert len(plain.get("/runs").json()) == 3
        assert len([p for p in (tmp_path / "runs").iterdir() if p.is_dir()]) == 3
        plain.post(f"/runs/{running['id']}/cancel")
