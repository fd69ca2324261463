"""What of the server's environment a run started by the API gets: an allow-list, never the token.

A run is a `quantgate run` process; it gets the variables it needs to start and find its caches
(`RUN_ENVIRONMENT`, and every `LC_*`), and the names the operator allowed with
`quantgate serve --allow-env NAME`, which are also the only ones a variants file's `api_key_env`
may name (`quantgate.serve._variant_files`). The API's token (`TOKEN_ENV`) is in neither list.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from evaluators.errors import UsageError

TOKEN_ENV = "QUANTGATE_TOKEN"
"""The variable holding the API's bearer token."""
RUN_ENVIRONMENT = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "TEMP", "TMP",
    "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
    "XDG_DATA_HOME", "HF_HOME", "HF_HUB_OFFLINE", "OLLAMA_HOST", "OLLAMA_NUM_PARALLEL", "OMP_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES", "QUANTGATE_REFERENCE_CACHE", "QUANTGATE_SHA256_CACHE",
)  # fmt: skip
"""Variables every run gets (as the server has them): the system's, Python's, the caches', Ollama's
address and the hardware's settings; none of them holds a secret."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def allowed_names(names: Iterable[str]) -> tuple[str, ...]:
    """The operator's `--allow-env` names, checked.

    Raises:
        UsageError: Not a variable's name, or the API's token.
    """
    checked = tuple(dict.fromkeys(names))
    for name in checked:
        if name == TOKEN_ENV:
            raise UsageError(
                f"--allow-env {TOKEN_ENV}: {TOKEN_ENV} is the API's token, which no run may read"
            )
        if not _NAME.fullmatch(name):
            raise UsageError(f"--allow-env {name!r}: not the name of an environment variable")
    return checked


def run_environment(allowed: Iterable[str]) -> dict[str, str]:
    """The environment of a run: the server's `RUN_ENVIRONMENT`, `LC_*` and `allowed` variables."""
    wanted = {*RUN_ENVIRONMENT, *allowed} - {TOKEN_ENV}
    return {
        name: value
        for name, value in os.environ.items()
        if (name in wanted or name.startswith("LC_")) and name != TOKEN_ENV
    }
