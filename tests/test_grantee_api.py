"""POST, GET and PATCH /grantee on a node (in this process, on loopback): the list stored
encrypted, its reference encrypted for the node, a history manifest of ACTs in which every
grantee (and only they) finds the access key with its own private key, as a Bee downloader does."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx
import pytest
import trio

from chunks.ethkey import Secp256k1Key
from swarm.act.records import ActNotFound, compressed, decode_act, session_key
from swarm.act.service import GranteeService
from swarm.files.encryption import transcrypt
from swarm.files.transfer import read_file, tree_fetch
from swarm.manifest.reader import ManifestReader
from swarm.node import Node
from swarm.testing import node_with_client

ALICE, BOB, CAROL = (Secp256k1Key.from_hex(f"{i:064x}") for i in (11, 12, 13))


def hexkey(key: Secp256k1Key) -> str:
    return key.public_key_compressed.hex()


def api(data_dir: Path) -> AbstractAsyncContextManager[tuple[Node, httpx.AsyncClient]]:
    return node_with_client(data_dir, retrieve_timeout=1.0)


async def access_keys(node: Node, history: bytes) -> dict[str, list[bytes | None]]:
    """Per grantee name: the access key it decrypts from each ACT of the history (newest first)."""

    async def read(ref: bytes) -> bytes:
        return await read_file(ref, tree_fetch(ref, node.retrieval.get))

    entries = await ManifestReader(read, history).entries()
    publisher = node.grantees.publisher  # what Bee's downloader knows: the publisher's public key
    found: dict[str, list[bytes | None]] = {}
    for _, entry in sorted(entries.items()):
        act = decode_act(await read(entry.reference))
        for name, key in (("alice", ALICE), ("bob", BOB), ("carol", CAROL)):
            encrypted = act.get(session_key(key, publisher, b"\x00"))
            plain = None if encrypted is None else transcrypt(session_key(key, publisher, b"\x01"), encrypted)
            found.setdefault(name, []).append(plain)
    return found


async def test_create_get_add_and_revoke(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with api(tmp_path / "a") as (node, client):
            made = await client.post("/grantee", json={"grantees": [hexkey(ALICE), hexkey(BOB)]})
            assert made.status_code == 201, made.text
            ref, history = made.json()["ref"], made.json()["historyref"]
            assert len(ref) == 128 and len(history) == 64
            listed = await client.get(f"/grantee/{ref}")
            assert listed.status_code == 200 and listed.json() == [hexkey(ALICE), hexkey(BOB)]
            keys = await access_keys(node, bytes.fromhex(history))
            assert keys["alice"][0] is not None and keys["alice"] == keys["bob"] and keys["carol"] == [None]

            # the list itself is stored encrypted: its reference (64 bytes) is the decrypted `ref`
            plain_ref = node.grantees.list_reference(bytes.fromhex(ref))
            stored = await client.get(f"/bytes/{plain_ref.hex()}")
            assert stored.content == b"".join(b"\x04" + k.public_key for k in (ALICE, BOB))
            raw = await client.get(f"/chunks/{plain_ref[:32].hex()}")
            assert ALICE.public_key not in raw.content

            await trio.sleep(1.1)  # a new second: a new history entry (as Bee keys them)
            added = await client.patch(
                f"/grantee/{ref}",
                json={"add": [hexkey(CAROL), hexkey(ALICE)]},
                headers={"swarm-act-history-address": history},
            )
            assert added.status_code == 200, added.text
            ref2, history2 = added.json()["ref"], added.json()["historyref"]
            assert (await client.get(f"/grantee/{ref2}")).json() == [
                hexkey(ALICE),
                hexkey(BOB),
                hexkey(CAROL),
            ]
            keys = await access_keys(node, bytes.fromhex(history2))
            newest = keys["alice"][0]
            assert keys["bob"][0] == newest and keys["carol"][0] == newest  # added: the same access key
            assert keys["alice"][1] == newest and keys["carol"][1] is None  # the older ACT is kept

            await trio.sleep(1.1)
            revoked = await client.patch(
                f"/grantee/{ref2}",
                json={"revoke": [hexkey(ALICE)]},
                headers={"swarm-act-history-address": history2},
            )
            assert revoked.status_code == 200, revoked.text
            ref3, history3 = revoked.json()["ref"], revoked.json()["historyref"]
            assert sorted((await client.get(f"/grantee/{ref3}")).json()) == sorted(
                [hexkey(BOB), hexkey(CAROL)]
            )
            keys = await access_keys(node, bytes.fromhex(history3))
            assert keys["alice"][0] is None  # revoked: not in the new ACT
            assert keys["bob"][0] == keys["carol"][0] is not None and keys["bob"][0] != newest  # a new key
            assert len(keys["bob"]) == 3


async def test_bad_requests_are_named(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with api(tmp_path / "a") as (_, client):
            bad_key = await client.post("/grantee", json={"grantees": ["02" + "00" * 32]})
            assert bad_key.status_code == 400 and "invalid grantees list" in bad_key.json()["message"]
            not_json = await client.post("/grantee", content=b"{nope")
            assert not_json.status_code == 400 and "not JSON" in not_json.json()["message"]
            made = (await client.post("/grantee", json={"grantees": [hexkey(ALICE)]})).json()
            no_history = await client.patch(f"/grantee/{made['ref']}", json={"add": [hexkey(BOB)]})
            assert (
                no_history.status_code == 400 and "Swarm-Act-History-Address" in no_history.json()["message"]
            )
            unknown = await client.get(f"/grantee/{'ab' * 64}")
            assert unknown.status_code == 404 and "granteelist not found" in unknown.json()["message"]
            short = await client.get(f"/grantee/{'ab' * 32}")
            assert short.status_code == 400 and "128 hex characters" in short.json()["message"]
            missing_history = await client.patch(
                f"/grantee/{made['ref']}",
                json={"add": [hexkey(BOB)]},
                headers={"swarm-act-history-address": "cd" * 32},
            )
            assert missing_history.status_code == 404 and missing_history.json()["code"] == 404
            empty = await client.post("/grantee", json={"grantees": []})
            assert empty.status_code == 201
            revoke_empty = await client.patch(
                f"/grantee/{empty.json()['ref']}",
                json={"revoke": [hexkey(ALICE)]},
                headers={"swarm-act-history-address": empty.json()["historyref"]},
            )
            assert revoke_empty.status_code == 400 and "empty grantee list" in revoke_empty.json()["message"]


async def test_act_upload_and_download(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with api(tmp_path / "a") as (node, client):
            publisher = compressed(node.grantees.publisher).hex()
            made = (await client.post("/grantee", json={"grantees": [hexkey(BOB)]})).json()
            up = await client.post(
                "/bytes",
                content=b"for bob",
                headers={"swarm-act": "true", "swarm-act-history-address": made["historyref"]},
            )
            assert up.status_code == 201, up.text
            encrypted = up.json()["reference"]
            assert up.headers["swarm-act-history-address"] == made["historyref"]
            act_headers = {"swarm-act-publisher": publisher, "swarm-act-history-address": made["historyref"]}
            own = await client.get(f"/bytes/{encrypted}", headers=act_headers)  # the publisher reads it
            assert own.status_code == 200 and own.content == b"for bob"
            plain = await client.get(f"/bytes/{encrypted}")  # without the headers: not the file
            assert plain.content != b"for bob"

            # Bob, at another node, finds the access key with his own key; Carol does not
            bob = GranteeService(BOB, node.retrieval.get)
            carol = GranteeService(CAROL, node.retrieval.get)
            history = bytes.fromhex(made["historyref"])
            reference = await bob.decrypt_reference(
                bytes.fromhex(encrypted), node.grantees.publisher, history
            )
            assert (await client.get(f"/bytes/{reference.hex()}")).content == b"for bob"
            with pytest.raises(ActNotFound):
                await carol.decrypt_reference(bytes.fromhex(encrypted), node.grantees.publisher, history)

            # no history named: a new one, whose ACT holds the publisher only
            alone = await client.post("/bytes", content=b"mine", headers={"swarm-act": "true"})
            new_history = alone.headers["swarm-act-history-address"]
            assert new_history != made["historyref"]
            mine = await client.get(
                f"/bytes/{alone.json()['reference']}",
                headers={"swarm-act-publisher": publisher, "swarm-act-history-address": new_history},
            )
            assert mine.content == b"mine"
            with pytest.raises(ActNotFound):
                await bob.decrypt_reference(
                    bytes.fromhex(alone.json()["reference"]),
                    node.grantees.publisher,
                    bytes.fromhex(new_history),
                )
            stranger = await client.get(
                f"/bytes/{encrypted}", headers={**act_headers, "swarm-act-publisher": hexkey(CAROL)}
            )
            assert (
                stranger.status_code == 404 and "act or history entry not found" in stranger.json()["message"]
            )


async def test_act_on_bzz_files_and_sites(tmp_path: Path) -> None:
    """`Swarm-Act` on `POST /bzz` and `GET /bzz/...` as on `/bytes`: the manifest's reference is
    answered encrypted; with the publisher and history named the file (or a site's path) opens,
    without them the encrypted reference names no manifest."""
    from tests.test_bzz_api import tar_of as tar

    with trio.fail_after(60):
        async with api(tmp_path / "a") as (node, client):
            publisher = compressed(node.grantees.publisher).hex()
            made = (await client.post("/grantee", json={"grantees": [hexkey(BOB)]})).json()
            history = {"swarm-act-history-address": made["historyref"]}
            reader = {"swarm-act-publisher": publisher, **history}
            one = await client.post(
                "/bzz?name=note.txt", content=b"a note for bob", headers={"swarm-act": "true", **history}
            )
            assert one.status_code == 201, one.text
            assert one.headers["swarm-act-history-address"] == made["historyref"]
            assert "swarm-act-history-address" in one.headers["access-control-expose-headers"]
            got = await client.get(f"/bzz/{one.json()['reference']}/", headers=reader)
            assert got.status_code == 200 and got.content == b"a note for bob"
            assert (await client.get(f"/bzz/{one.json()['reference']}/")).status_code != 200

            site = {"index.html": b"<p>home</p>", "docs/a.html": b"<p>a</p>"}
            up = await client.post(
                "/bzz",
                content=tar(site),
                headers={
                    "swarm-act": "true",
                    "swarm-collection": "true",
                    "content-type": "application/x-tar",
                    "swarm-index-document": "index.html",
                    **history,
                },
            )
            assert up.status_code == 201, up.text
            ref = up.json()["reference"]
            for path, data in (("", site["index.html"]), ("docs/a.html", site["docs/a.html"])):
                page = await client.get(f"/bzz/{ref}/{path}", headers=reader)
                assert page.status_code == 200 and page.content == data
            carol = {**reader, "swarm-act-publisher": hexkey(CAROL)}
            stranger = await client.get(f"/bzz/{ref}/", headers=carol)
            assert stranger.status_code == 404 and "act or history entry not found" in stranger.text
            plain = await client.post("/bzz?name=x.txt", content=b"x")  # no Swarm-Act: as before
            assert "swarm-act-history-address" not in plain.headers
            assert (await client.get(f"/bzz/{plain.json()['reference']}/")).content == b"x"
