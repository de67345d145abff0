"""Reading and checking what an HTTP client sent, shared by every route of the node's API.

A request that cannot be served as asked raises `HttpError` with the status and a message that
names what was wrong; `handled` turns it into the JSON error body every route answers with,
``{"code": status, "message": ...}`` (Bee's shape, so bee-js reads our errors as its own).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from string import hexdigits
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

__all__ = [
    "MAX_UINT64",
    "HttpError",
    "error_response",
    "flag",
    "handled",
    "parse_address",
    "parse_hex",
    "parse_uint",
    "read_body",
    "receipts_header",
    "tag_header",
]

MAX_UINT64 = 2**64 - 1

_Answer = TypeVar("_Answer", bound=Response)


class HttpError(Exception):
    """The request cannot be served as asked: answered with ``status`` and this message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"code": status, "message": message}, status_code=status)


def handled(
    handler: Callable[[Request], Awaitable[_Answer]],
) -> Callable[[Request], Awaitable[_Answer | JSONResponse]]:
    """``handler``, with the `HttpError` it raises answered as an error response."""

    async def run(request: Request) -> _Answer | JSONResponse:
        try:
            return await handler(request)
        except HttpError as exc:
            return error_response(exc.status, exc.message)

    return run


def parse_hex(text: str, size: int, what: str) -> bytes:
    """``size`` bytes from ``2 * size`` hex characters (a 0x prefix allowed); a 400 naming ``what``
    otherwise."""
    raw = text[2:] if text[:2] in ("0x", "0X") else text
    if not all(c in hexdigits for c in raw):
        raise HttpError(400, f"{what} is not hexadecimal: {text!r}")
    if len(raw) != 2 * size:
        got = f"got {len(raw)} hex characters"
        raise HttpError(400, f"{what} must be {size} bytes ({2 * size} hex characters), {got}")
    return bytes.fromhex(raw)


def parse_address(text: str) -> bytes:
    """A 32-byte chunk address or reference from 64 hex characters."""
    return parse_hex(text, 32, "address")


def parse_reference(text: str) -> bytes:
    """A file reference: 32 bytes (64 hex characters), or 64 (128 hex) for an encrypted file
    (its root's address, then its key)."""
    raw = text[2:] if text[:2] in ("0x", "0X") else text
    if len(raw) == 128:
        return parse_hex(text, 64, "encrypted reference")
    return parse_hex(text, 32, "reference")


def parse_uint(text: str | None, what: str, limit: int = MAX_UINT64) -> int | None:
    """A decimal integer in ``0..limit``, None if absent or empty; a 400 naming ``what`` otherwise."""
    if text is None or text == "":
        return None
    if not (text.isascii() and text.isdigit()) or int(text) > limit:
        bound = "2**64-1" if limit == MAX_UINT64 else str(limit)
        raise HttpError(400, f"{what} must be an integer in 0..{bound}, got {text!r}")
    return int(text)


async def read_body(request: Request, limit: int, what: str = "body") -> bytes:
    """The request body, refused (413) as soon as it passes ``limit`` bytes, without buffering
    the rest."""
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise HttpError(413, f"{what} too large: longer than {limit} bytes")
    return bytes(body)


def flag(request: Request, name: str) -> bool:
    """A boolean request header (``true``/``1``/``yes``), as Bee reads ``Swarm-Pin``."""
    return request.headers.get(name, "").strip().lower() in ("true", "1", "yes")


def tag_header(request: Request) -> int | None:
    """The upload's tag (``Swarm-Tag: UID``), if the request names one."""
    raw = request.headers.get("swarm-tag", "").strip()
    return int(raw) if raw.isdigit() else None


def receipts_header(request: Request) -> int:
    """Receipts each chunk of an upload waits for: ``Swarm-Receipts: 1`` asks for one storer's
    (Bee's direct upload), ``2`` (the default) for two, durable. Raises HttpError (400) otherwise."""
    raw = request.headers.get("swarm-receipts", "2").strip()
    if raw not in ("1", "2"):
        raise HttpError(400, f"Swarm-Receipts must be 1 or 2, not {raw!r}")
    return int(raw)
