"""An OpenAI-compatible server's self-description: /v1/models, llama.cpp's /props and /metrics."""

import httpx
import pytest

from quantgate.backends import BackendError
from quantgate.backends.openai_metadata import NOT_OFFERED, parse_prometheus, server_metadata

METRICS = """# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 120
llamacpp:kv_cache_usage_ratio 0.25
llamacpp:requests_deferred NaN
http_requests{method="post",path="/v1/completions"} 3 1700000000
not a sample
"""


def test_the_prometheus_parser_reads_samples_and_skips_comments():
    samples = parse_prometheus(METRICS)
    assert samples["llamacpp:prompt_tokens_total"] == 120.0
    assert samples["llamacpp:kv_cache_usage_ratio"] == 0.25
    assert samples['http_requests{method="post",path="/v1/completions"}'] == 3.0  # timestamp ignored
    assert len(samples) == 4  # the NaN is kept here; comments and the bad line are not


def serving(routes):
    return httpx.MockTransport(
        lambda request: routes.get(request.url.path, lambda: httpx.Response(404, text="Not Found"))()
    )


def test_a_llama_server_gives_its_props_and_metrics():
    props = {"build_info": "b6000-abc", "model_path": "/m/q4.gguf", "total_slots": 4,
             "chat_template": "{{x}}", "default_generation_settings": {"n_ctx": 4096},
             "other": 1}  # fmt: skip
    routes = {
        "/v1/models": lambda: httpx.Response(200, json={"data": [{"id": "q4"}, {"id": "q8"}]}),
        "/props": lambda: httpx.Response(200, json=props),
        "/metrics": lambda: httpx.Response(200, text=METRICS),
    }
    meta = server_metadata("http://s:8080/v1/", "q4", transport=serving(routes))
    assert meta["server_models"] == ["q4", "q8"]
    assert meta["model_listed"] is True
    assert meta["props"] == {"build_info": "b6000-abc", "model_path": "/m/q4.gguf", "total_slots": 4,
                             "chat_template": "{{x}}", "n_ctx": 4096}  # fmt: skip
    assert meta["metrics"]["llamacpp:prompt_tokens_total"] == 120.0
    assert "llamacpp:requests_deferred" not in meta["metrics"]  # NaN is no value to record


def test_absent_endpoints_are_recorded_as_not_offered_and_errors_raise():
    routes = {
        "/v1/models": lambda: httpx.Response(200, json={"data": [{"id": "q4"}]}),
        "/metrics": lambda: httpx.Response(501, json={"error": "metrics not enabled"}),
    }
    meta = server_metadata("http://s/v1", "other", transport=serving(routes))
    assert meta == {
        "server_models": ["q4"],
        "model_listed": False,
        "props": NOT_OFFERED,
        "metrics": NOT_OFFERED,
    }
    routes["/props"] = lambda: httpx.Response(500, text="boom")
    with pytest.raises(BackendError, match="GET http://s/props answered 500: boom"):
        server_metadata("http://s/v1", "q4", transport=serving(routes))
