"""`quantgate serve`: the HTTP API (FastAPI), for automation such as n8n.

    POST /runs                  queue a run (202: {"id", "status"})
    GET  /runs                  every run of this server (and those it found under --out)
    GET  /runs/{id}             its status, progress, outcome and error
    GET  /runs/{id}/summary     summary.json        GET /runs/{id}/decision   decision.json
    GET  /runs/{id}/report      report.html         POST /runs/{id}/cancel
    GET  /health                GET /docs (OpenAPI)

On a server without a token, a request whose Host it does not answer to gets 400 (DNS rebinding);
with a token (`QUANTGATE_TOKEN`),
every request, the docs included, needs `Authorization: Bearer <token>`, else 401
(`quantgate.serve._guards`, with the body limit and the 422 answers). Every file a request leads to
must lie inside the roots (`quantgate.serve._paths`), else 403. Runs go through `JobQueue`, one at a
time, at most `MAX_QUEUED` waiting (429), each with the environment `quantgate.serve._environment`
allows.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import tomli_w
from fastapi import FastAPI, HTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse

from quantgate._hardware import package_version
from quantgate.rundir._files import DECISION_JSON, REPORT_DIR, SUMMARY_FILE
from quantgate.serve._guards import BodyLimit, bearer_check, host_check, validation_error
from quantgate.serve._jobs import JobQueue, NotOursError, QueueFullError
from quantgate.serve._paths import PathMissingError, PathRefusedError, UnusableFileError, dataset_argument
from quantgate.serve._requests import Accepted, RunRequest, RunState
from quantgate.serve._variant_files import write_job_variants

_MAX_DETAIL = 1000


def run_arguments(
    request: RunRequest, roots: Sequence[Path], job_dir: Path, *, allow_env: Sequence[str] = ()
) -> list[str]:
    """`quantgate run`'s arguments for a request (its variants and gates written to the job's directory);
    `allow_env`: the variables a variant's `api_key_env` may name.

    Raises:
        PathRefusedError: A path outside the roots.
        PathMissingError: A path inside them that does not exist.
        UnusableFileError: A file inside them that cannot be used as the request says.
    """
    arguments = ["--dataset", dataset_argument(request.dataset, roots)]
    if request.variants:
        written = write_job_variants(request.variants, roots, job_dir, allow_env=allow_env)
        arguments += ["--variants", str(written)]
    if request.limit is not None:
        arguments += ["--limit", str(request.limit)]
    if request.gates:
        job_dir.mkdir(parents=True, exist_ok=True)
        (job_dir / "gates.toml").write_text(tomli_w.dumps(request.gates), encoding="utf-8")
        arguments += ["--gates", str(job_dir / "gates.toml")]
    if not request.token_fidelity:
        arguments.append("--no-token-fidelity")
    if request.noise_floor_cases is not None:
        arguments += ["--noise-floor-cases", str(request.noise_floor_cases)]
    if not request.report:
        arguments.append("--no-report")
    if request.embeddings:
        arguments.append("--embeddings")
    return arguments


def _refused(status: int, exc: Exception) -> HTTPException:
    text = str(exc)
    return HTTPException(status, text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…")


def _file_of(queue: JobQueue, job_id: str, name: str) -> Path:
    if queue.state(job_id) is None:
        raise HTTPException(404, f"no run {job_id!r}")
    run_dir = queue.run_dir(job_id)
    path = run_dir / name if run_dir is not None else None
    if path is None or not path.is_file():
        raise HTTPException(404, f"run {job_id!r} has no {name} yet")
    return path


def create_app(
    *,
    roots: Sequence[Path],
    out: Path,
    token: str | None = None,
    queue: JobQueue | None = None,
    hosts: Sequence[str] = (),
) -> FastAPI:
    """The API over `queue` (by default one writing jobs under `out`); `token`: required bearer token;
    `hosts`: the Host names a token-less server answers to besides the loopback ones (the address
    bound, `--allow-host`); with a token every Host is answered (the token guards it)."""
    jobs = queue or JobQueue(out)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        jobs.close()

    app = FastAPI(title="quantgate", version=package_version("quantgate") or "unknown", lifespan=lifespan)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_middleware(BodyLimit)
    app.middleware("http")(bearer_check(token))
    if token is None:  # a token-less server: a page on another site could reach it by DNS rebinding
        app.middleware("http")(host_check(hosts))  # added last: it runs first
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
        if jobs.full():
            raise HTTPException(429, f"{jobs.max_queued} runs are already waiting; try again later")
        job_id = jobs.new_id()
        job_dir = jobs.job_directory(job_id)
        try:
            arguments = run_arguments(request, roots, job_dir, allow_env=jobs.allow_env)
            state = jobs.submit(
                job_id,
                request,
                arguments,
                recheck=lambda: run_arguments(request, roots, job_dir, allow_env=jobs.allow_env),
            )
        except (PathRefusedError, PathMissingError, UnusableFileError, QueueFullError) as exc:
            shutil.rmtree(job_dir, ignore_errors=True)
            status = {PathRefusedError: 403, QueueFullError: 429}.get(type(exc), 422)
            raise _refused(status, exc) from None
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
        try:
            state = jobs.cancel(job_id)
        except NotOursError as exc:
            raise HTTPException(409, str(exc)) from None
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
