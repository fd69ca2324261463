"""A stand-in for `quantgate` in the server's tests (not quantgate): `run ... --out DIR` writes a
decided run directory. The dataset directory's name steers it: `fails` exits 1 with a message,
`slow` waits 30 s first (SIGTERM then ends it as `quantgate run` does, status `interrupted`)."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from types import FrameType


def main() -> int:
    args = sys.argv[1:]
    out = Path(args[args.index("--out") + 1])
    dataset = Path(args[args.index("--dataset") + 1]).name
    run_dir = out / "20260101-000000-abcdef"
    run_dir.mkdir(parents=True)
    (run_dir / "variants.json").write_text(json.dumps({"variants": [{"name": "F16"}, {"name": "Q4_K_M"}]}))
    (run_dir / "records.jsonl").write_text("{}\n")
    summary = {"status": "running", "variants": [{"name": "F16"}], "arguments": args}
    (run_dir / "summary.json").write_text(json.dumps(summary))

    def stop(signum: int, frame: FrameType | None) -> None:
        (run_dir / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    if dataset == "fails":
        print("quantgate: error: variant Q4_K_M: llama.cpp could not load it", file=sys.stderr)
        return 1
    if dataset == "slow":
        time.sleep(30)
    (run_dir / "records.jsonl").write_text("{}\n{}\n{}\n")
    done = {**summary, "status": "complete", "variants": [{"name": "F16"}, {"name": "Q4_K_M"}]}
    (run_dir / "summary.json").write_text(json.dumps(done))
    decision = {"outcome": "candidate_passes", "recommended": "Q4_K_M"}
    (run_dir / "decision.json").write_text(json.dumps(decision))
    (run_dir / "report").mkdir()
    (run_dir / "report" / "report.html").write_text("<html><body>the report</body></html>")
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
