"""What `--executor ray` costs on one machine: the same run, local executor against a local Ray.

The same variants (default: F16 and Q4_K_M of the default ladder) on the same cases of a bundled
dataset, no token fidelity, in one sitting: first with the local executor (a warm worker process
per variant, in interleaved rounds), then through `RayExecutor.connect()` with a local Ray started
for the run (its start-up counted: a user pays it on every run), the same rounds over a warm Ray
actor per variant. The variants take turns either way; the difference is what Ray itself costs
(start-up, an actor per variant, sending each round's cases and records through it). Both runs
must record the same outputs (greedy decoding, one case at a time: `--concurrency 1`, since batch
composition changes outputs): the script says whether they do.

It prints one JSON line: `local_s`, `ray_s` (with start-up), `ray_startup_s`, `ratio`
(ray_s / local_s), `same_outputs`, `variants`, `cases`, and per variant and executor the peak RSS
of the evaluating process and the model's memory (`memory_mb`, `model_memory_mb`, in MiB).

    python benchmarks/ray_overhead.py [--variants F16,Q4_K_M] [--cases 6] [--dataset contacts-events]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from quantgate.cluster import RayExecutor
from quantgate.evaluate import RunOptions, run_evaluation
from quantgate.evaluate.scheduler._executor import LocalExecutor, VariantExecutor
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import VariantSet
from quantgate.ladder._quantize import build_ladder
from quantgate.rundir._store import load_run, read_records


def _timed_run(dataset: str, variants: VariantSet, cases: int, out: Path, executor: VariantExecutor) -> Path:
    options = RunOptions(limit=cases, out=out, token_fidelity=False, progress=False, concurrency=1)
    return run_evaluation(load_dataset(dataset), variants, options=options, executor=executor)


def _outputs(run_dir: Path) -> list[tuple[str, str, str | None]]:
    return sorted((r.variant, r.case_id, r.raw) for r in read_records(run_dir))


def _memory(run_dir: Path) -> dict[str, dict[str, float | None]]:
    return {
        v.name: {"memory_mb": v.memory_mb, "model_memory_mb": v.model_memory_mb}
        for v in load_run(run_dir).summary.variants
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="F16,Q4_K_M")
    parser.add_argument("--cases", type=int, default=6)
    parser.add_argument("--dataset", default="contacts-events")
    args = parser.parse_args()
    ladder, _ = build_ladder(progress=False)
    names = args.variants.split(",")
    variants = VariantSet(reference=names[0], variants=[v for v in ladder.variants if v.name in names])
    with tempfile.TemporaryDirectory() as temp:
        started = time.perf_counter()
        local = _timed_run(args.dataset, variants, args.cases, Path(temp) / "local", LocalExecutor())
        local_s = time.perf_counter() - started
        started = time.perf_counter()
        with RayExecutor.connect(progress=False) as executor:
            ray_startup_s = time.perf_counter() - started
            distributed = _timed_run(args.dataset, variants, args.cases, Path(temp) / "ray", executor)
        ray_s = time.perf_counter() - started
        same = _outputs(local) == _outputs(distributed)
        memory = {"local": _memory(local), "ray": _memory(distributed)}
    figures = {
        "local_s": round(local_s, 1),
        "ray_s": round(ray_s, 1),
        "ray_startup_s": round(ray_startup_s, 1),
        "ratio": round(ray_s / local_s, 2),
        "same_outputs": same,
        "variants": names,
        "cases": args.cases,
        "memory": memory,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
