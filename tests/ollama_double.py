"""TEST DOUBLE of an Ollama server. It is not Ollama.

No Ollama binary can run where quantgate is developed, so the tests talk HTTP to this
stand-in, which speaks the documented Ollama REST protocol (`/api/chat` streaming NDJSON and
non-streaming with `format` as a JSON schema, `logprobs` and `top_logprobs`, `/api/generate`
to load, `/api/show`, `/api/ps`, `/api/tags`, `/api/version`) with real inference: llama.cpp
through quantgate's embedded engine, on real GGUF files. langchain-ollama's and the ollama
client's real code therefore runs end to end.

Chat messages are rendered with quantgate's few-shot completion prompt (`render_prompt`), not
a model template. A final assistant message is continued, not closed, as Ollama's templates
do with `$last`. Log-probabilities are the log-softmax of the raw logits (before any grammar).

Faults are injected through `POST /_double/faults` (not part of Ollama's API):
`{"busy": n}` answers the next n chats with 503, `{"error": n}` with 500, `{"slow": seconds}`
leaves the next chat unanswered that long, `{"cut": n}` closes the next n streams in the middle, and
`{"max_parallel": k}` answers 503 "server busy" to chats beyond k at once.

    python -m tests.ollama_double --model gemma3:270m-q4_K_M=/path/model.gguf [--port 0]

prints `listening on http://127.0.0.1:PORT` once ready.
"""

from __future__ import annotations

import argparse
import codecs
import datetime as dt
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from scipy.special import log_softmax

from quantgate.backends.greedy import Generation, Step
from quantgate.backends.llamacpp import EmbeddedEngine, render_prompt

VERSION = "0.0.0-quantgate-test-double"
N_CTX = 8192
_FILE_TYPES = {
    0: "F32",
    1: "F16",
    7: "Q8_0",
    10: "Q2_K",
    12: "Q3_K_M",
    15: "Q4_K_M",
    17: "Q5_K_M",
    18: "Q6_K",
}


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


class Models:
    """The served models: tag -> GGUF, loaded on first use and kept loaded (one at a time)."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self.paths = paths
        self.digests = {tag: hashlib.sha256(path.read_bytes()).hexdigest() for tag, path in paths.items()}
        self.metadata = {tag: _read_metadata(path) for tag, path in paths.items()}
        self.loaded: dict[str, EmbeddedEngine] = {}
        self.lock = threading.Lock()

    def details(self, tag: str) -> dict[str, Any]:
        metadata = self.metadata[tag]
        return {
            "parent_model": "",
            "format": "gguf",
            "family": metadata.get("general.architecture", ""),
            "families": [metadata.get("general.architecture", "")],
            "parameter_size": metadata.get("general.size_label", ""),
            "quantization_level": _FILE_TYPES.get(int(metadata.get("general.file_type", -1)), "unknown"),
        }

    def load(self, tag: str) -> EmbeddedEngine:
        """The loaded engine of `tag`, unloading the other model first (waiting until it is idle)."""
        with self.lock:
            if tag not in self.loaded:
                for other in list(self.loaded):
                    evicted = self.loaded.pop(other)
                    with evicted.lock:  # a request still generating with it finishes first
                        evicted.close()
                self.loaded[tag] = EmbeddedEngine(self.paths[tag], n_ctx=N_CTX)
            return self.loaded[tag]

    @contextmanager
    def serving(self, tag: str) -> Iterator[EmbeddedEngine]:
        """Hold `tag`'s engine for one generation; it cannot be unloaded meanwhile."""
        while True:
            engine = self.load(tag)
            with engine.lock:
                if self.loaded.get(tag) is engine:  # not unloaded between load and lock
                    yield engine
                    return


