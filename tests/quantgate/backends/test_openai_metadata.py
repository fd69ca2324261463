"""An OpenAI-compatible server's self-description: /v1/models, llama.cpp's /props and /metrics."""

import hashlib

import httpx
import pytest

from quantgate.backends import BackendError
from quantgate.backends.openai._openai_metadata import NOT_OFFERED, parse_prometheus, server_metadata

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
                             "chat_template_sha256": hashlib.sha256(b"{{x}}").hexdigest(),
                             "n_ctx": 4096}  # fmt: skip
    assert meta["metrics"]["llamacpp:prompt_tokens_total"] == 120.0
    assert "llamacpp:requests_deferred" not in meta["metrics"]  # NaN is no value to record
    assert set(meta["metrics"]) == {"llamacpp:prompt_tokens_total", "llamacpp:kv_cache_usage_ratio"}


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
    routes["/props"] = lambda: httpx.Response(500, json={"error": {"message": "boom"}})
    with pytest.raises(BackendError, match="GET http://s/props answered 500: boom"):
        server_metadata("http://s/v1", "q4", transport=serving(routes))


SECRET = "root:x:0:0 hunter2"
PAGE = f"<!DOCTYPE html><html><body><p>{SECRET}</p>\nsecret_total 42\n</body></html>"


def test_an_error_body_that_is_not_the_apis_json_is_described_never_quoted():
    routes = {"/v1/models": lambda: httpx.Response(500, text=PAGE, headers={"content-type": "text/html"})}
    with pytest.raises(BackendError) as raised:
        server_metadata("http://s/v1", "q4", transport=serving(routes))
    assert str(raised.value) == (
        f"OpenAI-compatible server: GET http://s/v1/models answered 500: an HTML page ({len(PAGE)} bytes)"
    )


def test_answers_that_do_not_parse_are_recorded_as_not_recorded_naming_the_path():
    page = lambda: httpx.Response(200, text=PAGE, headers={"content-type": "text/html"})  # noqa: E731
    routes = {"/v1/models": page, "/props": page, "/metrics": page}
    meta = server_metadata("http://s/v1", "q4", transport=serving(routes))
    said = f"answered an HTML page ({len(PAGE)} bytes)"
    assert meta == {
        "server_models": f"not recorded: GET /v1/models {said}",
        "model_listed": None,
        "props": f"not recorded: GET /props {said}",
        "metrics": f"not recorded: GET /metrics {said}",
    }


def test_only_typed_bounded_fields_of_a_json_answer_are_kept():
    long_id = "m" * 201
    props = {"build_info": SECRET + "\x1b[2J", "model_path": ["a"], "total_slots": True,
             "chat_template": SECRET, "n_ctx": "4096", "api_key": SECRET}  # fmt: skip
    routes = {
        "/v1/models": lambda: httpx.Response(200, json={"data": [{"id": "q4"}, {"id": long_id}, {"id": 3}]}),
        "/props": lambda: httpx.Response(200, json=props),
        "/metrics": lambda: httpx.Response(200, text='node_uname_info{nodename="db1"} 1\nsecret_total 42\n'),
    }
    meta = server_metadata("http://s/v1", long_id, transport=serving(routes))
    assert meta["server_models"] == ["q4"]
    assert meta["model_listed"] is False  # an id that is not a short printable string is not kept
    assert meta["props"] == {"build_info": None, "model_path": None, "total_slots": None,
                             "chat_template_sha256": hashlib.sha256(SECRET.encode()).hexdigest(),
                             "n_ctx": None}  # fmt: skip
    assert meta["metrics"] == "not recorded: GET /metrics answered a body of type text/plain (50 bytes)"


def test_a_long_model_list_is_cut_but_still_tells_whether_the_model_is_there():
    listed = {"data": [{"id": f"m{i}"} for i in range(500)]}
    routes = {"/v1/models": lambda: httpx.Response(200, json=listed)}
    meta = server_metadata("http://s/v1", "m499", transport=serving(routes))
    assert meta["server_models"] == [f"m{i}" for i in range(100)]
    assert meta["model_listed"] is True
