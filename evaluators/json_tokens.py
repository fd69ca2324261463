"""Which tokens of a JSON answer are its structure and which are its values.

Token fidelity reports top-1 agreement on the two kinds apart: a flipped structural token
breaks the JSON (or a key), a flipped value token changes an extracted value. The rule works
on the answer's bytes, which a small JSON scanner classes (no validation: it never fails):

- structural: outside strings, the punctuation `{ } [ ] : ,` and the whitespace between them;
  an object key, its quotes included; the two quotes around a string value;
- value: the bytes inside a string value (between its quotes, escapes included) and the bytes of
  a bare literal (a number, `true`, `false`, `null`);
- neither (None): bytes before the first `{` or `[` and after the top-level value closes (a
  code fence, a sentence around the JSON).

A token is `"value"` if any of its bytes is a value byte, otherwise `"structural"` if any of
its bytes is structural, otherwise None. So ` "Acme` (a value's opening quote and its first
letters) is a value token, `":"` between a key and a string value is structural, and so is
`"name` at the start of a key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["TokenKind", "byte_kinds", "token_kinds"]

TokenKind = Literal["structural", "value"]
"""What a token of a JSON answer is (`token_kinds`)."""

_WHITESPACE = frozenset(b" \t\r\n")


@dataclass
class _Scanner:
    """The state of a scan: open containers, and where in a string it is."""

    stack: list[int] = field(default_factory=list)
    started: bool = False
    done: bool = False
    in_string: bool = False
    in_key: bool = False
    escaped: bool = False
    expect_key: bool = False

    def string_byte(self, byte: int) -> TokenKind:
        if self.escaped:
            self.escaped = False
        elif byte == ord("\\"):
            self.escaped = True
        elif byte == ord('"'):
            self.in_string = False
            return "structural"
        return "structural" if self.in_key else "value"

    def open_or_close(self, byte: int) -> None:
        if byte in b"{[":
            self.stack.append(byte)
            self.started = True
            self.expect_key = byte == ord("{")
        elif self.stack:
            self.stack.pop()
            self.done = not self.stack

    def byte(self, byte: int) -> TokenKind | None:
        if self.done or (not self.started and byte not in b"{["):
            return None
        if self.in_string:
            return self.string_byte(byte)
        if byte in b"{[]}":
            self.open_or_close(byte)
        elif byte == ord(":"):
            self.expect_key = False
        elif byte == ord(","):
            self.expect_key = self.stack[-1:] == [ord("{")]
        elif byte == ord('"'):
            self.in_string = True
            self.in_key = self.expect_key and self.stack[-1:] == [ord("{")]
        elif byte not in _WHITESPACE:
            return "value"  # a number or a literal
        return "structural"


def byte_kinds(answer: bytes) -> list[TokenKind | None]:
    """The kind of each byte of a JSON answer (see the module's rule)."""
    scanner = _Scanner()
    return [scanner.byte(byte) for byte in answer]


def token_kinds(pieces: Sequence[bytes]) -> tuple[TokenKind | None, ...]:
    """The kind of each token of a JSON answer, given the tokens' bytes in order.

    Args:
        pieces: Each token's bytes; their concatenation is the answer that is scanned.

    Returns:
        "structural", "value" or None (outside the JSON) per token.
    """
    kinds = byte_kinds(b"".join(pieces))
    result: list[TokenKind | None] = []
    start = 0
    for piece in pieces:
        own = kinds[start : start + len(piece)]
        start += len(piece)
        result.append("value" if "value" in own else "structural" if "structural" in own else None)
    return tuple(result)
