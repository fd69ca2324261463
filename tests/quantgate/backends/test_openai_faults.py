"""The OpenAI-compatible backend against servers that fail, without a model: a socket that accepts
and never answers, a server answering HTML pages, and nothing listening. Each failure is a
per-case error kind (or, for nothing listening, a variant skipped saying so) and the run goes on."""

import http.server
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from quantgate.cli._main import main
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import load_run, read_records
from quantgate.rundir._summary import VariantEntry

pytestmark = pytest.mark.slow


def run_one(tmp_path, base_url, limit=1, **options) -> tuple[VariantEntry, list[CaseRecord]]:
    variant = Variant(
        name="srv",
        backend="openai",
        model="q4_k_m",
        options={"base_url": base_url, "retry_backoff_s": 0, **options},
    )
    run_dir = run_evaluation(
        load_dataset("tech-config"),
        VariantSet(variants=[variant]),
        options=RunOptions(limit=limit, out=tmp_path, progress=False, examples=None),
    )
    return load_run(run_dir).summary.variants[0], list(read_records(run_dir))


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A socket that accepts connections and never answers a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


def html_server(status: int) -> http.server.ThreadingHTTPServer:
    class Page(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            body = b"<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"
            self.send_response(status)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_hung_server_times_the_case_out_within_the_variant_timeout(silent_server, tmp_path):
    started = time.monotonic()
    entry, records = run_one(tmp_path, silent_server, timeout_s=2, max_retries=0)
    assert [r.error_kind for r in records] == ["timeout"]
    assert "no answer from" in (records[0].error or "")
    assert "2 s" in (records[0].error or "")
    assert entry.errors_by_kind == {"timeout": 1}
    # the open's one-token call, the warm-up and the case each wait 2 s; a worker process starts too
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    ("status", "kind", "said"),
    [
        (200, "bad_response", "answered no chat completion events"),
        (502, "server_error", "an HTML page, not the API's JSON"),
    ],
)
def test_a_server_answering_html_gives_an_error_kind_and_the_run_goes_on(tmp_path, status, kind, said):
    server = html_server(status)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        entry, records = run_one(tmp_path, url, limit=2, max_retries=1)
    finally:
        server.shutdown()
    assert [r.error_kind for r in records] == [kind, kind]
    assert all(said in (r.error or "") for r in records)
    assert entry.status == "ok"
    assert entry.errors_by_kind == {kind: 2}


def test_nothing_listening_skips_the_variant_saying_so(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free once closed: nothing listens there
    entry, records = run_one(tmp_path, f"http://127.0.0.1:{port}/v1")
    assert entry.status == "skipped"
    assert records == []
    assert f"127.0.0.1:{port}" in (entry.error or "")
    assert "server not reachable" in (entry.error or "")


def test_an_openai_reference_runs_its_case_beside_an_ollama_candidate_that_is_skipped(tmp_path):
    """The reported run: `run --limit 1` with an `openai` reference (here a server whose answers
    are per-case errors) and an `ollama` candidate whose server is not reachable."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free once closed: nothing listens there
    server = html_server(200)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    file = tmp_path / "variants.toml"
    file.write_text(
        f'[[variants]]\nname = "ref"\nbackend = "openai"\nmodel = "m"\n'
        f'options = {{ base_url = "{url}", retry_backoff_s = 0, max_retries = 0 }}\n'
        f'[[variants]]\nname = "down"\nbackend = "ollama"\nmodel = "m"\n'
        f'options = {{ host = "http://127.0.0.1:{port}" }}\n'
    )
    out = tmp_path / "runs"
    args = ["run", "--dataset", "tech-config", "--variants", str(file), "--limit", "1", "--out", str(out)]
    try:
        code = main([*args, "--no-report", "--examples", "0"])
    finally:
        server.shutdown()
    (run_dir,) = out.iterdir()
    run = load_run(run_dir)
    assert [(e.name, e.status, e.cases) for e in run.summary.variants] == [
        ("ref", "ok", 1),
        ("down", "skipped", None),
    ]
    assert f"127.0.0.1:{port}" in (run.summary.variants[1].error or "")
    assert [(r.variant, r.error_kind) for r in read_records(run_dir)] == [("ref", "bad_response")]
    # decided, not "no records of the reference": the reference itself fails its validity gate
    assert code == 3
    assert "not even the reference" in (run_dir / "decision.md").read_text()
