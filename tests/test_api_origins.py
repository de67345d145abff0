"""Issue 30 item 3: the HTTP API answers only the Host names it serves and refuses state changes
from web pages of other origins, while curl-like clients, the node's own pages and origins the
operator trusts keep working. The decision is pure (`refusal`): a table and a property against
a naive model; then real HTTP against a `swarm node` process."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarm.api.origins import OriginPolicy, host_name, refusal
from swarm.testing import NodeProcess, poll
from tests.chromium import CHROMIUM, Chromium

POLICY = OriginPolicy.of("127.0.0.1", ["node.example"], ["https://app.example"])


@pytest.mark.parametrize(
    ("method", "headers", "refused"),
    [
        ("GET", {"host": "127.0.0.1:1633"}, False),
        ("GET", {"host": "localhost"}, False),
        ("GET", {"host": "[::1]:1633"}, False),
        ("GET", {"host": "NODE.example:80"}, False),  # --api-allow-host, any case
        ("GET", {}, False),  # HTTP/1.0, no Host: not a browser
        ("GET", {"host": "evil.example"}, True),  # DNS rebinding
        ("GET", {"host": "127.0.0.1.evil.example"}, True),
        ("GET", {"host": "[::1"}, True),
        ("GET", {"host": "127.0.0.1", "origin": "http://evil.example"}, False),  # reads: CORS decides
        ("POST", {"host": "127.0.0.1:1633"}, False),  # curl, bee-js in Node
        ("POST", {"host": "127.0.0.1:1633", "origin": "http://127.0.0.1:1633"}, False),  # same origin
        ("POST", {"host": "127.0.0.1:1633", "origin": "http://127.0.0.1:1635"}, True),  # another node's page
        ("POST", {"host": "127.0.0.1:1633", "origin": "http://evil.example"}, True),
        ("DELETE", {"host": "127.0.0.1:1633", "origin": "null"}, True),
        ("PUT", {"host": "127.0.0.1:1633", "origin": "https://APP.example"}, False),  # trusted
        ("POST", {"host": "127.0.0.1", "sec-fetch-site": "cross-site"}, True),
        ("POST", {"host": "127.0.0.1", "sec-fetch-site": "same-site"}, True),
        ("POST", {"host": "127.0.0.1", "sec-fetch-site": "same-origin"}, False),
        ("PATCH", {"host": "127.0.0.1", "sec-fetch-site": "none"}, False),
    ],
)
def test_refusals(method: str, headers: dict[str, str], refused: bool) -> None:
    assert (refusal(POLICY, method, "http", headers) is not None) == refused


def naive_refused(method: str, host: str, origin: str | None) -> bool:
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host[1 : host.index("]")]
    if name.lower() not in {"127.0.0.1", "localhost", "::1", "node.example"}:
        return True
    if method in ("GET", "HEAD", "OPTIONS") or origin is None:
        return False
    return origin.lower() not in (f"http://{host}".lower(), "https://app.example")


@given(
    method=st.sampled_from(["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"]),
    name=st.sampled_from(["127.0.0.1", "localhost", "[::1]", "node.example", "evil.example", "LOCALHOST"]),
    port=st.sampled_from(["", ":1633", ":80"]),
    origin=st.one_of(
        st.none(),
        st.sampled_from(["null", "https://app.example", "http://evil.example", "http://127.0.0.1:1633"]),
        st.text(max_size=20),
    ),
)
def test_refusal_matches_a_naive_model(method: str, name: str, port: str, origin: str | None) -> None:
    headers = {"host": name + port} | ({} if origin is None else {"origin": origin})
    assert (refusal(POLICY, method, "http", headers) is not None) == naive_refused(
        method, name + port, origin
    )


def test_host_names() -> None:
    assert host_name("LocalHost:1633") == "localhost"
    assert host_name("[::1]:1633") == "::1"
    assert host_name("[::1]") == "::1"
    for bad in ("", ":1633", "a b", "[::1]x", "host:port", "[]"):
        assert host_name(bad) is None, bad


@pytest.mark.process
def test_a_node_refuses_other_origins_and_hosts(tmp_path: Path) -> None:
    extra = ["--api-allow-host", "node.example", "--cors-allowed-origins", "https://app.example"]
    with NodeProcess(tmp_path / "n", extra=extra) as node:
        own = node.api  # http://127.0.0.1:PORT
        plain = {"content-type": "text/plain"}
        # a page of another site posting a "simple" request to the topic route: no message signed
        refused = httpx.post(
            own + "/live/topics/chat", content=b"hi", headers={**plain, "origin": "http://evil.example"}
        )
        assert refused.status_code == 403
        assert refused.json()["code"] == 403 and "http://evil.example" in refused.json()["message"]
        no_origin = httpx.post(own + "/live/topics/chat", content=b"hi", headers=plain)  # curl
        assert no_origin.status_code == 201
        assert int(no_origin.json()["seq"], 16) & 0xFFFFFFFF == 1  # the refused one got no number
        same = httpx.post(own + "/live/topics/chat", content=b"hi", headers={"origin": own})
        assert same.status_code == 201

        evil_upload = httpx.post(
            own + "/bytes",
            content=b"evil",
            headers={"origin": "http://evil.example", "swarm-deferred-upload": "1"},
        )
        assert evil_upload.status_code == 403
        fetch_site = httpx.post(own + "/bytes", content=b"x", headers={"sec-fetch-site": "cross-site"})
        assert fetch_site.status_code == 403

        rebound = httpx.get(own + "/health", headers={"host": "evil.example"})
        assert rebound.status_code == 403 and "evil.example" in rebound.json()["message"]
        assert httpx.get(own + "/health", headers={"host": "node.example:1633"}).status_code == 200
        assert httpx.get(own + "/health", headers={"host": "localhost"}).status_code == 200

        trusted = {"origin": "https://app.example"}
        allowed = httpx.post(own + "/live/topics/chat", content=b"hi", headers=trusted)
        assert allowed.status_code == 201
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        preflight = httpx.options(
            own + "/bytes", headers={**trusted, "access-control-request-method": "POST"}
        )
        assert preflight.status_code == 204 and "POST" in preflight.headers["access-control-allow-methods"]
        # a page of another origin may not read data, only local pages the status documents
        read = httpx.get(own + "/topology", headers={"origin": "http://evil.example"})
        assert read.status_code == 200 and "access-control-allow-origin" not in read.headers


@pytest.mark.process
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)")
def test_a_browser_page_of_another_origin_cannot_publish(tmp_path: Path) -> None:
    """A real page at http://localhost:PORT (another origin than http://127.0.0.1:PORT) posts a
    `no-cors` text/plain message to 127.0.0.1: Chromium sends it, the node refuses it. The same
    page posting to its own origin is served."""
    with NodeProcess(tmp_path / "n") as node, Chromium(tmp_path / "profile") as browser:
        port = node.api.rsplit(":", 1)[1]
        browser.open(f"http://localhost:{port}/dashboard")
        # the page loaded, not the blank one before it (its "complete" would lose window.results)
        loaded = f"document.readyState == 'complete' && location.host == 'localhost:{port}'"
        poll(lambda: browser.evaluate(loaded), timeout=20)
        browser.evaluate(
            f"""window.results = [];
            fetch('http://127.0.0.1:{port}/live/topics/chat', {{method: 'POST', mode: 'no-cors',
                headers: {{'content-type': 'text/plain'}}, body: 'from another origin'}})
              .then(() => fetch('/live/topics/chat', {{method: 'POST', body: 'same origin'}}))
              .then(r => r.json()).then(doc => window.results.push(doc.seq))
              .catch(e => window.results.push('failed: ' + e));"""
        )
        poll(lambda: bool(browser.evaluate("window.results.length")), timeout=20)
        (seq,) = json.loads(browser.evaluate("JSON.stringify(window.results)"))
        assert int(seq, 16) & 0xFFFFFFFF == 1, seq  # the cross-origin one was never published
        log = (tmp_path / "n" / "node.log").read_text()
        assert "Traceback" not in log


def _websocket_status(api: str, path: str, headers: dict[str, str]) -> int:
    """The HTTP status of a WebSocket opening handshake (101 when accepted), over a raw socket."""
    import base64
    import os
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(api)
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: {url.netloc}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
        "Sec-WebSocket-Version: 13",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status_line = sock.recv(4096).split(b"\r\n", 1)[0]
    return int(status_line.split()[1])


def test_a_page_of_another_origin_cannot_open_a_websocket(tmp_path: Path) -> None:
    """Browsers open WebSockets across origins without CORS: PSS and GSOC subscriptions are
    refused to pages of other origins, served to clients without one (bee-js in Node.js)."""
    with NodeProcess(tmp_path / "n") as node:
        path = "/pss/subscribe/" + "ab" * 32
        assert _websocket_status(node.api, path, {"Origin": "http://evil.example"}) == 403
        assert _websocket_status(node.api, path, {}) == 101
        assert _websocket_status(node.api, path, {"Origin": node.api}) == 101
