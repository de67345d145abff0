"""Encrypted files (128-hex references: address and key) under pins and stewardship, as Bee
takes them: pinned at upload and by reference at another node (which fetches and keeps the
encrypted chunks), checked and re-uploaded by stewardship, unpinned; a key that does not open
the file is refused without pinning anything."""

from __future__ import annotations

import random
from pathlib import Path

import httpx
import trio

from swarm.testing import node_config, start_node, wait_for


async def test_encrypted_references_pin_check_and_reupload(tmp_path: Path) -> None:
    data = random.Random(5).randbytes(40 * 4096 + 123)
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            first = await start_node(nursery, node_config(tmp_path / "a"))
            second = await start_node(
                nursery, node_config(tmp_path / "b", peers=[("127.0.0.1", first.p2p_port)])
            )
            await wait_for(lambda: len(second.sessions.peers) == 1, timeout=20)
            a = httpx.AsyncClient(base_url=f"http://127.0.0.1:{first.api_port}", timeout=30)
            b = httpx.AsyncClient(base_url=f"http://127.0.0.1:{second.api_port}", timeout=30)
            async with a, b:
                up = await a.post(
                    "/bytes", content=data, headers={"swarm-encrypt": "true", "swarm-pin": "true"}
                )
                assert up.status_code == 201, up.text
                reference, chunks = up.json()["reference"], up.json()["chunks"]
                assert len(reference) == 128
                assert (await a.get("/pins")).json()["references"] == [reference]
                assert (await a.get(f"/pins/{reference}")).json()["chunks"] == chunks

                wrong = reference[:64] + "ab" * 32  # the right address, a key that does not open it
                refused = await b.post(f"/pins/{wrong}")
                # decrypted with the wrong key, the root names chunks nobody has, or is no tree at all
                assert refused.status_code in (404, 502) and "cannot pin" in refused.text, refused.text
                assert (await b.get("/pins")).json()["references"] == []

                pinned = await b.post(f"/pins/{reference}")
                assert pinned.status_code == 201, pinned.text
                assert pinned.json()["chunks"] == chunks
                assert (await b.get("/pins")).json()["references"] == [reference]
                # what b keeps is the encrypted chunks, named by their plain addresses
                assert second.uploads.pins.roots() == {bytes.fromhex(reference): chunks}
                assert all(
                    len(address) == 32 and address in second.store
                    for address in second.uploads.pins.addresses()
                )
                assert (await b.get(f"/bytes/{reference}")).content == data

                check = await b.get(f"/stewardship/{reference}")
                assert check.json() == {"isRetrievable": True}
                again = await b.put(f"/stewardship/{reference}")
                assert again.status_code == 200, again.text
                assert (await b.get(f"/stewardship/{wrong}")).json() == {"isRetrievable": False}

                assert (await b.delete(f"/pins/{reference}")).status_code == 200
                assert (await b.get("/pins")).json()["references"] == []
            nursery.cancel_scope.cancel()
