"""What an OpenAI-compatible server says about itself, for an `openai:` variant's runtime record.

Every such server lists its models (`GET /v1/models`). llama.cpp's `llama-server` also has
`GET /props` (its build, context size, model file, chat template, slots) and, when started
with `--metrics`, `GET /metrics` (Prometheus text: tokens processed, requests queued, KV-cache
use). An endpoint the server does not have (llama-cpp-python's `llama_cpp.server` answers 404
to both; llama-server answers 501 to /metrics without `--metrics`) is recorded as
`"not offered"`, not as an error.

Only parsed, typed fields are kept (`quantgate.backends._server_fields`): model ids and /props'
strings that are short and printable, /props' chat template as its sha256, and llama.cpp's own
metrics (`llamacpp:` names); an answer that does not parse is `"not offered"`, and an error names
the URL and says what the body was, never quoting it.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
import psutil

from quantgate.backends import BackendError
from quantgate.backends._server_fields import count, described, refusal, short_text

NOT_OFFERED = "not offered"
_ABSENT = (404, 405, 501)
MAX_MODEL_IDS = 100
"""The most model ids of /v1/models recorded (a gateway may list thousands)."""
_LLAMACPP_METRIC = re.compile(r"llamacpp:[A-Za-z0-9_:]{1,100}")
"""llama-server's own metrics: `llamacpp:` names without labels (`tools/server/server.cpp`)."""


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


def _props(response: httpx.Response) -> dict[str, Any] | None:
    """The parts of llama-server's /props kept: build, model file, slots, n_ctx (each None when
    absent or not of its type), and the chat template's sha256 (a template is free text); None
    when the answer is not a JSON object."""
    answer = response.json()
    if not isinstance(answer, dict):
        return None
    settings = answer.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else answer.get("n_ctx")
    template = answer.get("chat_template")
    return {
        "build_info": short_text(answer.get("build_info")),
        "model_path": short_text(answer.get("model_path"), limit=1024),
        "total_slots": count(answer.get("total_slots")),
        "chat_template_sha256": hashlib.sha256(template.encode()).hexdigest()
        if isinstance(template, str)
        else None,
        "n_ctx": count(n_ctx),
    }


def _model_ids(response: httpx.Response) -> list[str] | None:
    """The ids /v1/models lists (each a short printable string; others left out); None when the
    answer is not the API's list."""
    answer = response.json()
    listed = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(listed, list):
        return None
    ids = (short_text(entry.get("id")) for entry in listed if isinstance(entry, dict))
    return [i for i in ids if i is not None]


def _metrics(response: httpx.Response) -> dict[str, float] | None:
    """llama-server's own finite samples (`llamacpp:` names); anything else a server exposes (a
    node exporter's host names in labels, ...) is not this run's to record. None when there is
    no such sample."""
    samples = parse_prometheus(response.text)
    kept = {k: v for k, v in samples.items() if _LLAMACPP_METRIC.fullmatch(k) and math.isfinite(v)}
    return kept or None


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
        `server_models` (the first `MAX_MODEL_IDS` ids from /v1/models, or "not offered"),
        `model_listed` (whether `model` is among all of them; None when not offered), `props` (a
        dict, see `_props`, or "not offered") and `metrics` (llama.cpp's sample names to values,
        or "not offered").

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
    ids = _parsed(models, "/v1/models", _model_ids)
    listed = ids if isinstance(ids, list) else None
    return {
        "server_models": listed[:MAX_MODEL_IDS] if listed is not None else ids,
        "model_listed": (model in listed) if listed is not None else None,
        "props": _parsed(props, "/props", _props),
        "metrics": _parsed(metrics, "/metrics", _metrics),
    }


def _parsed(response: httpx.Response | None, path: str, parse: Callable[[httpx.Response], Any]) -> Any:
    """`parse` of an endpoint's answer; "not offered" when the server has no such endpoint, and
    a short note naming the path and what the body was when its answer does not parse."""
    if response is None:
        return NOT_OFFERED
    try:
        value = parse(response)
    except ValueError:
        value = None
    if value is None:
        return f"not recorded: GET {path} answered {described(response)}"
    return value


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
            f"OpenAI-compatible server: GET {url} answered {response.status_code}: {refusal(response)}"
        )
    return response


def server_metadata_or_error(endpoint: tuple[str, str, str | None]) -> dict[str, Any]:
    """The server's model ids, /props and /metrics (`server_metadata`); an endpoint that fails is
    recorded as `metadata_error`, not a failed variant: the answers are what is judged."""
    try:
        return server_metadata(*endpoint)
    except BackendError as exc:
        return {"metadata_error": str(exc)}


def local_pid(base_url: str) -> int | None:
    """PID of the process listening on the server's port, when it runs on this machine."""
    parts = urlsplit(base_url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                return conn.pid
    except psutil.AccessDenied:
        return None
    return None
