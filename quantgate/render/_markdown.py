"""Markdown text and tables whose every cell renders as itself (decision.md, suite_decision.md)."""

from __future__ import annotations

from collections.abc import Sequence

from quantgate._formatting import terminal_text

__all__ = ["escape_markdown", "markdown_table"]

_MARKDOWN_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;"} | {char: "\\" + char for char in "\\`*_[]|"}
)


def escape_markdown(value: object) -> str:
    """`value` as Markdown text that renders as itself, in running text or a table cell.

    `<`, `>` (and `&`) become HTML entities, which every Markdown renderer shows as the
    characters; backslash, backtick, `*`, `_`, `[`, `]` and `|` are backslash-escaped; a line
    break becomes a visible `\\n`, so it cannot end a table row or start a block; any other control
    character (ESC, a bidi control, a lone surrogate) is written as its escape (`\\x1b`), so that
    a name from a user's file cannot act on a terminal showing the file.
    """
    text = str(value).translate(_MARKDOWN_ESCAPES)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\\\n")
    return terminal_text(text, lines=True)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table; every cell is escaped here."""
    lines = ["| " + " | ".join(map(escape_markdown, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(escape_markdown, row)) + " |" for row in rows]
    return [*lines, ""]
