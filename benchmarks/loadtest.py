"""Load on the embedded backend: the ladder's Q4_K_M (and F16) at concurrency 1, 2 (and 4).

Runs `quantgate load` (`run_load_test`) with a few requests per level and small outputs, so it
ends in a few minutes on 2 cores, then prints the load table and the speed-up of the
aggregate throughput over level 1. The variant is opened once, in one worker process, with
as many slots as the largest level: a level of k decodes k sequences in one batch.

    python benchmarks/loadtest.py [--variants Q4_K_M F16] [--levels 1,2,4] [--requests 6]
        [--max-tokens 96] [--dataset contacts-events] [--limit 6]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from quantgate._hardware import hardware
from quantgate.inputs._dataset import load_dataset
from quantgate.ladder._quantize import build_ladder
from quantgate.loadtest._level_specs import parse_levels
from quantgate.loadtest._levels import LoadOptions
from quantgate.loadtest._loadtest_run import run_load_test
from quantgate.render._load_table import render_load
from quantgate.rundir._store import load_run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", nargs="+", default=["Q4_K_M"], help="ladder variants (default Q4_K_M)")
    parser.add_argument("--levels", default="1,2", help="concurrency levels (default 1,2)")
    parser.add_argument("--requests", type=int, default=6, help="requests per level (default 6)")
    parser.add_argument("--max-tokens", type=int, default=96, help="generation limit (default 96)")
    parser.add_argument("--dataset", default="contacts-events")
    parser.add_argument("--limit", type=int, default=6, help="cases whose prompts are sent (default 6)")
    args = parser.parse_args()

    ladder, _ = build_ladder()
    chosen = [v for v in ladder.variants if v.name in args.variants]
    options = LoadOptions(
        levels=parse_levels(args.levels), requests=args.requests, max_tokens=args.max_tokens, cases=args.limit
    )
    machine = hardware()
    print(f"machine: {machine}")
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        run_dir = run_load_test(load_dataset(args.dataset), chosen, options=options, out=Path(out))
        elapsed = time.perf_counter() - started
        section = load_run(run_dir).summary.load
    if section is None:
        raise SystemExit(f"{run_dir}: the load test wrote no load section")
    print(render_load(section))
    for variant in section.variants:
        levels = variant.levels
        base = levels[0].aggregate_tokens_per_s if levels else None
        for level in levels[1:]:
            rate = level.aggregate_tokens_per_s
            if base and rate:
                name = f"{variant.name} level {level.name}"
                print(f"{name}: aggregate tok/s x{rate / base:.2f} of the first level's")
    print(f"wall time: {elapsed:.1f} s")


if __name__ == "__main__":
    main()
