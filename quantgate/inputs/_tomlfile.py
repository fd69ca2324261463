"""Reading a flat TOML file a user gives (gates, costs), with errors that name the file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

__all__ = ["read_toml", "validation_message"]


def read_toml(path: str | Path, *, what: str, error: type[ValueError]) -> dict[str, Any]:
    """The file's table.

    Args:
        path: The file.
        what: What the file is, for the message (`gates file`).
        error: The exception to raise.

    Raises:
        error: The file is missing, unreadable, not UTF-8 or not valid TOML; the message names it.
    """
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise error(f"{path}: cannot read it: {exc.strerror or exc}") from None


def validation_message(exc: ValidationError, where: str) -> str:
    """One line per problem of a validated file: where, the key, what is wrong."""
    return "\n".join(f"{where}: {'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors())
