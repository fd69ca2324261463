"""`quantgate serve`: an HTTP API that queues runs and serves their results, for automation (n8n, CI).

`create_app` builds the FastAPI application; `JobQueue` runs each request as a `quantgate run`
process, one at a time; `quantgate.serve._paths` keeps every file a request leads to inside the
server's roots.
"""

from quantgate.serve._app import create_app, run_arguments
from quantgate.serve._environment import TOKEN_ENV
from quantgate.serve._jobs import JobQueue
from quantgate.serve._paths import PathMissingError, PathRefusedError, UnusableFileError
from quantgate.serve._requests import Accepted, JobStatus, RunProgress, RunRequest, RunState

__all__ = [
    "TOKEN_ENV",
    "Accepted",
    "JobQueue",
    "JobStatus",
    "PathMissingError",
    "PathRefusedError",
    "RunProgress",
    "RunRequest",
    "RunState",
    "UnusableFileError",
    "create_app",
    "run_arguments",
]
