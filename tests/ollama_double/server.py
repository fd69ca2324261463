"""The Ollama TEST DOUBLE's HTTP server: its endpoints, errors inside a stream, injected faults.

It is not Ollama (see the package docstring). Faults are injected through
`POST /_double/faults` (not part of Ollama's API): `{"busy": n}` answers the next n chats with
503, `{"error": n}` with 500, `{"slow": seconds}` leaves the next chat unanswered that long,
`{"cut": n}` closes the next n streams in the middle, `{"stream_error": n}` ends the next n
streams with an error line after a few tokens, `{"html": n}` answers the next n requests of
any endpoint with a 200 HTML page (what a proxy or another program on the port gives),
`{"html_chat": n}` the next n chats, and `{"max_queue": k}` sets how many requests may wait
(OLLAMA_MAX_QUEUE). `{"spare": n}` answers the next n chats normally before any chat fault
applies (a run's first chat of a variant is its warm-up, which a test aiming at a case spares).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from quantgate.backends._base_prompt import render_prompt
from quantgate.backends.llamacpp._engine import EmbeddedEngine
from quantgate.backends.llamacpp._greedy import Generation
from tests.ollama_double.embed import embed
from tests.ollama_double.logprobs import logprob_entry as _logprobs
from tests.ollama_double.models import DEFAULT_CONTEXT_LENGTH, DEFAULT_NUM_KEEP, Models, keep_alive_s
from tests.ollama_double.queue import BUSY, Admission, QueueFullError
from tests.ollama_double.tools import ToolAnswers, chat_problem, final_fields, prompt_messages

VERSION = "0.0.0-quantgate-test-double"
STREAM_ERROR = "an error was encountered while running the model"
"""The error line of docs.ollama.com/api/errors' example of an error inside a stream."""


def _now(offset_s: float = 0.0) -> str:
    moment = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=offset_s)
    return moment.isoformat().replace("+00:00", "Z")


