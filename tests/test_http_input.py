"""swarm.api.input: parsing what a client sent, against a naive model, and the error answers."""

from __future__ import annotations

import string

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from swarm.api.input import MAX_UINT64, HttpError, handled, parse_hex, parse_uint, read_body

HEXISH = st.text(alphabet=string.hexdigits + "xXg -", max_size=24)


def naive_hex(text: str, size: int) -> bytes | None:
    """What parse_hex must accept: an optional 0x/0X, then exactly 2 * size hex digits."""
    for prefix in ("0x", "0X", ""):
        if text.startswith(prefix):
            rest = text[len(prefix) :]
            break
    ok = len(rest) == 2 * size and all(c in string.hexdigits for c in rest)
    return bytes.fromhex(rest) if ok else None


@given(HEXISH | st.binary(max_size=10).map(bytes.hex), st.integers(min_value=1, max_value=10))
def test_parse_hex_takes_exactly_what_the_model_takes(text: str, size: int) -> None:
    expected = naive_hex(text, size)
    if expected is None:
        with pytest.raises(HttpError) as caught:
            parse_hex(text, size, "owner")
        assert caught.value.status == 400 and caught.value.message.startswith("owner ")
    else:
        assert parse_hex(text, size, "owner") == expected


def test_parse_hex_says_what_is_wrong() -> None:
    with pytest.raises(HttpError, match="topic is not hexadecimal: 'zz'"):
        parse_hex("zz", 1, "topic")
    with pytest.raises(HttpError, match=r"topic must be 2 bytes \(4 hex characters\), got 2 hex characters"):
        parse_hex("0xab", 2, "topic")
    with pytest.raises(HttpError, match="not hexadecimal"):
        parse_hex("0x0Xab", 1, "topic")  # one prefix, not two


@given(st.one_of(st.none(), st.text(max_size=22), st.integers(min_value=0, max_value=2**66).map(str)))
def test_parse_uint_takes_decimal_integers_within_the_limit(text: str | None) -> None:
    limit = 2**40
    if text is None or text == "":
        assert parse_uint(text, "from", limit) is None
    elif text.isascii() and text.isdigit() and int(text) <= limit:
        assert parse_uint(text, "from", limit) == int(text)
    else:
        with pytest.raises(HttpError, match=f"from must be an integer in 0..{limit}"):
            parse_uint(text, "from", limit)


def test_parse_uint_names_the_64_bit_bound() -> None:
    assert parse_uint(str(MAX_UINT64), "index") == MAX_UINT64
    with pytest.raises(HttpError, match=r"index must be an integer in 0..2\*\*64-1"):
        parse_uint(str(MAX_UINT64 + 1), "index")


async def echo(request: Request) -> Response:
    return JSONResponse({"size": len(await read_body(request, 10, "payload"))})


async def test_a_body_over_the_limit_is_a_413_and_a_handled_error_is_a_json_body() -> None:
    app = Starlette(routes=[Route("/echo", handled(echo), methods=["POST"])])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://n") as client:
        fits = await client.post("/echo", content=b"x" * 10)
        assert fits.status_code == 200 and fits.json() == {"size": 10}
        too_long = await client.post("/echo", content=b"x" * 11)
        assert too_long.status_code == 413
        assert too_long.json() == {"code": 413, "message": "payload too large: longer than 10 bytes"}
