"""`quantgate serve`: the HTTP API (FastAPI), for automation such as n8n.

    POST /runs                  queue a run (202: {"id", "status"})
    GET  /runs                  every run of this server
    GET  /runs/{id}             its status, progress, outcome and error
    GET  /runs/{id}/summary     summary.json        GET /runs/{id}/decision   decision.json
    GET  /runs/{id}/report      report.html         POST /runs/{id}/cancel
    GET  /health                GET /docs (OpenAPI)

With a token (`QUANTGATE_TOKEN`), every request, the docs included, needs
`Authorization: Bearer <token>`, else 401. Paths in a request must lie inside the roots
(`quantgate.serve.paths`), else 403. Runs go through `JobQueue`, one at a time.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import tomli_w
from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse

from quantgate.hardware import package_version
from quantgate.rundir.files import DECISION_JSON, REPORT_DIR, SUMMARY_FILE
from quantgate.serve.jobs import JobQueue
from quantgate.serve.paths import PathMissingError, PathRefusedError, dataset_argument, variant_argument
from quantgate.serve.requests import Accepted, RunRequest, RunState

TOKEN_ENV = "QUANTGATE_TOKEN"


def run_arguments(request: RunRequest, roots: Sequence[Path], job_dir: Path) -> list[str]:
    """`quantgate run`'s arguments for a request (its gates written to the job's directory).

    Raises:
        PathRefusedError: A path outside the roots.
        PathMissingError: A path inside them that does not exist.
    """
    arguments = ["--dataset", dataset_argument(request.dataset, roots)]
    if request.variants:
        arguments += ["--variants", *(variant_argument(v, roots) for v in request.variants)]
    if request.limit is not None:
        arguments += ["--limit", str(request.limit)]
    if request.gates:
        job_dir.mkdir(parents=True, exist_ok=True)
        (job_dir / "gates.toml").write_text(tomli_w.dumps(request.gates), encoding="utf-8")
        arguments += ["--gates", str(job_dir / "gates.toml")]
    if not request.token_fidelity:
        arguments.append("--no-token-fidelity")
    if not request.report:
        arguments.append("--no-report")
    if request.embeddings:
        arguments.append("--embeddings")
    return arguments


def _bearer_check(
    token: str | None,
) -> Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]:
    async def check(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if token is not None:
            given = request.headers.get("authorization", "")
            if not secrets.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401)
        return await call_next(request)

    return check


def _file_of(queue: JobQueue, job_id: str, name: str) -> Path:
    if queue.state(job_id) is None:
        raise HTTPException(404, f"no run {job_id!r}")
    run_dir = queue.run_dir(job_id)
    path = run_dir / name if run_dir is not None else None
    if path is None or not path.is_file():
        raise HTTPException(404, f"run {job_id!r} has no {name} yet")
    return path


def create_app(
    *, roots: Sequence[Path], out: Path, token: str | None = None, queue: JobQueue | None = None
) -> FastAPI:
    """The API over `queue` (by default one writing jobs under `out`); `token`: required bearer token."""
    jobs = queue or JobQueue(out)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        jobs.close()

    app = FastAPI(title="quantgate", version=package_version("quantgate") or "unknown", lifespan=lifespan)
    app.middleware("http")(_bearer_check(token))
    _add_run_routes(app, jobs, [Path(r).resolve() for r in roots])
    _add_file_routes(app, jobs)
    return app


def _add_run_routes(app: FastAPI, jobs: JobQueue, roots: Sequence[Path]) -> None:
    @app.get("/health")
    def health() -> dict[str, Any]:
        states = jobs.states()
        return {"status": "ok", "version": package_version("quantgate"),
                "queued": sum(s.status == "queued" for s in states),
                "running": sum(s.status == "running" for s in states)}  # fmt: skip

    @app.post("/runs", status_code=202)
    def submit(request: RunRequest) -> Accepted:
        job_id = jobs.new_id()
        try:
            arguments = run_arguments(request, roots, jobs.job_directory(job_id))
        except PathRefusedError as exc:
            raise HTTPException(403, str(exc)) from None
        except PathMissingError as exc:
            raise HTTPException(422, str(exc)) from None
        state = jobs.submit(job_id, request, arguments)
        return Accepted(id=state.id, status=state.status)

    @app.get("/runs")
    def runs() -> list[RunState]:
        return jobs.states()

    @app.get("/runs/{job_id}")
    def run(job_id: str) -> RunState:
        state = jobs.state(job_id)
        if state is None:
            raise HTTPException(404, f"no run {job_id!r}")
        return state

    @app.post("/runs/{job_id}/cancel")
    def cancel(job_id: str) -> RunState:
        state = jobs.cancel(job_id)
        if state is None:
            raise HTTPException(404, f"no run {job_id!r}")
        return state


def _add_file_routes(app: FastAPI, jobs: JobQueue) -> None:
    @app.get("/runs/{job_id}/summary")
    def summary(job_id: str) -> Any:
        return json.loads(_file_of(jobs, job_id, SUMMARY_FILE).read_text(encoding="utf-8"))

    @app.get("/runs/{job_id}/decision")
    def decision(job_id: str) -> Any:
        return json.loads(_file_of(jobs, job_id, DECISION_JSON).read_text(encoding="utf-8"))

    @app.get("/runs/{job_id}/report", response_class=HTMLResponse)
    def report(job_id: str) -> str:
        return _file_of(jobs, job_id, f"{REPORT_DIR}/report.html").read_text(encoding="utf-8")
