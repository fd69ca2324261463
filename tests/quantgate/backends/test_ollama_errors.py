"""How transport failures are named for the extraction graph, and a run against a server that is
not there (no server needed)."""

import json

import httpx
import pytest
from ollama import ResponseError

from quantgate.backends.ollama._ollama import classify, ollama_host
from quantgate.backends.ollama._ollama_chat import truncation_limits
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run


@pytest.mark.parametrize(
    ("exc", "kind", "retryable"),
    [
        (ResponseError("model 'x' not found", 404), "not_found", False),
        (ResponseError("server busy", 503), "busy", True),
        (ResponseError("too many requests", 429), "busy", True),
        (ResponseError("runner terminated", 500), "server_error", True),
        (ResponseError("bad format", 400), "bad_request", False),
        (httpx.ReadTimeout("read timed out"), "timeout", True),
        (httpx.ConnectError("connection refused"), "connection", True),
        (ConnectionError("refused"), "connection", True),
        (httpx.RemoteProtocolError("peer closed connection"), "stream_cut", True),
        (ResponseError("an error was encountered while running the model"), "stream_error", True),
        (json.JSONDecodeError("Expecting value", "<html>", 0), "bad_response", False),
        (RuntimeError("something else"), "backend_error", False),
    ],
)
def test_classify(exc, kind, retryable):
    error = classify(exc)
    assert (error.kind, error.retryable) == (kind, retryable)


def test_an_error_line_in_a_stream_says_so():
    error = classify(ResponseError("an error was encountered while running the model"))
    said = "the server reported an error in the middle of its answer: an error was encountered while running"
    assert str(error).endswith(f"{said} the model")


@pytest.mark.parametrize(
    ("num_ctx", "limits"), [(8192, {8192, 4098}), (4096, {4096, 2050}), (2048, {2048, 1026})]
)
def test_the_prompt_lengths_ollama_cuts_to(num_ctx, limits):
    """Ollama's own log lines: `limit=2050 prompt=4308 keep=4 new=2050` at its default 4096."""
    assert truncation_limits(num_ctx) == limits


@pytest.mark.parametrize(
    ("option", "env", "expected"),
    [
        (None, None, "http://127.0.0.1:11434"),
        (None, "0.0.0.0", "http://127.0.0.1:11434"),
        (None, "gpu-box:8080", "http://gpu-box:8080"),
        ("https://ollama.example", "ignored:1", "https://ollama.example:443"),
    ],
)
def test_host_resolution(monkeypatch, option, env, expected):
    if env is None:
        monkeypatch.delenv("OLLAMA_HOST", raising=False)
    else:
        monkeypatch.setenv("OLLAMA_HOST", env)
    options = {"host": option} if option else {}
    assert ollama_host(Variant(name="v", backend="ollama", model="m", options=options)) == expected


def test_server_down_is_reported(tmp_path):
    variant = Variant(name="down", backend="ollama", model="gemma3:270m", options={"host": "127.0.0.1:9"})
    run_dir = run_evaluation(
        load_dataset("tech-config"),
        VariantSet(variants=[variant]),
        options=RunOptions(limit=1, out=tmp_path, progress=False),
    )
    entry = load_run(run_dir).summary.variants[0]
    assert entry.status == "skipped"
    assert entry.error is not None
    assert "not reachable" in entry.error
    assert "ollama serve" in entry.error
