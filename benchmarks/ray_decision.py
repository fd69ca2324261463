"""The default ladder's decision over restaurants, local against a `ray start --head` cluster.

Issue 50 asks that a Ray run of the default ladder over restaurants gives the same records as a
local run at concurrency 1 and the same verdicts. This script runs exactly what a user types, twice,
one after the other (never side by side: two model processes on 2 cores slow each other down):

    quantgate run --dataset restaurants --concurrency 1 --no-cache --out OUT/local
    quantgate run --dataset restaurants --concurrency 1 --no-cache --out OUT/ray \\
        --executor ray --ray-address ADDRESS

`--dataset restaurants` has no budget, so each run goes on until the sequences settle every
candidate (or the dataset ends); one case at a time (`--concurrency 1`), since the composition of
a batch changes greedy outputs. The cluster is the user's: start it first, e.g.

    RAY_AUTH_MODE=token ray start --head --port=6379 --num-cpus=2

and run the script with `RAY_AUTH_MODE=token` in its environment (docs/ray.md, "Token
authentication"). It prints one JSON line: per executor the wall time, the exit status, the
recorded `evaluation_s`, the machine's load average at the start and end, each variant's verdict and
number of records; then `same_records` (every (variant, case, raw output) equal), `same_verdicts`
and, when records differ, the first few differences.

    python benchmarks/ray_decision.py --ray-address 127.0.0.1:6379 [--out DIR] [--max-cases N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from quantgate.rundir._store import load_run, read_decision, read_records


def _run(out: Path, extra: list[str], max_cases: int | None) -> dict[str, Any]:
    command = [sys.executable, "-m", "quantgate", "run", "--dataset", "restaurants", "--concurrency", "1"]
    command += ["--no-cache", "--no-report", "--json", "--out", str(out), *extra]
    if max_cases is not None:
        command += ["--max-cases", str(max_cases)]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
    wall_s = time.perf_counter() - started
    run_dirs = sorted(p for p in out.iterdir() if p.is_dir()) if out.exists() else []
    figures: dict[str, Any] = {
        "exit_status": done.returncode,
        "wall_s": round(wall_s, 1),
        "load_average_start": round(load_before, 2),
        "load_average_end": round(os.getloadavg()[0], 2),
    }
    if not run_dirs:
        return figures
    return {**figures, **run_figures(run_dirs[-1])}


def run_figures(run_dir: Path) -> dict[str, Any]:
    """What the comparison reads of a run directory: its `evaluation_s`, each variant's verdict and
    number of records, and every (variant, case, raw output)."""
    summary = load_run(run_dir).summary
    decision = read_decision(run_dir)
    records = list(read_records(run_dir))
    return {
        "run_dir": str(run_dir),
        "evaluation_s": summary.evaluation_s,
        "verdicts": {name: v.verdict for name, v in decision.variants.items()},
        "records": {name: sum(r.variant == name for r in records) for name in decision.variants},
        "outputs": sorted((r.variant, r.case_id, r.raw) for r in records),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ray-address", required=True, help="a running cluster: HOST:PORT or auto")
    parser.add_argument("--out", type=Path, default=Path("ray-decision"))
    parser.add_argument("--max-cases", type=int, default=None)
    args = parser.parse_args()
    local = _run(args.out / "local", [], args.max_cases)
    ray = _run(args.out / "ray", ["--executor", "ray", "--ray-address", args.ray_address], args.max_cases)
    local_outputs, ray_outputs = local.pop("outputs", []), ray.pop("outputs", [])
    differences = [(a, b) for a, b in zip(local_outputs, ray_outputs, strict=False) if a != b]
    figures = {
        "local": local,
        "ray": ray,
        "same_records": bool(local_outputs) and local_outputs == ray_outputs,
        "same_verdicts": "verdicts" in local and local.get("verdicts") == ray.get("verdicts"),
        "record_counts": [len(local_outputs), len(ray_outputs)],
        "first_differences": differences[:3],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
