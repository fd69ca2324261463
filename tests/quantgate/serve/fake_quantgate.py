"""A stand-in for `quantgate` in the server's tests (not quantgate): `run ... --out DIR` writes a
decided run directory, holding its lock (a flock) as `quantgate run` does, and writes its pid to
`OUT/pid`. The dataset directory's name steers it: `fails` exits 1 with a message, `leaks` exits 1
with a message quoting a file's first bytes, `slow` waits 30 s first (SIGTERM then ends it as
`quantgate run` does, status `interrupted`), `stubborn` waits 30 s and only notes each SIGTERM in
`OUT/sigterms`."""

from __future__ import annotations

import fcntl
import json
import os
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
    lock = os.open(run_dir, os.O_RDONLY)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    (out / "pid").write_text(str(os.getpid()))
    (run_dir / "variants.json").write_text(json.dumps({"variants": [{"name": "F16"}, {"name": "Q4_K_M"}]}))
    (run_dir / "records.jsonl").write_text("{}\n")
    summary = {"status": "running", "variants": [{"name": "F16"}], "arguments": args}

    def stop(signum: int, frame: FrameType | None) -> None:
        (run_dir / "summary.json").write_text(json.dumps({**summary, "status": "interrupted"}))
        sys.exit(128 + signum)

    def note(signum: int, frame: FrameType | None) -> None:
        with open(out / "sigterms", "a") as sigterms:
            sigterms.write("SIGTERM\n")

    signal.signal(signal.SIGTERM, note if dataset == "stubborn" else stop)
    (run_dir / "summary.json").write_text(json.dumps(summary))  # the handler is in place
    if dataset == "leaks":
        leak = "quantgate: error: /etc/shadow is not a GGUF file: it starts with b'root', not b'GGUF'"
        print(leak, file=sys.stderr)
        return 1
    if dataset == "fails":
        print("quantgate: error: variant Q4_K_M: llama.cpp could not load it", file=sys.stderr)
        return 1
    if dataset in ("slow", "stubborn"):
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
