"""The backends' one error (re-exported as `quantgate.backends.BackendError`)."""

from __future__ import annotations

from evaluators.errors import QuantgateError

__all__ = ["BackendError"]


class BackendError(QuantgateError, RuntimeError):
    """A variant that cannot be opened (missing file, unknown backend, wrong options, load failure)."""
