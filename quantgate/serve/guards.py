"""What stands between a caller and the API's routes: the bearer token, the body size limit, and
validation errors answered without echoing the input.

`Authorization: Bearer <token>` is compared in constant time; the scheme is case-insensitive
(RFC 7235). A body over `MAX_BODY_BYTES` gets 413 before any of it is parsed. FastAPI's 422
repeats each wrong value (`input`); here only where (`loc`), what (`type`) and a message of at
most `MAX_MESSAGE` characters go back, so a huge or NaN value is neither echoed nor breaks the
answer.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 1_000_000
"""The largest request body (a run request is well under 100 KB)."""
MAX_MESSAGE = 300
"""Characters of one validation message sent back."""


def bearer_check(
    token: str | None,
) -> Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]:
    """An HTTP middleware answering 401 unless `Authorization` carries `token` (none: all pass)."""
    expected = token.encode() if token is not None else None

    async def check(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if expected is not None:
            scheme, _, given = request.headers.get("authorization", "").strip().partition(" ")
            matches = secrets.compare_digest(given.strip().encode(), expected)
            if not (matches and scheme.lower() == "bearer"):
                return JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401)
        return await call_next(request)

    return check


def _truncated(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    """422 naming each wrong field, without the value that was sent."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    detail = [
        {"loc": [str(part) for part in error.get("loc", ())][:10], "type": str(error.get("type", "")),
         "msg": _truncated(str(error.get("msg", "")))}
        for error in errors[:20]
    ]  # fmt: skip
    return JSONResponse({"detail": detail}, status_code=422)


class BodyLimit:
    """ASGI middleware: 413 for a request body over `limit` bytes, declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                await self._refuse(scope, receive, send)
                return
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = JSONResponse({"detail": f"the request body is larger than {self.limit:,} bytes"}, 413)
        await answer(scope, receive, send)
