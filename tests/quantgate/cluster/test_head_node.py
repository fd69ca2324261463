"""`quantgate run --executor ray --ray-address HOST:PORT` against a cluster started by
`ray start --head` on 127.0.0.1, from the real command line (with the `slow` fake backend).

The head node runs with `--block`, which stops its processes when it is terminated, so the test
stops its own cluster only (`ray stop` would stop every Ray on the machine).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import psutil
import pytest

from quantgate.cluster._connection import normal_priority_workers
from quantgate.inputs._variants import write_variants_file
from quantgate.rundir._files import RECORDS_FILE
from quantgate.rundir._store import load_run, read_records
from tests.quantgate.cluster.conftest import slow_variants
from tests.quantgate.evaluate.processes import ROOT, session, wait_for
from tests.quantgate.evaluate.slow_backend import write_inputs

pytestmark = pytest.mark.slow

QUANTGATE = [sys.executable, "-m", "tests.quantgate.evaluate.slow_backend"]
"""The command line, with the `slow` backend registered."""
DRIVER_ENV = {**os.environ, "RAY_AUTH_MODE": "token"}
"""The command line's environment: Ray turns token authentication on for a `ray start` cluster on one
machine, and a driver that connects to one must say so (the token is in ~/.ray/auth_token)."""
START_S = 120.0
"""Until the head node answers, on a busy machine."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def head_node() -> Iterator[str]:
    """The address of a one-node cluster (2 CPUs, `ollama` = 1) started by `ray start --head`."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'quantgate[cluster]'")
    port = _free_port()
    # a short path: Ray's Unix sockets live under it, and their paths are limited to 107 bytes
    with tempfile.TemporaryDirectory(prefix="qg-ray-", dir="/tmp") as temp, ExitStack() as stack:
        command = [str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
                   f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=2",
                   '--resources={"ollama": 1}', "--include-dashboard=false", f"--temp-dir={temp}",
                   "--disable-usage-stats"]  # fmt: skip
        with normal_priority_workers():  # the head's workers: as on a node started so (docs/ray.md)
            head = stack.enter_context(session(command, stderr=Path(temp) / "head.log"))
        deadline = time.monotonic() + START_S
        while not _answers(port):
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"ray start --head did not answer on port {port}: {(Path(temp) / 'head.log').read_text()}"
                )
            time.sleep(0.2)
        try:
            yield f"127.0.0.1:{port}"
        finally:
            head.send_signal(signal.SIGTERM)
            head.wait(timeout=60)


def _inputs(root: Path, *, delay_s: float) -> tuple[Path, Path]:
    dataset, _ = write_inputs(root, cases=6, delay_s=delay_s)
    variants = root / "ray-variants.toml"
    write_variants_file(variants, slow_variants("ref", "a", "b", delay_s=delay_s))
    return dataset, variants


def _run(dataset: Path, variants: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [*QUANTGATE, "run", "--limit", "6", "--json", "--dataset", str(dataset), "--variants",
               str(variants), "--out", str(out), "--no-report", "--no-token-fidelity", *extra]  # fmt: skip
    return subprocess.run(command, cwd=ROOT, env=DRIVER_ENV, capture_output=True, text=True, timeout=600)


def _outputs(run_dir: Path) -> list[tuple[str, str, str | None, bool, float | None]]:
    return sorted((r.variant, r.case_id, r.raw, r.valid, r.field_accuracy) for r in read_records(run_dir))


def test_a_run_on_a_ray_start_cluster_records_what_a_local_run_does(head_node, tmp_path):
    dataset, variants = _inputs(tmp_path, delay_s=0.05)
    local = _run(dataset, variants, tmp_path / "local")
    distributed = _run(dataset, variants, tmp_path / "ray", "--executor", "ray", "--ray-address", head_node)
    assert distributed.returncode == local.returncode, distributed.stderr[-2000:]
    local_dir = tmp_path / "local" / json.loads(local.stdout)["run_id"]
    ray_dir = tmp_path / "ray" / json.loads(distributed.stdout)["run_id"]
    assert _outputs(ray_dir) == _outputs(local_dir)
    assert len(_outputs(ray_dir)) == 18
    decisions = [json.loads((d / "decision.json").read_text()) for d in (local_dir, ray_dir)]
    assert [(d["outcome"], d["recommended"]) for d in decisions] == [
        (decisions[0]["outcome"], decisions[0]["recommended"])
    ] * 2
    placements = [v.placement for v in load_run(ray_dir).variants.variants]
    assert all(p is not None and p.executor == "ray" and p.node_id for p in placements)
    assert [p.niceness for p in placements if p] == [0, 0, 0]


def _tasks_running() -> list[str]:
    """Command lines of Ray workers running a quantgate task or actor (Ray titles them
    `ray::quantgate-<variant>` and `ray::VariantActor`)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        line = " ".join(process.info["cmdline"] or [])
        if line.startswith(("ray::quantgate-", "ray::VariantActor")):
            found.append(line)
    return found


def test_ctrl_c_ends_the_actors_and_the_run_resumes_on_the_cluster(
    head_node, sessions, tmp_path, monkeypatch
):
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # for the run that `session` starts
    dataset, variants = _inputs(tmp_path, delay_s=1.0)
    out, stderr = tmp_path / "runs", tmp_path / "stderr.txt"
    command = [*QUANTGATE, "run", "--limit", "6", "--json", "--dataset", str(dataset), "--variants",
               str(variants), "--out", str(out), "--no-report", "--no-token-fidelity", "--executor", "ray",
               "--ray-address", head_node]  # fmt: skip
    run = sessions.enter_context(session(command, stderr=stderr))

    def candidates_recorded() -> int:
        paths = list(out.glob(f"*/{RECORDS_FILE}"))
        lines = paths[0].read_text().splitlines() if paths else []
        return sum(json.loads(line)["variant"] != "ref" for line in lines)

    wait_for(lambda: candidates_recorded() > 0, timeout=START_S, what="record of a candidate's actor")
    assert _tasks_running()
    run.send_signal(signal.SIGINT)
    assert run.wait(timeout=60) == 130, stderr.read_text()[-2000:]
    wait_for(lambda: not _tasks_running(), timeout=30, what="end of the actors")
    (run_dir,) = out.iterdir()
    assert load_run(run_dir).summary.status == "interrupted"
    kept = candidates_recorded()
    time.sleep(2)
    assert candidates_recorded() == kept  # nothing goes on writing

    resumed = subprocess.run(
        [
            *QUANTGATE,
            "run",
            "--resume",
            str(run_dir),
            "--json",
            "--no-report",
            "--executor",
            "ray",
            "--ray-address",
            head_node,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # 6 cases, under min_cases (30): no candidate can pass, and the reference passes: keep it (4)
    assert resumed.returncode == 4, resumed.stderr[-2000:]
    counts = Counter((r.variant, r.case_id) for r in read_records(run_dir))
    assert len(counts) == 18
    assert set(counts.values()) == {1}  # each case recorded once, across the interruption
    assert load_run(run_dir).summary.status == "complete"
