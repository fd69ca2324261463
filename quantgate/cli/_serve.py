"""`quantgate serve`: the HTTP API for automation (see `quantgate.serve`)."""

from __future__ import annotations

import argparse
import ipaddress
import os
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.errors import UsageError, require_extra
from quantgate.cli._common import check_output_dir

if TYPE_CHECKING:
    from quantgate.cli._common import Commands

DEFAULT_PORT = 8321


def _local(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _serve(args: argparse.Namespace) -> int:
    require_extra("serve", "quantgate serve")
    import uvicorn

    from quantgate.serve import TOKEN_ENV, JobQueue, create_app

    token = os.environ.get(TOKEN_ENV) or None
    if not _local(args.host) and token is None:
        raise UsageError(
            f"--host {args.host} reaches beyond this machine: set {TOKEN_ENV} so that every request needs "
            "a bearer token, or keep the default --host 127.0.0.1"
        )
    roots = [Path(r) for r in args.root] if args.root else [Path.cwd()]
    for root in roots:
        if not root.is_dir():
            raise UsageError(f"--root {root}: not a directory")
    out = Path(args.out)
    check_output_dir(out)
    if args.run_timeout is not None and not 0 < args.run_timeout < float("inf"):
        raise UsageError(f"--run-timeout {args.run_timeout:g}: give a number of seconds above 0")
    queue = JobQueue(out, run_timeout_s=args.run_timeout, allow_env=args.allow_env or ())
    hosts = [args.host, *(args.allow_host or ())]
    app = create_app(roots=roots, out=out, token=token, queue=queue, hosts=hosts)
    where = f"http://{args.host}:{args.port}"
    print(f"quantgate serve on {where} (API docs: {where}/docs); roots: {', '.join(map(str, roots))}; "
          f"runs in {out}; token {'required' if token else 'not set'}; runs may read "
          f"{', '.join(queue.allow_env) or 'no extra variable'}", flush=True)  # fmt: skip
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def add_parser(commands: Commands) -> None:
    """Add `quantgate serve`."""
    serve = commands.add_parser(
        "serve",
        help="an HTTP API that queues runs and serves their summary, decision and report",
        description="POST /runs queues a run; GET /runs/{id}, /summary, /decision, /report read it; "
        f"POST /runs/{{id}}/cancel stops it. With {'QUANTGATE_TOKEN'} set, requests need "
        "'Authorization: Bearer <token>'.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT})")
    serve.add_argument(
        "--root",
        action="append",
        metavar="DIR",
        help="a directory requests may name files in (repeatable; default: the working directory); "
        "bundled dataset names are always allowed",
    )
    serve.add_argument("--out", default="runs", help="where each run's directory goes (default: runs)")
    serve.add_argument(
        "--run-timeout",
        type=float,
        metavar="SECONDS",
        help="stop every run after this wall-clock time, as by cancel (a request's timeout_s may ask for "
        "less; default: no limit)",
    )
    serve.add_argument(
        "--allow-env",
        action="append",
        metavar="NAME",
        help="an environment variable runs get and a variants file's api_key_env may name (repeatable; "
        "default: none; never QUANTGATE_TOKEN)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="a Host name the server answers to besides localhost, the loopback addresses and --host "
        "(repeatable; e.g. the name clients reach it by)",
    )
    serve.set_defaults(handler=_serve)