class Faults:
    """Injected failures, consumed by the requests that trigger them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.busy = self.error = self.cut = self.stream_error = self.html = self.html_chat = self.spare = 0
        self.slow = 0.0

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


def _prompt(raw: list[dict[str, Any]]) -> str:
    """The completion prompt; a final assistant message is left open for the model to continue."""
    messages = prompt_messages(raw)
    if messages and isinstance(messages[-1], AIMessage):
        return render_prompt(messages[:-1]) + messages[-1].text
    return render_prompt(messages)


def _cut(tokens: list[int], num_ctx: int, num_keep: int) -> list[int]:
    """A prompt cut to the context as Ollama cuts it, silently: its runner logs `truncating input
    prompt limit=L prompt=P keep=4 new=L`, keeping the first `num_keep` tokens and the end."""
    if len(tokens) <= num_ctx:
        return tokens
    return tokens[:num_keep] + tokens[len(tokens) - (num_ctx - num_keep) :]


class Handler(BaseHTTPRequestHandler):
    """One request; the server object carries `models`, `faults` and `admission`."""

    protocol_version = "HTTP/1.1"
    server: DoubleServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        body: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
        return body

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, status: int, value: dict[str, Any]) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")

    def _html_instead(self, fault: str = "html") -> bool:
        """The `html` fault: a 200 HTML page, as a proxy or another program on the port answers."""
        if not self.server.faults.take(fault):
            return False
        self._send(200, b"<html><body><h1>It works!</h1></body></html>", "text/html")
        return True

    def do_GET(self) -> None:
        if self._html_instead():
            return
        models = self.server.models
        if self.path == "/api/version":
            self._json(200, {"version": VERSION})
        elif self.path == "/api/tags":
            self._json(200, {"models": [self._entry(tag) for tag in models.paths]})
        elif self.path == "/api/ps":
            self._json(200, {"models": self._running()})
        elif self.path == "/_double/tool_requests":
            self._json(200, {"requests": list(self.server.tools.requests)})
        else:
            self._json(404, {"error": f"unknown path {self.path}"})

    def _running(self) -> list[dict[str, Any]]:
        """/api/ps: the loaded models, each with when it will be unloaded (`expires_at`, from its
        `keep_alive`), its memory (`size`), its memory in VRAM (`size_vram`: 0, a CPU-only server)
        and its context (`context_length`)."""
        models = self.server.models
        models.expire()
        entries = []
        for tag, loaded in list(models.loaded.items()):
            forever = loaded.expires_at is None  # a negative keep_alive: a date centuries ahead
            expires = "2318-01-01T00:00:00Z" if forever else _now((loaded.expires_at or 0) - time.time())
            entries.append(
                {**self._entry(tag), "expires_at": expires, "size_vram": 0, "context_length": loaded.num_ctx}
            )
        return entries

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
            self._set_faults(body)
            return
        if self.path == "/_double/tool_answers":
            self.server.tools.configure(body)
            self._json(200, {"ok": True})
            return
        if self._html_instead():
            return
        tag = self.server.models.find(body.get("model") or body.get("name", ""))
        if self.path in ("/api/show", "/api/chat", "/api/generate", "/api/embed") and tag is None:
            self._json(404, {"error": f"model '{body.get('model') or body.get('name', '')}' not found"})
            return
        assert tag is not None
        try:
            keep_alive = keep_alive_s(body.get("keep_alive"))
        except ValueError as exc:
            self._json(400, {"error": str(exc)})
            return
        if self.path == "/api/show":
            self._show(tag)
        elif self.path == "/api/generate":
            self._generate(tag, body, keep_alive)
        elif self.path == "/api/chat" and (problem := chat_problem(body)):
            self._json(400, {"error": problem})  # Ollama refuses a body it cannot decode
        elif self.path == "/api/chat":
            spared = self.server.faults.take("spare")
            if spared or not self._html_instead("html_chat"):
                self._admitted_chat(tag, body, keep_alive, spared=spared)
        elif self.path == "/api/embed":
            self._json(*embed(self.server.models, tag, body))
        else:
            self._json(404, {"error": f"unknown path {self.path}"})

    def _set_faults(self, body: dict[str, Any]) -> None:
        if "max_queue" in body:
            self.server.admission.max_queue = int(body.pop("max_queue"))
        self.server.faults.update(body)
        self._json(200, {"ok": True})

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
                "capabilities": ["completion", "tools"],  # tool calls: scripted (tools.py)
                "modified_at": _now(),
            },
        )

    def _generate(self, tag: str, body: dict[str, Any], keep_alive: float | None) -> None:
        """Only the empty generation: load the model (docs.ollama.com/faq, "How can I preload a model
        into Ollama...": "send the Ollama server an empty request"), or unload it when `keep_alive` is 0."""
        models = self.server.models
        if keep_alive == 0 and not body.get("prompt"):
            models.unload(tag)
            self._json(200, {"model": tag, "created_at": _now(), "response": "", "done": True,
                             "done_reason": "unload"})  # fmt: skip
            return
        num_ctx = models.num_ctx(tag, body.get("options") or {})
        with models.serving(tag, num_ctx, keep_alive) as (_, load_ns):
            pass
        self._json(
            200,
            {"model": tag, "created_at": _now(), "response": "", "done": True, "done_reason": "load",
             "total_duration": load_ns, "load_duration": load_ns},
        )  # fmt: skip

    def _admitted_chat(
        self, tag: str, body: dict[str, Any], keep_alive: float | None, *, spared: bool
    ) -> None:
        faults = self.server.faults
        try:
            with self.server.admission.admitted():
                if spared:
                    self._chat(tag, body, keep_alive, spared=True)
                elif faults.take("busy"):
                    self._json(503, {"error": BUSY})
                elif faults.take("error"):
                    self._json(500, {"error": "llama runner process has terminated: injected failure"})
                elif faults.slow:
                    delay, faults.slow = faults.slow, 0.0
                    time.sleep(delay)  # a hung server: no answer, then the connection closes
                    self.close_connection = True
                else:
                    self._chat(tag, body, keep_alive)
        except QueueFullError as exc:
            self._json(503, {"error": str(exc)})

    def _chat(
        self, tag: str, body: dict[str, Any], keep_alive: float | None, *, spared: bool = False
    ) -> None:
        started = time.perf_counter()
        models, faults = self.server.models, self.server.faults
        num_ctx = models.num_ctx(tag, body.get("options") or {})
        stream = body.get("stream", True)
        with models.serving(tag, num_ctx, keep_alive) as (loaded, load_ns):
            if stream:
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
            ending = None
            if not spared:
                ending = "cut" if faults.take("cut") else "error" if faults.take("stream_error") else None
            answer = self._answer(tag, loaded.engine, body, num_ctx=num_ctx, ending=ending)
        if answer is None:  # the stream was cut, or ended with an error line, on purpose
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

    def _end_early(self, ending: str) -> None:
        """End a stream after a few tokens: cut mid-chunk, or with an error line (docs.ollama.com/api/
        errors: "If an error occurs mid-stream, the error will be returned as an object in the
        application/x-ndjson format with an error property. Since the response has already started,
        the status code of the response will not be changed.")."""
        if ending == "cut":
            self.wfile.write(b'10\r\n{"model": "x"')  # a chunk that never completes
            self.wfile.flush()
        else:
            self._chunk({"error": STREAM_ERROR})
            self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True

    def _answer(
        self, tag: str, engine: EmbeddedEngine, body: dict[str, Any], *, num_ctx: int, ending: str | None
    ) -> dict[str, Any] | None:
        """Generate, streaming chunks when asked; the final message's fields, or None if ended early."""
        if body.get("tools"):
            return self._tool_answer(tag, engine, body, num_ctx=num_ctx)
        options = body.get("options") or {}
        schema = body.get("format")
        grammar = engine.grammar(schema) if isinstance(schema, dict) else None
        top = int(body.get("top_logprobs") or 0) if body.get("logprobs") else None
        stats = Generation()
        pieces: list[str] = []
        logprobs: list[dict[str, Any]] = []
        t_prompt = time.perf_counter()
        t_first: float | None = None
        tokens = engine.llama.tokenize(_prompt(body.get("messages", [])).encode("utf-8"))
        prompt = _cut(tokens, num_ctx, int(options.get("num_keep", DEFAULT_NUM_KEEP)))
        for step in engine.decoder.steps(prompt, grammar, int(options.get("num_predict") or 512), stats):
            t_first = t_first or time.perf_counter()
            pieces.append(step.text)
            entry = [_logprobs(engine, step, top)] if top is not None and step.token >= 0 else []
            logprobs += entry
            if body.get("stream", True):
                if ending and len(pieces) == 3:
                    self._end_early(ending)
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

    def _tool_answer(
        self, tag: str, engine: EmbeddedEngine, body: dict[str, Any], *, num_ctx: int
    ) -> dict[str, Any]:
        """A chat with `tools`: the scripted answer (`tools.py`), its message in one chunk when streaming."""
        message = self.server.tools.message(tag, body)
        tokens = engine.llama.tokenize(_prompt(body.get("messages", [])).encode("utf-8"))
        prompt = _cut(tokens, num_ctx, int((body.get("options") or {}).get("num_keep", DEFAULT_NUM_KEEP)))
        if body.get("stream", True):
            self._chunk({"model": tag, "created_at": _now(), "message": message, "done": False})
            message = {"role": "assistant", "content": ""}
        return final_fields(message, len(prompt))

    def _chunk(self, value: dict[str, Any]) -> None:
        line = json.dumps(value).encode() + b"\n"
        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
        self.wfile.flush()


class DoubleServer(ThreadingHTTPServer):
    """The HTTP server, with the models it serves, the faults to inject and its queue."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout, cut stream) is part of the tests, not an error."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def __init__(self, address: tuple[str, int], models: Models, admission: Admission | None = None) -> None:
        super().__init__(address, Handler)
        self.models = models
        self.faults = Faults()
        self.admission = admission or Admission()
        self.tools = ToolAnswers()


def main() -> None:
    parser = argparse.ArgumentParser(description="TEST DOUBLE of an Ollama server (not Ollama)")
    parser.add_argument("--model", action="append", required=True, metavar="TAG=PATH")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--context-length", type=int, default=DEFAULT_CONTEXT_LENGTH, help="as OLLAMA_CONTEXT_LENGTH"
    )
    parser.add_argument("--max-queue", type=int, default=512, help="as OLLAMA_MAX_QUEUE")
    parser.add_argument("--max-context", type=int, help="serve the models as if trained for this many tokens")
    args = parser.parse_args()
    paths = {tag: Path(path) for tag, path in (item.split("=", 1) for item in args.model)}
    models = Models(paths, context_length=args.context_length, max_context=args.max_context)
    server = DoubleServer(("127.0.0.1", args.port), models, Admission(max_queue=args.max_queue))
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()
