"""`quantgate run` against an Ollama server that fails, one fault at a time, over HTTP to the
Ollama TEST DOUBLE (not Ollama; real llama.cpp inference): down at start, down mid-run, errors,
a hang, a cut stream, an error line in a stream, a body that is not Ollama's JSON. A fault at the
start skips the variant with a message that says what to do; a fault mid-run is recorded on its
case with its kind, the run goes on, and nothing is lost."""

from __future__ import annotations

import json
import threading
import time

import pytest

from quantgate.cli._main import main
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._completeness import run_completeness
from quantgate.rundir._files import RECORDS_FILE
from quantgate.rundir._store import load_run, read_records
from tests.conftest import OLLAMA_TAGS

pytestmark = [pytest.mark.model, pytest.mark.slow]

Q4 = OLLAMA_TAGS["Q4_K_M"]


def run(url: str, tmp_path, *, limit: int = 2, **options: object):
    variant = Variant(
        name="q4", backend="ollama", model=Q4, options={"host": url, "retry_backoff_s": 0, **options}
    )
    run_dir = run_evaluation(
        load_dataset("tech-config"),
        VariantSet(variants=[variant]),
        options=RunOptions(limit=limit, out=tmp_path, progress=False, token_fidelity=False),
    )
    assert run_completeness(run_dir).complete  # nothing lost: every case has its record
    return load_run(run_dir).summary.variants[0], list(read_records(run_dir))


def test_a_page_that_is_not_ollama_at_the_start_skips_the_variant_saying_so(ollama_double, tmp_path):
    ollama_double.faults(html=1)  # the first request, /api/version
    entry, records = run(ollama_double.url, tmp_path)
    assert entry.status == "skipped"
    assert entry.error is not None
    assert (
        f"{ollama_double.url}/api/version answered 200 with an HTML page (44 bytes), not Ollama's JSON"
        in entry.error
    )
    assert f"is {ollama_double.url} an Ollama server?" in entry.error
    assert records == []


def test_a_page_that_is_not_ollama_mid_run_is_recorded_on_its_case(ollama_double, tmp_path):
    ollama_double.faults(spare=1, html_chat=1)  # spare: the variant's first chat is its warm-up
    entry, records = run(ollama_double.url, tmp_path)
    assert [r.error_kind for r in records] == ["bad_response", None]  # not retried: it would not help
    assert "is it an Ollama server?" in (records[0].error or "")
    assert entry.errors_by_kind == {"bad_response": 1}
    assert entry.retries == 0


@pytest.mark.parametrize(("fault", "kind"), [("stream_error", "stream_error"), ("error", "server_error")])
def test_an_error_that_persists_is_recorded_with_its_kind_and_the_run_goes_on(
    ollama_double, tmp_path, fault, kind
):
    ollama_double.faults(spare=1, **{fault: 3})  # after the warm-up, the first case: a call and 2 retries
    entry, records = run(ollama_double.url, tmp_path)
    assert [r.error_kind for r in records] == [kind, None]
    assert entry.retries == 2
    assert records[1].valid


def test_an_error_line_once_is_retried(ollama_double, tmp_path):
    ollama_double.faults(spare=1, stream_error=1)
    entry, records = run(ollama_double.url, tmp_path, limit=1)
    assert (entry.errors, entry.retries, records[0].valid) == (0, 1, True)


def test_a_hung_server_is_said_while_waited_for_then_timed_out(ollama_double, tmp_path, capfd):
    ollama_double.faults(spare=1, slow=30)
    entry, records = run(
        ollama_double.url, tmp_path, limit=1, first_token_timeout_s=3, notice_every_s=1, max_retries=0
    )
    assert records[0].error_kind == "timeout"
    assert f"no answer from {ollama_double.url} for 3 s (first_token_timeout_s" in (records[0].error or "")
    err = capfd.readouterr().err  # from the variant's worker process
    assert (
        f"quantgate: waiting for Ollama at {ollama_double.url} to answer with {Q4} (first token): 1 s of 3"
        in err
    )
    assert entry.errors_by_kind == {"timeout": 1}


def test_a_server_that_goes_down_mid_run_leaves_recorded_connection_errors(ladder, tmp_path):
    from tests.model_fixtures import OllamaDoubleProcess

    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    server = OllamaDoubleProcess({Q4: q4.model})
    out = tmp_path / "runs"

    def stop_after_the_first_record() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            found = list(out.glob(f"*/{RECORDS_FILE}"))
            if found and found[0].read_text().count("\n") >= 1:
                server.stop()
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=stop_after_the_first_record)
    watcher.start()
    try:
        entry, records = run(server.url, out, limit=3)
    finally:
        watcher.join()
        server.stop()
    assert records[0].valid
    assert [r.error_kind for r in records[1:]] == ["connection", "connection"]
    assert "server not reachable" in (records[1].error or "")
    assert entry.errors_by_kind == {"connection": 2}


def test_the_command_line_over_a_failing_server_prints_no_traceback(
    ollama_double, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("OLLAMA_HOST", ollama_double.url.removeprefix("http://"))
    # after the warm-up: the first case's only call; the second's first
    ollama_double.faults(spare=1, html_chat=1, stream_error=1)
    args = [
        "run",
        "--dataset",
        "tech-config",
        "--limit",
        "2",
        "--out",
        str(tmp_path),
        "--no-report",
        "--json",
    ]
    assert main([*args, "--no-token-fidelity", "--variants", f"ollama:{Q4}"]) == 3  # 1 error in 2: gates fail
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    (entry,) = json.loads(captured.out)["variants"]
    assert (entry["errors_by_kind"], entry["retries"]) == ({"bad_response": 1}, 1)
