"""The n8n workflow executed by a real n8n 2.x against `quantgate serve`, on a small real run.

Skips when n8n is not installed (`scripts/install-n8n.sh`, which writes `DIR/env` naming Node
24 and n8n; DIR is `QUANTGATE_N8N_DIR`, else `~/.cache/quantgate/n8n`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from quantgate.inputs.variants import VariantSet
from tests.quantgate.serve.server_process import ROOT, running_server

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.n8n]

WORKFLOW = ROOT / "integrations" / "n8n" / "quantgate-evaluation.json"


def _n8n() -> dict[str, str]:
    directory = Path(os.environ.get("QUANTGATE_N8N_DIR") or Path.home() / ".cache" / "quantgate" / "n8n")
    env_file = directory / "env"
    if not env_file.is_file():
        pytest.skip(f"n8n is not installed in {directory} (run scripts/install-n8n.sh {directory})")
    found = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    if not (Path(found.get("NODE", "")).is_file() and Path(found.get("N8N", "")).is_file()):
        pytest.skip(f"{env_file} does not name a working node and n8n")
    return found


def _with_settings(workflow: dict[str, Any], **values: object) -> dict[str, Any]:
    settings = next(node for node in workflow["nodes"] if node["name"] == "Settings")
    fields = {field["name"]: field for field in settings["parameters"]["assignments"]["assignments"]}
    for name, value in values.items():
        fields[name]["value"] = value  # a KeyError names a Settings field the workflow lacks
    return workflow


@pytest.fixture
def server(ladder: VariantSet, tmp_path: Path) -> Iterator[str]:
    with running_server([Path(ladder.variants[0].model).parent, ROOT], tmp_path / "runs") as url:
        yield url


def test_the_workflow_ends_with_the_runs_decision(server: str, ladder: VariantSet, tmp_path: Path) -> None:
    n8n = _n8n()
    variants = ",".join(f"llamacpp:{v.model}" for v in ladder.variants if v.name in ("F16", "Q4_K_M"))
    workflow = _with_settings(
        json.loads(WORKFLOW.read_text()),
        quantgate_url=server,
        dataset="contacts-events",
        limit=2,
        variants=variants,
    )
    (tmp_path / "wf.json").write_text(json.dumps(workflow))
    env = {**os.environ, "N8N_USER_FOLDER": str(tmp_path / "n8n"), "N8N_DIAGNOSTICS_ENABLED": "false"}
    node = [n8n["NODE"], n8n["N8N"]]
    subprocess.run(
        [*node, "import:workflow", f"--input={tmp_path / 'wf.json'}"],
        env=env,
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        [*node, "execute", f"--id={workflow['id']}", "--rawOutput"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    execution = json.loads(done.stdout[done.stdout.index("\n{") + 1 :])  # n8n logs a few lines first
    result = execution["data"]["resultData"]
    (item,) = result["runData"][result["lastNodeExecuted"]][-1]["data"]["main"][0]
    answer = item["json"]
    decision = httpx.get(f"{server}/runs/{answer['run_id']}/decision").json()
    assert answer["outcome"] == decision["outcome"]
    assert answer["outcome"] in ("candidate_passes", "keep_reference", "none_passes")
    assert answer["status"] == "complete"
