"""Markdown text that renders as itself and holds no control character (decision.md)."""

from __future__ import annotations

from quantgate.render._markdown import escape_markdown, markdown_table


def test_control_characters_are_written_as_their_escapes():
    """A dataset directory named with an ESC put a raw ESC into decision.md, beside the currency
    that issue 46 closed: every text escape_markdown writes shows control characters escaped."""
    name = "ds\x1b[31m\x07\x9b2J\u202eevil\ud800"
    assert escape_markdown(name) == "ds\\x1b\\[31m\\x07\\x9b2J\\u202eevil\\ud800"
    table = "\n".join(markdown_table(["dataset"], [[name]]))
    assert not any((ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F for c in table)
    assert "\\x1b" in table


def test_markdown_and_line_breaks_are_escaped_as_before():
    assert escape_markdown("a|b*c\r\nd<e>\tf") == "a\\|b\\*c\\\\nd&lt;e&gt;\tf"
