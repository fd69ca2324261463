"""TEST DOUBLE of an Ollama server. It is not Ollama.

No Ollama binary can run where quantgate is developed, so the tests talk HTTP to this
stand-in, which speaks the documented Ollama REST protocol (`/api/chat` streaming NDJSON and
non-streaming with `format` as a JSON schema, `/api/generate` to load, `/api/show`, `/api/ps`,
`/api/tags`, `/api/version`) with real inference: llama.cpp through quantgate's embedded
engine, on real GGUF files. langchain-ollama's real client code therefore runs end to end.

Faults are injected through `POST /_double/faults` (not part of Ollama's API):
`{"busy": n}` answers the next n chats with 503, `{"error": n}` with 500, `{"slow": seconds}`
leaves the next chat unanswered that long, `{"cut": n}` closes the next n streams in the middle, and
`{"max_parallel": k}` answers 503 "server busy" to chats beyond k at once.

    python -m tests.ollama_double --model gemma3:270m-q4_K_M=/path/model.gguf [--port 0]

prints `listening on http://127.0.0.1:PORT` once ready.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from quantgate.backends.greedy import Generation
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
        with self.lock:
            if tag not in self.loaded:
                for other in list(self.loaded):
                    self.loaded.pop(other).close()
                self.loaded[tag] = EmbeddedEngine(self.paths[tag], n_ctx=N_CTX)
            return self.loaded[tag]


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


def _messages(raw: list[dict[str, Any]]) -> list[BaseMessage]:
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return [kinds[m["role"]](content=m.get("content", "")) for m in raw if m.get("role") in kinds]


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
        engine = self.server.models.load(tag)
        load_ns = 0 if was_loaded else int((time.perf_counter() - started) * 1e9)
        options = body.get("options") or {}
        schema = body.get("format")
        grammar = engine.grammar(schema) if isinstance(schema, dict) else None
        prompt = render_prompt(_messages(body.get("messages", [])))
        stats = Generation()
        stream = body.get("stream", True)
        pieces: list[str] = []
        with engine.lock:
            t_prompt = time.perf_counter()
            t_first: float | None = None
            if stream:
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
            for piece in engine.decoder.generate(
                prompt, grammar, int(options.get("num_predict") or 512), stats
            ):
                t_first = t_first or time.perf_counter()
                pieces.append(piece)
                if stream:
                    if cut and len(pieces) == 3:
                        self.wfile.write(b'10\r\n{"model": "x"')  # a chunk that never completes
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    message = {"role": "assistant", "content": piece}
                    self._chunk({"model": tag, "created_at": _now(), "message": message, "done": False})
            ended = time.perf_counter()
        t_first = t_first or ended
        final = {
            "model": tag,
            "created_at": _now(),
            "message": {"role": "assistant", "content": "" if stream else "".join(pieces)},
            "done": True,
            "done_reason": "length" if stats.finish_reason == "length" else "stop",
            "total_duration": int((ended - started) * 1e9),
            "load_duration": load_ns,
            "prompt_eval_count": stats.prompt_tokens,
            "prompt_eval_duration": int((t_first - t_prompt) * 1e9),
            "eval_count": stats.output_tokens,
            "eval_duration": int((ended - t_first) * 1e9),
        }
        if stream:
            self._chunk(final)
            self.wfile.write(b"0\r\n\r\n")
        else:
            self._json(200, final)

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
