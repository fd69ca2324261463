"""What an OpenAI-compatible server says about itself, for an `openai:` variant's runtime record.

Every such server lists its models (`GET /v1/models`). llama.cpp's `llama-server` also has
`GET /props` (its build, context size, model file, chat template, slots) and, when started
with `--metrics`, `GET /metrics` (Prometheus text: tokens processed, requests queued, KV-cache
use). An endpoint the server does not have (llama-cpp-python's `llama_cpp.server` answers 404
to both; llama-server answers 501 to /metrics without `--metrics`) is recorded as
`"not offered"`, not as an error.
"""

from __future__ import annotations

import math
from typing import Any

import httpx

from quantgate.backends import BackendError

NOT_OFFERED = "not offered"
_ABSENT = (404, 405, 501)
_PROPS = ("build_info", "model_path", "total_slots", "chat_template")


def parse_prometheus(text: str) -> dict[str, float]:
    """Samples of a Prometheus text exposition: `name{labels}` (as written) to its value.

    Comments (`# HELP`, `# TYPE`) and lines that are not `name value [timestamp]` are skipped;
    `NaN` and `+Inf` are kept as floats.
    """
    samples: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.rpartition("}") if "}" in line else ("", "", line)
        if name:
            name += "}"
            fields = rest.split()
        else:
            name, *fields = line.split()
        if not fields:
            continue
        try:
            samples[name.strip()] = float(fields[0])
        except ValueError:
            continue
    return samples


def _props(answer: dict[str, Any]) -> dict[str, Any]:
    """The parts of llama-server's /props kept: build, model file, slots, chat template, n_ctx."""
    kept = {key: answer[key] for key in _PROPS if key in answer}
    settings = answer.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else answer.get("n_ctx")
    kept["n_ctx"] = n_ctx if isinstance(n_ctx, int) else None
    return kept


def server_metadata(
    base_url: str,
    model: str,
    api_key: str | None = None,
    *,
    timeout_s: float = 10.0,
    transport: httpx.BaseTransport | None = None,
) -> dict[str, Any]:
    """The server's model ids, /props and /metrics, as a variant's runtime records them.

    Returns:
        `server_models` (ids from /v1/models, or "not offered"), `model_listed` (whether `model`
        is among them; None when not offered), `props` (a dict, see `_props`, or "not offered")
        and `metrics` (sample name to value, or "not offered").

    Raises:
        BackendError: The server cannot be reached, or answers an endpoint with an error
            other than "not there".
    """
    base = base_url.rstrip("/")
    root = base.removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(headers=headers, timeout=timeout_s, transport=transport) as client:
        models = _get(client, f"{base}/models")
        props = _get(client, f"{root}/props")
        metrics = _get(client, f"{root}/metrics")
    ids = None
    models_json = _json(models)
    if isinstance(models_json, dict):
        listed = models_json.get("data")
        ids = [str(entry.get("id")) for entry in listed or [] if isinstance(entry, dict)]
    props_json = _json(props)
    samples = parse_prometheus(metrics.text) if isinstance(metrics, httpx.Response) else None
    return {
        "server_models": ids if ids is not None else NOT_OFFERED,
        "model_listed": (model in ids) if ids is not None else None,
        "props": _props(props_json) if isinstance(props_json, dict) else NOT_OFFERED,
        "metrics": {k: v for k, v in (samples or {}).items() if math.isfinite(v)}
        if samples is not None
        else NOT_OFFERED,
    }


def _get(client: httpx.Client, url: str) -> httpx.Response | None:
    """The answer; None when the server has no such endpoint."""
    try:
        response = client.get(url)
    except httpx.HTTPError as exc:
        raise BackendError(f"OpenAI-compatible server: GET {url}: {exc}") from exc
    if response.status_code in _ABSENT:
        return None
    if response.status_code != 200:
        raise BackendError(
            f"OpenAI-compatible server: GET {url} answered {response.status_code}: {response.text[:200]}"
        )
    return response


def _json(response: httpx.Response | None) -> Any:
    """The answer's JSON; None when there is no answer or it is not JSON."""
    if response is None:
        return None
    try:
        return response.json()
    except ValueError:
        return None
