"""Files and websites across real `swarm node` processes: bee-js's uploadFile, uploadFiles,
uploadFilesFromDirectory, uploadCollection, downloadFile and createFeedManifest (upload at one
node, read at the other); `swarm upload DIR` gets the same reference as bee-js for the same
directory; the CLI's download REF/PATH, manifest ls and feed manifest; and a website opened in
headless Chromium through /bzz, its relative link and its image working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chunks.ethkey import Secp256k1Key
from chunks.feeds import topic_from_text
from swarm.testing import NodeProcess, poll
from tests.chromium import CHROMIUM, Chromium, DevToolsError
from tests.test_beejs_vectors import JS_DIR, bee_js_modules

pytestmark = pytest.mark.process

PNG = bytes.fromhex(  # a 2x1 red PNG
    "89504e470d0a1a0a0000000d49484452000000020000000108020000007b40e8dd0000000d49444154789c63f8cf"
    "c000440008fe01ffc69e79f70000000049454e44ae426082"
)
SITE = {
    "index.html": b'<html><body><a id="link" href="docs/page.html">docs</a>'
    b'<img id="logo" src="img/logo.png"></body></html>',
    "docs/page.html": b"<html><body><p id='text'>the docs page</p>"
    b"<img id='logo' src='../img/logo.png'></body></html>",
    "img/logo.png": PNG,
    "a file with a rather long name, past thirty bytes.txt": b"long name\n" * 500,
}
KEY = Secp256k1Key.from_hex("634fb5a872396d9693e5c9f9d7233cfa93f395c093371017ff44aa9ae6564cdd")


def swarm(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "swarm", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def write_site(root: Path) -> Path:
    for path, data in SITE.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeProcess, NodeProcess]]:
    base = tmp_path_factory.mktemp("bzz-nodes")
    first = NodeProcess(base / "n0").start()
    second = NodeProcess(base / "n1", peers=[first.p2p]).start()
    try:
        poll(lambda: len(first.sync()["peers"]) == 1 and len(second.sync()["peers"]) == 1, timeout=60)
        yield first, second
    finally:
        second.stop()
        first.stop()


def test_bee_js_files_and_sites_across_two_nodes(
    two_nodes: tuple[NodeProcess, NodeProcess], tmp_path: Path
) -> None:
    modules = bee_js_modules()
    writer, reader = two_nodes
    site = write_site(tmp_path / "site")
    request = {
        "file_text": "hello from bee-js",
        "directory": str(site),
        "directory_paths": sorted(SITE),
        "collection": [["a.txt", "first"], ["b/c.txt", "second"], ["missing.html", "sorry"]],
        "key": KEY.private_bytes().hex(),
        "topic": "bzz site",
    }
    (tmp_path / "input.json").write_text(json.dumps(request))
    done = subprocess.run(
        ["node", str(JS_DIR / "bzz.cjs"), writer.api, reader.api, str(tmp_path / "input.json")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"NODE_PATH": str(modules), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["file"] == {"name": "hello.txt", "contentType": "text/plain", "text": "hello from bee-js"}
    for path, data in SITE.items():
        got = out["directory_files"][path]
        assert got["name"] == path.rsplit("/", 1)[-1]
        if path.endswith(".html"):
            assert got["text"] == data.decode() and got["contentType"] == "text/html; charset=utf-8"
    assert out["directory_index"] == SITE["index.html"].decode()
    assert out["collection_missing"] == "sorry"
    assert out["files_first"] == "first"
    assert out["feed_pages"] == ["hello from bee-js", SITE["index.html"].decode()]

    # the same directory through the CLI: the same reference as bee-js's uploadFilesFromDirectory
    ours = swarm("upload", str(site), "--index-document", "index.html", "--api", writer.api).strip()
    assert ours == out["directory_reference"]
    listing = json.loads(swarm("manifest", "ls", ours, "--json", "--api", reader.api))
    assert {row["path"] for row in listing} == {*SITE, "/"}
    page = swarm("download", f"{ours}/docs/page.html", "--api", reader.api)
    assert page.encode() == SITE["docs/page.html"]
    # a feed manifest made by the CLI is bee-js's for the same owner and topic
    topic = topic_from_text("bzz site")
    made = swarm("feed", "manifest", KEY.owner.hex(), topic.hex(), "--api", reader.api).strip()
    assert made == out["feed_manifest"]
    assert httpx.get(f"{reader.api}/bzz/{made}/", timeout=30).content == SITE["index.html"]


def test_a_named_file_and_a_download_to_a_file(
    two_nodes: tuple[NodeProcess, NodeProcess], tmp_path: Path
) -> None:
    writer, reader = two_nodes
    source = tmp_path / "report.txt"
    source.write_bytes(b"quarterly numbers\n" * 1000)
    ref = swarm("upload", str(source), "--name", "report.txt", "--api", writer.api).strip()
    swarm("download", f"{ref}/", "-o", str(tmp_path / "copy.txt"), "--api", reader.api)
    assert (tmp_path / "copy.txt").read_bytes() == source.read_bytes()
    got = httpx.get(f"{reader.api}/bzz/{ref}/report.txt", timeout=30)
    assert got.headers["content-disposition"] == 'inline; filename="report.txt"'
    assert got.headers["content-type"] == "text/plain; charset=utf-8"
    bad = subprocess.run(
        [sys.executable, "-m", "swarm", "upload", str(source), "--index-document", "x", "--api", writer.api],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and "directory" in bad.stderr
    # --error-document: the page served for a missing path
    site = write_site(tmp_path / "site")
    ref = swarm("upload", str(site), "--error-document", "docs/page.html", "--api", writer.api).strip()
    missing = httpx.get(f"{reader.api}/bzz/{ref}/no/such/page", timeout=30)
    assert missing.status_code == 200 and missing.content == SITE["docs/page.html"]
    # --encrypt: a 128-hex reference (the key included) that the other node reads, by path too;
    # the chunks it stores are not the plain file's
    secret = swarm("upload", str(source), "--encrypt", "--api", writer.api).strip()
    assert len(secret) == 128 and secret[:64] != swarm("upload", str(source), "--api", writer.api).strip()
    assert swarm("download", secret, "--api", reader.api).encode() == source.read_bytes()
    keyless = httpx.get(f"{reader.api}/bytes/{secret[:64]}", timeout=30)  # the address without the key
    assert keyless.content != source.read_bytes()
    secret_site = swarm("upload", str(site), "--encrypt", "--api", writer.api).strip()
    page = swarm("download", f"{secret_site}/docs/page.html", "--api", reader.api)
    assert len(secret_site) == 128 and page.encode() == SITE["docs/page.html"]
    plain = httpx.post(f"{writer.api}/bytes", content=b"just bytes" * 20, timeout=30).json()["reference"]
    (tmp_path / "empty").mkdir()
    for command in (["manifest", "ls", plain], ["upload", str(tmp_path / "empty")]):
        wrong = subprocess.run(
            [sys.executable, "-m", "swarm", *command, "--api", reader.api],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert wrong.returncode != 0 and wrong.stderr.count("\n") == 1, wrong.stderr
        assert ("not a manifest" in wrong.stderr) or ("no regular file" in wrong.stderr)


@pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (apt-get install chromium): site not tested"
)
def test_a_website_opens_in_a_browser(two_nodes: tuple[NodeProcess, NodeProcess], tmp_path: Path) -> None:
    writer, reader = two_nodes
    site = write_site(tmp_path / "site")
    ref = swarm("upload", str(site), "--index-document", "index.html", "--api", writer.api).strip()
    with Chromium(tmp_path / "profile") as browser:
        browser.open(f"{reader.api}/bzz/{ref}/")

        def page(expression: str) -> object:
            try:
                return browser.evaluate(expression)
            except DevToolsError:  # asked while the page navigates: ask again
                return None

        def image_loaded() -> bool:
            logo = "document.getElementById('logo')"
            return bool(page(f"{logo}?.complete && {logo}.naturalWidth"))

        poll(image_loaded, timeout=30)
        assert page("document.getElementById('logo').naturalWidth") == 2  # the PNG, decoded
        page("setTimeout(() => document.getElementById('link').click(), 0)")  # the relative link
        poll(lambda: page("document.getElementById('text')?.textContent") == "the docs page", timeout=30)
        assert str(page("location.pathname")).endswith(f"/bzz/{ref}/docs/page.html")
        poll(image_loaded, timeout=30)  # ../img/logo.png from the page below
        assert page("document.getElementById('logo').naturalWidth") == 2
        browser.screenshot(tmp_path / "site.png")