class Faults:
    """Injected failures, consumed by the requests that trigger them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.busy = self.error = self.cut = 0
        self.slow = 0.0
        self.max_parallel: int | None = None
        self.active = 0

    def update(self, values: dict[str, Any]) -> None:
        with self.lock:
            for key, value in values.items():
                setattr(self, key, value)

    def take(self, name: str) -> bool:
        with self.lock:
            if getattr(self, name) > 0:
                setattr(self, name, getattr(self, name) - 1)
                return True
            return False


def _read_metadata(path: Path) -> dict[str, str]:
    """GGUF metadata without loading the weights (llama.cpp, vocabulary only)."""
    from llama_cpp import Llama
    from llama_cpp._utils import suppress_stdout_stderr

    with suppress_stdout_stderr(disable=False):
        llama = Llama(model_path=str(path), vocab_only=True, verbose=False)
    metadata = dict(llama.metadata)
    llama.close()
    return metadata


def _prompt(raw: list[dict[str, Any]]) -> str:
    """The completion prompt; a final assistant message is left open for the model to continue."""
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    messages: list[BaseMessage] = [
        kinds[m["role"]](content=m.get("content", "")) for m in raw if m.get("role") in kinds
    ]
    if messages and isinstance(messages[-1], AIMessage):
        return render_prompt(messages[:-1]) + messages[-1].text
    return render_prompt(messages)


def _logprobs(engine: EmbeddedEngine, step: Step, top: int) -> dict[str, Any]:
    """Ollama's logprob entry for one generated token, with its `top` most likely tokens."""
    assert step.logits is not None
    logprobs = log_softmax(step.logits.astype(np.float64))
    best = np.argpartition(-logprobs, top)[:top] if top < len(logprobs) else np.arange(len(logprobs))
    best = best[np.argsort(-logprobs[best])]

    def text(token: int) -> str:
        return codecs.decode(engine.llama.detokenize([int(token)]), "utf-8", errors="replace")

    entry: dict[str, Any] = {"token": text(step.token), "logprob": float(logprobs[step.token])}
    if top:
        entry["top_logprobs"] = [{"token": text(t), "logprob": float(logprobs[t])} for t in best]
    return entry


