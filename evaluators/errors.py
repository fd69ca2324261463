"""The project's error base classes: every error that quantgate, its graphs and its evaluators
raise on purpose derives from `QuantgateError`; the ones the user can fix, from `UsageError`.

They live here, in the lowest layer, because every layer raises them and a layer imports only
from below (`tests/test_architecture.py`): `evaluators/` and `graphs/` may not import `quantgate`,
so a base in `quantgate/` could not be theirs. `quantgate` re-exports both.

The command line maps them to its exit statuses (`quantgate.cli.main`):

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

__all__ = ["MissingInputError", "QuantgateError", "UsageError"]


class QuantgateError(Exception):
    """An error the project raises on purpose: the work failed in a way the code foresaw."""


class UsageError(QuantgateError, ValueError):
    """Bad input the user can fix (a file, a path, a flag); the message says what, where, and how."""


class MissingInputError(UsageError, FileNotFoundError):
    """An input the user named is not there (a dataset directory, a variants file, a run)."""
