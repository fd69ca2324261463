"""The n8n workflows executed by a real n8n 2.x, on a small real run.

Skips when n8n is not installed (`scripts/install-n8n.sh`, which writes `DIR/env` naming Node
24 and n8n; DIR is `QUANTGATE_N8N_DIR`, else the script's default).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import platformdirs
import pytest

from quantgate.inputs._variants import VariantSet
from tests.quantgate.serve.server_process import ROOT, running_server

pytestmark = [pytest.mark.slow, pytest.mark.n8n]

WORKFLOW = ROOT / "integrations" / "n8n" / "quantgate-evaluation.json"
CLI_WORKFLOW = ROOT / "integrations" / "n8n" / "quantgate-cli.json"


def _n8n() -> dict[str, str]:
    # scripts/install-n8n.sh's default: ${XDG_CACHE_HOME:-$HOME/.cache}/quantgate/n8n
    directory = Path(os.environ.get("QUANTGATE_N8N_DIR") or platformdirs.user_cache_path("quantgate") / "n8n")
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


def _execute(workflow: dict[str, Any], tmp_path: Path, **env_vars: str) -> subprocess.CompletedProcess[str]:
    """Import `workflow` into a fresh n8n user folder under `tmp_path` and execute it there."""
    n8n = _n8n()
    (tmp_path / "wf.json").write_text(json.dumps(workflow))
    env = {key: value for key, value in os.environ.items() if key != "NODES_EXCLUDE"}
    env |= {"N8N_USER_FOLDER": str(tmp_path / "n8n"), "N8N_DIAGNOSTICS_ENABLED": "false", **env_vars}
    node = [n8n["NODE"], n8n["N8N"]]
    imported = subprocess.run(
        [*node, "import:workflow", f"--input={tmp_path / 'wf.json'}"], env=env, capture_output=True, text=True
    )
    assert imported.returncode == 0, imported.stderr[-2000:]
    return subprocess.run(
        [*node, "execute", f"--id={workflow['id']}", "--rawOutput"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )


def _last_item(done: subprocess.CompletedProcess[str]) -> tuple[str, dict[str, Any]]:
    """The name of the execution's last node and its one item."""
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    execution = json.loads(done.stdout[done.stdout.index("\n{") + 1 :])  # n8n logs a few lines first
    result = execution["data"]["resultData"]
    last = result["lastNodeExecuted"]
    (item,) = result["runData"][last][-1]["data"]["main"][0]
    return last, item["json"]


BRANCHES = {
    "candidate_passes": "Candidate passes",
    "keep_reference": "Keep the reference",
    "none_passes": "Nothing passes",
}


def _two_variants(ladder: VariantSet) -> list[str]:
    return [f"llamacpp:{v.model}" for v in ladder.variants if v.name in ("F16", "Q4_K_M")]


@pytest.fixture
def server(ladder: VariantSet, tmp_path: Path) -> Iterator[str]:
    with running_server([Path(ladder.variants[0].model).parent, ROOT], tmp_path / "runs") as url:
        yield url


@pytest.mark.model
def test_the_http_workflow_ends_with_the_runs_decision(
    server: str, ladder: VariantSet, tmp_path: Path
) -> None:
    workflow = _with_settings(
        json.loads(WORKFLOW.read_text()),
        quantgate_url=server,
        dataset="restaurants",
        limit=2,
        variants=",".join(_two_variants(ladder)),
    )
    last, answer = _last_item(_execute(workflow, tmp_path))
    decision = httpx.get(f"{server}/runs/{answer['run_id']}/decision").json()
    assert answer["status"] == "complete"
    assert answer["outcome"] == decision["outcome"]
    assert last == BRANCHES[decision["outcome"]]
    assert answer["recommended"] == decision["recommended"]


@pytest.mark.model
def test_the_cli_workflow_branches_on_the_exit_status(ladder: VariantSet, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    workflow = _with_settings(
        json.loads(CLI_WORKFLOW.read_text()),
        quantgate=str(Path(sys.executable).parent / "quantgate"),
        dataset="restaurants",
        limit=2,
        variants=",".join(_two_variants(ladder)),
        out=str(out),
    )
    # n8n 2.x leaves the Execute Command node out unless NODES_EXCLUDE says otherwise.
    enabled = _execute(workflow, tmp_path, NODES_EXCLUDE='["n8n-nodes-base.localFileTrigger"]')
    last, answer = _last_item(enabled)
    decision = json.loads((out / answer["run_id"] / "decision.json").read_text())
    # 2 cases, under min_cases (30): Q4_K_M's accuracy gates are inconclusive, so never 0. 4, not 3:
    # the embedded backend decodes within the schema's grammar, and the greedy answers (58 and 66
    # tokens) end well before the 512-token limit, so F16 is valid 2 of 2 without errors and passes
    # its own gates.
    assert answer["exit_status"] == 4
    reference = decision["variants"][decision["reference"]]
    assert {gate["gate"]: gate["status"] for gate in reference["gates"]} == {
        "max_accuracy_drop": "pass", "max_flip_share": "pass", "min_format_validity": "pass",
        "max_error_rate": "pass",
    }  # fmt: skip
    assert answer["outcome"] == decision["outcome"]
    assert last == BRANCHES[decision["outcome"]]
    assert answer["recommended"] == decision["recommended"]


def test_by_default_n8n_refuses_the_cli_workflow_naming_the_node(tmp_path: Path) -> None:
    done = _execute(json.loads(CLI_WORKFLOW.read_text()), tmp_path)
    assert done.returncode != 0
    assert "n8n-nodes-base.executeCommand" in done.stdout + done.stderr
