"""SOCs and feed updates agree with bee-js, computed by bee-js itself under Node.js.

tests/js/vectors.cjs runs bee-js (pinned in tests/js/package.json) against a fake node that
records its uploads and serves our chunks. Checked both ways: what bee-js writes (SOC addresses,
feed update ids, payload layout, signatures) is what we compute and accept, and what we write,
bee-js reads back (it recovers the owner from our signatures and checks the address).

bee-js is installed once into a cache directory outside the repository (SWARMPY_BEEJS_CACHE, or
~/.cache/swarmpy-beejs); without Node.js and npm, or without the package, the test is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from chunks.chunk import Chunk
from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v1, make_update_v2, topic_from_text, update_address, update_id
from chunks.soc import make_soc, soc_from_parts, validate_soc

JS_DIR = Path(__file__).parent / "js"
KEY = Secp256k1Key.from_hex("634fb5a872396d9693e5c9f9d7233cfa93f395c093371017ff44aa9ae6564cdd")
TOPIC_TEXT = "swarmpy bee-js vectors"
SOC_CASES = [(bytes(32), b"foo"), (bytes(range(32)), b"x"), (b"\xff" * 32, bytes(range(256)) * 16)]
REFERENCES = [bytes([i + 1]) * 32 for i in range(3)]


def bee_js_modules() -> Path:
    """node_modules with the pinned bee-js, installed into the cache on first use (or skip)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are not installed: bee-js vectors not checked")
    manifest = (JS_DIR / "package.json").read_bytes()
    cache_root = Path(os.environ.get("SWARMPY_BEEJS_CACHE", Path.home() / ".cache" / "swarmpy-beejs"))
    cache = cache_root / hashlib.sha256(manifest).hexdigest()[:16]
    modules = cache / "node_modules"
    if not (modules / "@ethersphere" / "bee-js" / "package.json").exists():
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "package.json").write_bytes(manifest)
        try:
            subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=cache,
                check=True,
                capture_output=True,
                timeout=300,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            stderr = getattr(exc, "stderr", b"") or b""
            pytest.skip(f"could not install bee-js into {cache}: {stderr.decode(errors='replace')[-300:]}")
    return modules


def run_bee_js(script: str, *args: str, timeout: float = 300) -> dict[str, Any]:
    """Run ``tests/js/SCRIPT`` with the pinned bee-js under Node.js; its JSON output (or skip)."""
    modules = bee_js_modules()
    done = subprocess.run(
        ["node", str(JS_DIR / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"NODE_PATH": str(modules), "PATH": "/usr/bin:/bin:/usr/local/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def bee_js(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    modules = bee_js_modules()
    topic = topic_from_text(TOPIC_TEXT)
    ours = [make_update_v1(KEY, topic, i, ref, 1_700_000_000 + i) for i, ref in enumerate(REFERENCES)]
    ours.append(make_update_v2(KEY, topic, 3, b"inline payload"))
    our_socs = [make_soc(KEY, b"\x42" * 32, b"a SOC of ours")]
    request = {
        "key": KEY.private_bytes().hex(),
        "topic_text": TOPIC_TEXT,
        "socs": [{"id": id.hex(), "payload": payload.hex()} for id, payload in SOC_CASES],
        "feed_writes": [
            {"index": 10 + i, "reference": ref.hex(), "at": 1_600_000_000 + i}
            for i, ref in enumerate(REFERENCES)
        ],
        "feed_payload_writes": [{"index": 20, "payload": b"bee-js inline".hex()}],
        "serve": {soc.address.hex(): soc.data.hex() for soc in ours + our_socs},
        "feed_reads": [{"index": i, "kind": "reference"} for i in range(3)]
        + [{"index": 3, "kind": "payload"}],
        "soc_reads": [soc.id.hex() for soc in our_socs],
    }
    path = tmp_path_factory.mktemp("beejs") / "request.json"
    path.write_text(json.dumps(request))
    env = {**os.environ, "NODE_PATH": str(modules)}
    done = subprocess.run(
        ["node", str(JS_DIR / "vectors.cjs"), str(path)],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_owner_and_topic(bee_js: dict) -> None:
    assert bee_js["owner"] == KEY.owner.hex()
    assert bee_js["topic"] == topic_from_text(TOPIC_TEXT).hex()


def test_socs_made_by_bee_js(bee_js: dict) -> None:
    for (id, payload), theirs in zip(SOC_CASES, bee_js["socs"], strict=True):
        ours = make_soc(KEY, id, payload)
        assert theirs["address"] == ours.address.hex()
        assert theirs["cac"] == ours.cac_address.hex() == Chunk.from_payload(payload).address.hex()
        data = bytes.fromhex(theirs["data"])
        assert data[:32] + data[97:] == ours.id + ours.wrapped  # same layout; bee-js's own nonces
        soc = validate_soc(ours.address, data)  # its signature recovers our key's owner
        assert soc.owner == KEY.owner


def test_feed_updates_written_by_bee_js(bee_js: dict) -> None:
    topic = topic_from_text(TOPIC_TEXT)
    posts = bee_js["posts"]
    expected_index = [10, 11, 12, 20]
    assert len(posts) == len(expected_index)
    for index, post in zip(expected_index, posts, strict=True):
        assert post["owner"].lower() == KEY.owner.hex()
        assert post["id"] == update_id(topic, index).hex()
        body = bytes.fromhex(post["body"])
        soc = soc_from_parts(KEY.owner, update_id(topic, index), bytes.fromhex(post["sig"]), body)
        assert soc.address == update_address(KEY.owner, topic, index)
        if index < 20:  # upload(reference): v1, timestamp (seconds, big-endian) then the reference
            i = index - 10
            assert body == make_update_v1(KEY, topic, index, REFERENCES[i], 1_600_000_000 + i).wrapped
        else:  # uploadPayload of a small payload: v2, the payload itself
            assert body == make_update_v2(KEY, topic, index, b"bee-js inline").wrapped


def test_bee_js_reads_our_updates_and_socs(bee_js: dict) -> None:
    reads = bee_js["feed_reads"]
    for i, read in enumerate(reads[:3]):
        assert read == {
            "index": i,
            "kind": "reference",
            "value": REFERENCES[i].hex(),
            "next": f"{i + 1:016x}",
        }
    assert reads[3]["value"] == b"inline payload".hex()
    [soc_read] = bee_js["soc_reads"]
    assert soc_read["owner"] == KEY.owner.hex()
    assert bytes.fromhex(soc_read["payload"]) == b"a SOC of ours" and soc_read["span"] == "13"
