"""The swarm dashboard in a real headless Chromium, over three real node processes.

The page, served by node A, polls all three nodes' APIs: it must show every node, then follow
the nodes as they sync a file uploaded to A, then show a stopped node as down and its
disconnection in A's list. Skipped where no Chromium is installed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import httpx
import pytest

from swarm.api.dashboard import dashboard_page
from swarm.testing import NodeProcess, poll
from tests.chromium import CHROMIUM, Chromium

pytestmark = pytest.mark.process

STATE = """JSON.stringify({
  rows: [...document.querySelectorAll('#summary tbody tr')].map(tr => ({
    node: tr.dataset.node,
    overlay: tr.querySelector('.overlay')?.textContent ?? '',
    chunks: tr.querySelector('.chunks')?.textContent ?? '',
    state: tr.querySelector('.state')?.textContent ?? '',
  })),
  cards: [...document.querySelectorAll('section.node')].map(card => ({
    node: card.dataset.node,
    bins: [...card.querySelectorAll('tr.bin')].map(tr => tr.querySelector('.progress').textContent),
    gone: [...card.querySelectorAll('table.disconnections tbody tr')].map(tr => tr.children[1].textContent),
  })),
})"""


def page_state(browser: Chromium) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(browser.evaluate(STATE))
    return state


def row(state: dict[str, Any], api: str) -> dict[str, str]:
    return next(r for r in state["rows"] if r["node"] == api)


def card(state: dict[str, Any], api: str) -> dict[str, Any]:
    return next(c for c in state["cards"] if c["node"] == api)


@pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (apt-get install chromium): page not tested"
)
def test_the_dashboard_shows_every_node_and_follows_the_sync(tmp_path: Path) -> None:
    with (
        NodeProcess(tmp_path / "a") as a,
        NodeProcess(tmp_path / "b", peers=[a.p2p]) as b,
        NodeProcess(tmp_path / "c", peers=[a.p2p]) as c,
        Chromium(tmp_path / "profile") as browser,
    ):
        nodes = [a, b, c]
        ports = ",".join(n.api.rsplit(":", 1)[1] for n in nodes)
        browser.open(f"{a.api}/dashboard?nodes={ports}&interval=300")

        def shows_every_node() -> bool:
            state = page_state(browser)
            return [r["overlay"] for r in state["rows"]] == [n.overlay[:16] for n in nodes]

        poll(shows_every_node, timeout=30)
        assert row(page_state(browser), b.api)["chunks"] == "0"  # nothing uploaded yet

        data = random.Random(9).randbytes(2_000_000)
        uploaded = httpx.post(f"{a.api}/bytes", content=data, timeout=30).json()
        total = str(uploaded["chunks"])

        def synced_on_the_page() -> bool:
            state = page_state(browser)
            return all(row(state, n.api)["chunks"] == total for n in nodes) and all(
                row(state, n.api)["state"] == "fully synced" for n in nodes
            )

        poll(synced_on_the_page, timeout=60)
        state = page_state(browser)
        progress = card(state, b.api)["bins"]  # B's bins, synced/cursor over its peers
        assert progress and all(p.split("/")[0] == p.split("/")[1] for p in progress if p), progress
        assert sum(int(p.split("/")[1]) for p in progress if p) >= int(total)

        c.stop()

        def c_gone() -> bool:
            state = page_state(browser)
            return "down" in row(state, c.api)["state"] and c.overlay[:12] in card(state, a.api)["gone"]

        poll(c_gone, timeout=30)
        browser.screenshot(tmp_path / "dashboard.png")


def test_the_status_documents_are_readable_by_local_pages_only(tmp_path: Path) -> None:
    with NodeProcess(tmp_path / "a") as a:
        local = {"origin": "http://127.0.0.1:1635"}
        for path in ("/sync", "/topology", "/health"):
            response = httpx.get(a.api + path, headers=local)
            assert response.headers["access-control-allow-origin"] == local["origin"], path
        for origin in ("http://example.com", "http://127.0.0.1.example.com:80", "null"):
            assert (
                "access-control-allow-origin"
                not in httpx.get(a.api + "/sync", headers={"origin": origin}).headers
            )
        # data and files are never readable cross-origin
        chunk = httpx.post(a.api + "/chunks", content=bytes(8) + b"x"[:0]).json()["reference"]
        response = httpx.get(f"{a.api}/chunks/{chunk}", headers=local)
        assert response.status_code == 200 and "access-control-allow-origin" not in response.headers
        page = httpx.get(a.api + "/dashboard")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.content == dashboard_page()
