"""The project's error base classes: every error that quantgate, its graphs and its evaluators
raise on purpose derives from `QuantgateError`; the ones the user can fix, from `UsageError`.

They live here, in the lowest layer, because every layer raises them and a layer imports only
from below (`tests/test_architecture.py`): `evaluators/` and `graphs/` may not import `quantgate`,
so a base in `quantgate/` could not be theirs. `quantgate` re-exports both.

The command line maps them to its exit statuses (`quantgate.cli._main`):

- `UsageError`: exit 2, its message on one line. Bad input the user can fix: a dataset, a
  variants, gates or costs file, a path, a flag. The message names what and where, and what
  to do next.
- any other `QuantgateError`: exit 1, its message on one line. The work itself failed (a model
  call, a worker, a run that cannot be decided), in a way the code foresaw.
- anything else is a bug or a library's exception that no code turned into one of these:
  exit 1, one line naming its type, and the traceback in a log file.

Each error class also derives from the built-in exception its callers catch (`ValueError`,
`RuntimeError`, `FileNotFoundError`, ...), so `except ValueError` still catches a `UsageError`.
"""

from __future__ import annotations

import importlib.util

__all__ = [
    "EXTRAS",
    "MissingExtraError",
    "MissingInputError",
    "QuantgateError",
    "UsageError",
    "require_extra",
]

EXTRAS: dict[str, tuple[str, ...]] = {
    "serve": ("fastapi", "uvicorn"),
    "embed": ("qdrant_client",),
    "report": ("matplotlib", "jinja2"),
    "cluster": ("ray",),
    "mlflow": ("mlflow",),
}
"""The optional extras of pyproject.toml and the top-level modules each brings (one command each)."""


class QuantgateError(Exception):
    """An error the project raises on purpose: the work failed in a way the code foresaw."""


class UsageError(QuantgateError, ValueError):
    """Bad input the user can fix (a file, a path, a flag); the message says what, where, and how."""


class MissingInputError(UsageError, FileNotFoundError):
    """An input the user named is not there (a dataset directory, a variants file, a run)."""


class MissingExtraError(UsageError, ModuleNotFoundError):
    """An optional extra is not installed: the message names it and the pip command that installs it."""

    def __init__(self, extra: str, feature: str) -> None:
        super().__init__(
            f"{feature} needs the optional extra '{extra}' ({', '.join(EXTRAS[extra])}), which is not "
            f"installed: pip install 'quantgate[{extra}]'"
        )
        self.extra = extra


def require_extra(extra: str, feature: str) -> None:
    """Check that the modules of an optional extra are installed, before the work that needs them.

    Args:
        extra: The extra's name in pyproject.toml (a key of `EXTRAS`).
        feature: What needs it, as the message's subject ("quantgate serve", "the HTML report").

    Raises:
        MissingExtraError: One of its modules is not installed (or is blocked in `sys.modules`).
    """
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a module set to None, or a broken half-install
            found = False
        if not found:
            raise MissingExtraError(extra, feature)
