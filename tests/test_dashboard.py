"""The swarm dashboard in a real headless Chromium, over three real node processes.

The page, served by node A, polls all three nodes' APIs: it must show every node with its API,
version, radius, pins, charts and an explained column each, then follow the nodes as they sync
a file uploaded to A. A node SIGSTOPped (hung: connected, silent) must turn "not answering"
within 3 s while the others keep updating, and come back on SIGCONT; a node killed shows as
down, and its disconnection, with a reason, in A's list. Skipped where no Chromium is installed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from swarm.api.dashboard import ASSETS, asset, dashboard_page
from swarm.testing import NodeProcess, poll
from tests.chromium import CHROMIUM, Chromium

pytestmark = pytest.mark.process

STATE = """JSON.stringify({
  rows: [...document.querySelectorAll('#summary tbody tr')].map(tr => ({
    node: tr.dataset.node,
    updates: Number(tr.dataset.updates || 0),
    ...Object.fromEntries(['api', 'version', 'overlay', 'radius', 'pins', 'chunks', 'lag', 'behind', 'state']
      .map(name => [name, tr.querySelector('.' + name)?.textContent ?? ''])),
  })),
  headers: [...document.querySelectorAll('#summary th')].map(th => [th.textContent, th.title]),
  cards: [...document.querySelectorAll('section.node')].map(card => ({
    node: card.dataset.node,
    charts: card.querySelectorAll('.uplot canvas').length,
    bins: [...card.querySelectorAll('tr.bin')].map(tr => tr.querySelector('.progress').textContent),
    gone: [...card.querySelectorAll('table.disconnections tbody tr')].map(tr => tr.children[1].textContent),
    reasons: [...card.querySelectorAll('table.disconnections td.reason')].map(td => td.textContent),
  })),
})"""


def page_state(browser: Chromium) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(browser.evaluate(STATE))
    return state


def row(state: dict[str, Any], api: str) -> dict[str, Any]:
    return next(r for r in state["rows"] if r["node"] == api)


def card(state: dict[str, Any], api: str) -> dict[str, Any]:
    return next(c for c in state["cards"] if c["node"] == api)


@contextmanager
def swarm_of_three(tmp_path: Path) -> Iterator[tuple[NodeProcess, NodeProcess, NodeProcess, Chromium]]:
    """Node processes A, B and C (B and C peered with A), and a browser."""
    with (
        NodeProcess(tmp_path / "a") as a,
        NodeProcess(tmp_path / "b", peers=[a.p2p]) as b,
        NodeProcess(tmp_path / "c", peers=[a.p2p]) as c,
        Chromium(tmp_path / "profile") as browser,
    ):
        yield a, b, c, browser


no_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (apt-get install chromium): page not tested"
)


@no_chromium
def test_the_dashboard_shows_every_node_and_follows_the_sync(tmp_path: Path) -> None:
    with swarm_of_three(tmp_path) as (a, b, c, browser):
        nodes = [a, b, c]
        ports = ",".join(n.api.rsplit(":", 1)[1] for n in nodes)
        browser.open(f"{a.api}/dashboard?nodes={ports}&interval=300")

        def shows_every_node() -> bool:
            state = page_state(browser)
            return [r["overlay"] for r in state["rows"]] == [n.overlay[:16] for n in nodes]

        poll(shows_every_node, timeout=30)
        state = page_state(browser)
        assert row(state, b.api)["chunks"] == "0"  # nothing uploaded yet
        assert row(state, b.api)["api"] == b.api and row(state, b.api)["version"].startswith("2.7.0-swarmpy-")
        assert row(state, b.api)["radius"] == "0" and row(state, b.api)["pins"] == "0"
        assert all(title for _, title in state["headers"]), "every column explained in a tooltip"
        assert all(card(state, n.api)["charts"] == 4 for n in nodes), "four charts per node"

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
        assert all(row(state, n.api)["lag"] == "0" and row(state, n.api)["behind"] == "0 s" for n in nodes)
        progress = card(state, b.api)["bins"]  # B's bins, synced/cursor over its peers
        assert progress and all(p.split("/")[0] == p.split("/")[1] for p in progress if p), progress
        assert sum(int(p.split("/")[1]) for p in progress if p) >= int(total)
        browser.screenshot(tmp_path / "dashboard.png")


@no_chromium
def test_a_hung_node_shows_as_not_answering_while_the_others_update(tmp_path: Path) -> None:
    with swarm_of_three(tmp_path) as (a, b, c, browser):
        assert c.proc is not None
        ports = ",".join(n.api.rsplit(":", 1)[1] for n in (a, b, c))
        browser.open(f"{a.api}/dashboard?nodes={ports}&interval=300")

        def all_synced() -> bool:
            rows = page_state(browser)["rows"]
            return len(rows) == 3 and all(r["state"] == "fully synced" for r in rows)

        poll(all_synced, timeout=30)
        before = page_state(browser)
        os.kill(c.proc.pid, signal.SIGSTOP)  # hung: the connection is accepted, nothing answers
        try:
            stopped = time.monotonic()
            poll(
                lambda: row(page_state(browser), c.api)["state"].startswith("not answering"),
                timeout=10,
                interval=0.05,
            )
            assert time.monotonic() - stopped < 3.0
            time.sleep(1.0)
            during = page_state(browser)
            for n in (a, b):  # the others went on updating meanwhile
                assert row(during, n.api)["updates"] > row(before, n.api)["updates"] + 3
                assert row(during, n.api)["state"] == "fully synced"
            assert row(during, c.api)["chunks"] == ""  # no stale figures for a node that does not answer
        finally:
            os.kill(c.proc.pid, signal.SIGCONT)
        poll(lambda: row(page_state(browser), c.api)["state"] == "fully synced", timeout=10, interval=0.05)

        c.kill()

        def c_down_and_gone() -> bool:
            state = page_state(browser)
            return (
                row(state, c.api)["state"].startswith("down") and c.overlay[:12] in card(state, a.api)["gone"]
            )

        poll(c_down_and_gone, timeout=30)
        state = page_state(browser)
        assert row(state, a.api)["state"] == "fully synced"
        assert all(reason.strip() for reason in card(state, a.api)["reasons"]), "a reason is never empty"
        browser.screenshot(tmp_path / "dashboard-down.png")


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
        for name in ASSETS:  # the script and the charting library come from the node, no CDN
            response = httpx.get(f"{a.api}/dashboard/{name}")
            assert response.status_code == 200 and response.content == asset(name), name
        missing = httpx.get(f"{a.api}/dashboard/jquery.js")
        assert missing.status_code == 404 and missing.json() == {
            "code": 404,
            "message": "the dashboard has no file 'jquery.js'",
        }
        assert "http" not in dashboard_page().split(b"-->", 1)[1].decode()  # nothing loaded from elsewhere
