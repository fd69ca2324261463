"""What stands between a caller and the API's routes: the Host header, the bearer token, the body
size limit, and validation errors answered without echoing the input.

A request whose `Host` is not a name the server answers to gets 400 before anything else: the
loopback names (`localhost`, 127.0.0.0/8, `::1`), the address it binds, and the names the operator
allows (`--allow-host`); bound to every address (`0.0.0.0`, `::`), any IP address. So a web page
whose name an attacker points at 127.0.0.1 (DNS rebinding) cannot reach a token-less server. A page
of any site can still make its visitor's browser send a request to 127.0.0.1 itself (a form's POST,
`Host: 127.0.0.1`); the browser names the page's site in `Origin`, and a token-less server answers
403 when that is not a name it answers to.

`Authorization: Bearer <token>` is compared in constant time; the scheme is case-insensitive
(RFC 7235). A body over `MAX_BODY_BYTES` gets 413 before any of it is parsed. FastAPI's 422
repeats each wrong value (`input`); here only where (`loc`), what (`type`) and a message of at
most `MAX_MESSAGE` characters go back, so a huge or NaN value is neither echoed nor breaks the
answer.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 1_000_000
"""The largest request body (a run request is well under 100 KB)."""
MAX_MESSAGE = 300
"""Characters of one validation message sent back."""


_WILDCARDS = {ipaddress.ip_address("0.0.0.0"), ipaddress.ip_address("::")}
Middleware = Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]


def _host_name(header: str) -> str:
    """The name of a `Host` header, without its port, in lower case, without a final dot; "" for
    a bracketed address followed by anything but a port (`[::1]evil.example`)."""
    name = header.strip().lower()
    if name.startswith("["):  # [::1]:8321
        address, bracket, port = name[1:].partition("]")
        return address if bracket and (not port or re.fullmatch(r":\d+", port)) else ""
    if name.count(":") == 1:
        name = name.partition(":")[0]
    return name.rstrip(".")


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def host_allowed(header: str, hosts: Sequence[str]) -> bool:
    """Whether the server answers a request whose `Host` is `header` (see the module's docstring)."""
    name = _host_name(header)
    address = _address(name)
    allowed = {_host_name(host) for host in hosts}
    if name == "localhost" or name in allowed or (address is not None and address.is_loopback):
        return True
    bound = {_address(host) for host in allowed}
    return address is not None and (address in bound or bool(bound & _WILDCARDS))


def origin_allowed(header: str, hosts: Sequence[str]) -> bool:
    """Whether a request's `Origin` (the site of the web page that sent it) is one the server
    answers to as a `Host`: an http(s) origin with such a name; `null` and other schemes are not."""
    try:
        parts = urlsplit(header.strip())
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and host_allowed(parts.netloc, hosts)


def host_check(hosts: Sequence[str]) -> Middleware:
    """An HTTP middleware answering 400 to a request whose `Host` the server does not answer to,
    and 403 to one a web page of another site sent (its `Origin` names no such host): a browser
    sends a page's POST to 127.0.0.1 with `Host: 127.0.0.1`, so only `Origin` tells it apart."""

    async def check(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if not host_allowed(request.headers.get("host", ""), hosts):
            detail = (
                "this server does not answer to that Host name; its operator can allow one with "
                "`quantgate serve --allow-host NAME`"
            )
            return JSONResponse({"detail": detail}, status_code=400)
        origin = request.headers.get("origin")
        if origin is not None and not origin_allowed(origin, hosts):
            detail = (
                "a request from a web page of another site (its Origin) is refused; its operator can "
                "allow a site's name with `quantgate serve --allow-host NAME`"
            )
            return JSONResponse({"detail": detail}, status_code=403)
        return await call_next(request)

    return check


def bearer_check(token: str | None) -> Middleware:
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
