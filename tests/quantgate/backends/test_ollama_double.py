"""The Ollama TEST DOUBLE (tests/ollama_double/, not Ollama) behaves as Ollama's documentation says
where users meet it: its queue, `keep_alive`, the default context and prompts cut to it, `:latest`,
errors inside a stream, and what `/api/ps` reports. Raw HTTP, real llama.cpp inference."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import OLLAMA_TAGS
from tests.ollama_double.models import model_name
from tests.ollama_double.server import STREAM_ERROR

pytestmark = [pytest.mark.model, pytest.mark.slow]

Q4 = OLLAMA_TAGS["Q4_K_M"]
SCHEMA = {"type": "object", "properties": {"vendor": {"type": "string"}}, "required": ["vendor"]}


def chat(
    url: str,
    *,
    stream: bool = False,
    model: str = Q4,
    text: str = "Invoice from Acme",
    keep_alive: object = None,
    **options: object,
) -> httpx.Response:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": f"Extract the vendor. {text}"}],
        "stream": stream,
        "format": SCHEMA,
        "options": {"temperature": 0, "num_predict": 12, **options},
    }
    if keep_alive is not None:
        body["keep_alive"] = keep_alive
    return httpx.post(f"{url}/api/chat", json=body, timeout=300)


def running(url: str) -> list[dict[str, object]]:
    models: list[dict[str, object]] = httpx.get(f"{url}/api/ps", timeout=30).json()["models"]
    return models


@pytest.fixture
def plain_double(ladder) -> Iterator[str]:
    """A double of its own serving the Q4_K_M file as `plain` (no tag) with the default context."""
    from tests.model_fixtures import OllamaDoubleProcess

    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    server = OllamaDoubleProcess({"plain": q4.model})
    yield server.url
    server.stop()


# names and the context window


def test_a_name_without_a_tag_is_its_latest(plain_double):
    tags = httpx.get(f"{plain_double}/api/tags", timeout=30).json()["models"]
    assert [t["name"] for t in tags] == ["plain:latest"]
    for name in ("plain", "plain:latest"):
        assert httpx.post(f"{plain_double}/api/show", json={"model": name}, timeout=30).status_code == 200
    missing = httpx.post(f"{plain_double}/api/show", json={"model": "plain:other"}, timeout=30)
    assert (missing.status_code, missing.json()) == (404, {"error": "model 'plain:other' not found"})
    assert [model_name(n) for n in ("gemma3", "gemma3:12b", "ns/gemma3", "host:1/ns/m")] == [
        "gemma3:latest", "gemma3:12b", "ns/gemma3:latest", "host:1/ns/m:latest"
    ]  # fmt: skip


def test_without_num_ctx_the_context_is_4096_and_a_longer_prompt_is_cut_to_it(plain_double):
    long_text = "Acme Corporation invoice line. " * 900  # about 5,400 tokens
    answer = chat(plain_double, model="plain", text=long_text).json()
    assert answer["prompt_eval_count"] == 4096  # cut silently, to the context, as Ollama does
    assert running(plain_double)[0]["context_length"] == 4096
    shorter = chat(plain_double, model="plain", text=long_text, num_ctx=1024).json()
    assert shorter["prompt_eval_count"] == 1024
    assert shorter["load_duration"] > 0  # another context: the model is loaded again
    assert running(plain_double)[0]["context_length"] == 1024
    short = chat(plain_double, model="plain", num_ctx=1024).json()
    assert 10 < short["prompt_eval_count"] < 100  # a prompt that fits is not cut
    assert short["load_duration"] == 0


# keep_alive (its parsing, which needs no model: test_ollama_double_keep_alive.py)


def test_a_model_is_unloaded_when_its_keep_alive_runs_out_and_the_next_request_loads_it(plain_double):
    started = dt.datetime.now(dt.UTC)
    chat(plain_double, model="plain", keep_alive="2s")
    (entry,) = running(plain_double)
    expires = dt.datetime.fromisoformat(str(entry["expires_at"]).replace("Z", "+00:00"))
    assert dt.timedelta(seconds=1) < expires - started < dt.timedelta(seconds=60)
    assert entry["size_vram"] == 0  # a CPU-only server
    time.sleep(2.5)
    assert running(plain_double) == []
    assert chat(plain_double, model="plain").json()["load_duration"] > 0


def test_keep_alive_0_unloads_and_a_negative_one_keeps_it(plain_double):
    chat(plain_double, model="plain", keep_alive=-1)
    assert str(running(plain_double)[0]["expires_at"]).startswith("2318")
    unloaded = httpx.post(
        f"{plain_double}/api/generate", json={"model": "plain", "keep_alive": 0}, timeout=30
    ).json()
    assert (unloaded["done"], unloaded["done_reason"]) == (True, "unload")
    assert running(plain_double) == []
    bad = httpx.post(
        f"{plain_double}/api/generate", json={"model": "plain", "keep_alive": "soon"}, timeout=30
    )
    assert bad.status_code == 400


# the queue, and errors


def _at_once(url: str, count: int) -> list[tuple[int, float, float]]:
    """`count` streaming chats sent together: each one's status, and when its first byte and its
    last came (seconds from the start), in the order of their first bytes."""
    results: list[tuple[int, float, float]] = []
    lock = threading.Lock()
    started = time.perf_counter()

    def one() -> None:
        body = {
            "model": Q4,
            "messages": [{"role": "user", "content": "Invoice from Acme"}],
            "format": SCHEMA,
            "options": {"num_predict": 24},
        }
        with httpx.stream("POST", f"{url}/api/chat", json=body, timeout=300) as response:
            chunks = response.iter_bytes()
            next(chunks)
            first = time.perf_counter() - started
            for _ in chunks:  # to the end of the answer
                pass
        with lock:
            results.append((response.status_code, first, time.perf_counter() - started))

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(results, key=lambda r: r[1])


def test_requests_beyond_the_served_one_wait_in_the_queue(ollama_double):
    chat(ollama_double.url)  # loaded, so only the queue is timed
    results = _at_once(ollama_double.url, 3)
    assert [status for status, _, _ in results] == [200, 200, 200]  # queued, not refused
    for (_, _, done), (_, first, _) in itertools.pairwise(results):
        assert first >= done - 0.25  # served one after the other: the wait is time to the first token


def test_past_max_queue_a_request_is_refused_with_503(ollama_double):
    chat(ollama_double.url)
    ollama_double.faults(max_queue=0)
    try:
        statuses = sorted(status for status, _, _ in _at_once(ollama_double.url, 3))
    finally:
        ollama_double.faults(max_queue=512)
    assert statuses[0] == 200
    assert statuses.count(503) >= 1


def test_an_error_inside_a_stream_is_a_json_line_of_a_200_answer(ollama_double):
    ollama_double.faults(stream_error=1)
    response = chat(ollama_double.url, stream=True)
    assert response.status_code == 200  # "the status code of the response will not be changed"
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert lines[-1] == {"error": STREAM_ERROR}
    assert all("message" in line for line in lines[:-1])
    assert len(lines) == 3


def test_the_html_fault_answers_200_with_a_page(ollama_double):
    ollama_double.faults(html=1)
    page = httpx.get(f"{ollama_double.url}/api/version", timeout=30)
    assert (page.status_code, page.headers["content-type"]) == (200, "text/html")
    assert httpx.get(f"{ollama_double.url}/api/version", timeout=30).json()["version"]