class Handler(BaseHTTPRequestHandler):
    """One request; the server object carries `models` and `faults`."""

    protocol_version = "HTTP/1.1"
    server: DoubleServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        body: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
        return body

    def _json(self, status: int, value: dict[str, Any]) -> None:
        payload = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        models = self.server.models
        if self.path == "/api/version":
            self._json(200, {"version": VERSION})
        elif self.path == "/api/tags":
            entries = [self._entry(tag) for tag in models.paths]
            self._json(200, {"models": entries})
        elif self.path == "/api/ps":
            entries = [
                {**self._entry(tag), "expires_at": _now(), "size_vram": 0, "context_length": N_CTX}
                for tag in list(models.loaded)
            ]
            self._json(200, {"models": entries})
        else:
            self._json(404, {"error": f"unknown path {self.path}"})

    def _entry(self, tag: str) -> dict[str, Any]:
        models = self.server.models
        return {
            "name": tag,
            "model": tag,
            "modified_at": _now(),
            "size": models.paths[tag].stat().st_size,
            "digest": models.digests[tag],
            "details": models.details(tag),
        }

    def do_POST(self) -> None:
        body = self._body()
        if self.path == "/_double/faults":
            self.server.faults.update(body)
            self._json(200, {"ok": True})
            return
        tag = body.get("model") or body.get("name", "")
        if self.path in ("/api/show", "/api/chat", "/api/generate") and tag not in self.server.models.paths:
            self._json(404, {"error": f"model '{tag}' not found"})
        elif self.path == "/api/show":
            self._show(tag)
        elif self.path == "/api/generate":
            self._generate(tag, body)
        elif self.path == "/api/chat":
            self._chat_with_faults(tag, body)
        else:
            self._json(404, {"error": f"unknown path {self.path}"})

    def _show(self, tag: str) -> None:
        path = self.server.models.paths[tag]
        self._json(
            200,
            {
                "modelfile": f"FROM {path}\nPARAMETER temperature 0\nPARAMETER seed 0\n",
                "parameters": "temperature                    0\nseed                           0",
                "template": "{{ .Prompt }}",
                "details": self.server.models.details(tag),
                "model_info": {"general.architecture": "gemma3"},
                "capabilities": ["completion"],
                "modified_at": _now(),
            },
        )

    def _generate(self, tag: str, body: dict[str, Any]) -> None:
        started = time.perf_counter()
        self.server.models.load(tag)
        load_ns = int((time.perf_counter() - started) * 1e9)
        self._json(
            200,
            {"model": tag, "created_at": _now(), "response": "", "done": True, "done_reason": "load",
             "total_duration": load_ns, "load_duration": load_ns},
        )  # fmt: skip

    def _chat_with_faults(self, tag: str, body: dict[str, Any]) -> None:
        faults = self.server.faults
        with faults.lock:
            over = faults.max_parallel is not None and faults.active >= faults.max_parallel
            if not over:
                faults.active += 1
        if over or faults.take("busy"):
            if not over:
                with faults.lock:
                    faults.active -= 1
            self._json(503, {"error": "server busy, please try again. maximum pending requests exceeded"})
            return
        try:
            if faults.take("error"):
                self._json(500, {"error": "llama runner process has terminated: injected failure"})
                return
            if faults.slow:
                delay, faults.slow = faults.slow, 0.0
                time.sleep(delay)  # a hung server: no answer, then the connection closes
                self.close_connection = True
                return
            self._chat(tag, body, cut=faults.take("cut"))
        finally:
            with faults.lock:
                faults.active -= 1

    def _chat(self, tag: str, body: dict[str, Any], cut: bool) -> None:
        started = time.perf_counter()
        was_loaded = tag in self.server.models.loaded
        with self.server.models.serving(tag) as engine:
            load_ns = 0 if was_loaded else int((time.perf_counter() - started) * 1e9)
            stream = body.get("stream", True)
            if stream:
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
            answer = self._answer(tag, engine, body, cut=cut)
        if answer is None:  # the stream was cut on purpose
            return
        final = {"model": tag, "created_at": _now(), "done": True, "load_duration": load_ns, **answer}
        final["total_duration"] = int((time.perf_counter() - started) * 1e9)
        if stream:
            final["message"]["content"] = ""
            final.pop("logprobs", None)
            self._chunk(final)
            self.wfile.write(b"0\r\n\r\n")
        else:
            self._json(200, final)

    def _answer(
        self, tag: str, engine: EmbeddedEngine, body: dict[str, Any], *, cut: bool
    ) -> dict[str, Any] | None:
        """Generate, streaming chunks when asked; the final message's fields, or None if cut."""
        options = body.get("options") or {}
        schema = body.get("format")
        grammar = engine.grammar(schema) if isinstance(schema, dict) else None
        top = int(body.get("top_logprobs") or 0) if body.get("logprobs") else None
        stats = Generation()
        pieces: list[str] = []
        logprobs: list[dict[str, Any]] = []
        t_prompt = time.perf_counter()
        t_first: float | None = None
        prompt = _prompt(body.get("messages", []))
        for step in engine.decoder.steps(prompt, grammar, int(options.get("num_predict") or 512), stats):
            t_first = t_first or time.perf_counter()
            pieces.append(step.text)
            entry = [_logprobs(engine, step, top)] if top is not None and step.token >= 0 else []
            logprobs += entry
            if body.get("stream", True):
                if cut and len(pieces) == 3:
                    self.wfile.write(b'10\r\n{"model": "x"')  # a chunk that never completes
                    self.wfile.flush()
                    self.close_connection = True
                    return None
                message = {"role": "assistant", "content": step.text}
                chunk = {"model": tag, "created_at": _now(), "message": message, "done": False}
                self._chunk(chunk | ({"logprobs": entry} if entry else {}))
        ended = time.perf_counter()
        t_first = t_first or ended
        return {
            "message": {"role": "assistant", "content": "".join(pieces)},
            "done_reason": "length" if stats.finish_reason == "length" else "stop",
            "prompt_eval_count": stats.prompt_tokens,
            "prompt_eval_duration": int((t_first - t_prompt) * 1e9),
            "eval_count": stats.output_tokens,
            "eval_duration": int((ended - t_first) * 1e9),
            **({"logprobs": logprobs} if top is not None else {}),
        }

    def _chunk(self, value: dict[str, Any]) -> None:
        line = json.dumps(value).encode() + b"\n"
        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
        self.wfile.flush()


class DoubleServer(ThreadingHTTPServer):
    """The HTTP server, with the models it serves and the faults to inject."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout, cut stream) is part of the tests, not an error."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def __init__(self, address: tuple[str, int], models: Models) -> None:
        super().__init__(address, Handler)
        self.models = models
        self.faults = Faults()


def main() -> None:
    parser = argparse.ArgumentParser(description="TEST DOUBLE of an Ollama server (not Ollama)")
    parser.add_argument("--model", action="append", required=True, metavar="TAG=PATH")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    paths = {tag: Path(path) for tag, path in (item.split("=", 1) for item in args.model)}
    server = DoubleServer(("127.0.0.1", args.port), Models(paths))
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
