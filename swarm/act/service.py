"""Grantee lists of the node's ACT, stored in the swarm as Bee's pkg/accesscontrol stores them.

The node is the publisher (its Ethereum key, as Bee's `s.publicKey`). An update (Bee's
`UpdateHandler`) reads the ACT the history names for now (or starts a history and an ACT with a
fresh access key), adds grantees to it (a revocation makes a new ACT with a new access key and
the grantees left), stores the grantee list encrypted, and adds an entry to the history: the
ACT's reference with the encrypted list reference as metadata. Records: swarm.act.records.

Chunks are handed to `store` (the caller stamps and pushes them); they are read with `fetch`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Sequence

from chunks import Chunk
from chunks.ethkey import Secp256k1Key
from swarm.act.records import (
    ActNotFound,
    add_grantees,
    decode_act,
    decode_grantees,
    encode_act,
    encode_grantees,
    history_lookup,
    history_path,
    publisher_cipher_key,
    remove_grantees,
    session_key,
)
from swarm.files.encryption import KEY_SIZE, transcrypt
from swarm.files.transfer import Upload, read_file, tree_fetch
from swarm.manifest.reader import ManifestReader
from swarm.manifest.trie import Entry, save

__all__ = ["GranteeService", "TooLarge"]

Fetch = Callable[[bytes], Awaitable[Chunk]]
Store = Callable[[list[Chunk]], object]
MAX_RECORD = 4 * 2**20
"""Largest grantee list, ACT or history node read (about 64000 grantees)."""


class TooLarge(ValueError):
    """A record (grantee list, ACT, history node) larger than MAX_RECORD."""


class GranteeService:
    def __init__(self, key: Secp256k1Key, fetch: Fetch, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._fetch = fetch
        self._clock = clock
        self._publisher = b"\x04" + key.public_key

    @property
    def publisher(self) -> bytes:
        """The node's public key (65 bytes), the publisher of its ACTs."""
        return self._publisher

    def list_reference(self, encrypted_ref: bytes) -> bytes:
        """The reference (64 bytes: an encrypted file's) of the grantee list `update` named."""
        return transcrypt(publisher_cipher_key(self._key), encrypted_ref)

    async def grantees(self, encrypted_ref: bytes) -> list[bytes]:
        """The grantees (65-byte keys) of the list at `encrypted_ref` (as `update` gave it)."""
        return decode_grantees(await self._read(self.list_reference(encrypted_ref)))

    async def update(
        self,
        store: Store,
        encrypted_ref: bytes | None,
        history: bytes | None,
        add: Sequence[bytes],
        revoke: Sequence[bytes] = (),
    ) -> tuple[bytes, bytes]:
        """Create (`encrypted_ref` None) or change a grantee list; (its encrypted reference, the
        new history's reference). Raises ActNotFound, EmptyGranteeList, and what `fetch` raises."""
        now = int(self._clock())
        entries: dict[bytes, Entry] = {}
        if history is None:
            act = self._new_act()
        else:
            entries = await ManifestReader(self._read, history).entries()
            act = decode_act(await self._read(history_lookup(entries, now).reference))  # as _act_at
        grantees = [] if encrypted_ref is None else await self.grantees(encrypted_ref)
        grantees = add_grantees(grantees, add)
        to_add = list(add)
        if revoke:
            grantees = remove_grantees(grantees, revoke)
            if history is not None:
                act = self._new_act()
            to_add = grantees
        for grantee in to_add:  # the publisher named as a grantee gets a new access key, as in Bee
            new_key = grantee == self._publisher
            self._grant(act, grantee, os.urandom(KEY_SIZE) if new_key else self._access_key(act))
        list_ref = self._save(store, encode_grantees(grantees), encrypt=True)
        new_encrypted = transcrypt(publisher_cipher_key(self._key), list_ref)
        act_ref = self._save(store, encode_act(act))
        entries[history_path(now)] = Entry(act_ref, {"encryptedglref": new_encrypted.hex()})
        saved = save(entries)
        store(saved.chunks)
        return new_encrypted, saved.reference

    async def encrypt_reference(
        self, store: Store, reference: bytes, history: bytes | None
    ) -> tuple[bytes, bytes]:
        """Bee's `UploadHandler`: `reference` encrypted with the access key of the ACT the history
        names for now, and the history's reference (a new history and ACT when `history` is None)."""
        if history is None:
            act = self._new_act()
            act_ref = self._save(store, encode_act(act))
            saved = save({history_path(int(self._clock())): Entry(act_ref)})
            store(saved.chunks)
            history = saved.reference
        else:
            act = await self._act_at(history, int(self._clock()))
        return transcrypt(self._access_key(act, self._publisher), reference), history

    async def decrypt_reference(
        self, encrypted: bytes, publisher: bytes, history: bytes, timestamp: int | None = None
    ) -> bytes:
        """Bee's `DownloadHandler`: the reference a grantee (this node) decrypts with the access
        key its entry of `publisher`'s ACT (at `timestamp`, default now) holds; ActNotFound if none."""
        act = await self._act_at(history, int(self._clock()) if timestamp is None else timestamp)
        return transcrypt(self._access_key(act, publisher), encrypted)

    async def _act_at(self, history: bytes, timestamp: int) -> dict[bytes, bytes]:
        entries = await ManifestReader(self._read, history).entries()
        return decode_act(await self._read(history_lookup(entries, timestamp).reference))

    def _new_act(self) -> dict[bytes, bytes]:
        act: dict[bytes, bytes] = {}
        self._grant(act, self._publisher, os.urandom(KEY_SIZE))
        return act

    def _grant(self, act: dict[bytes, bytes], grantee: bytes, access_key: bytes) -> None:
        lookup = session_key(self._key, grantee, b"\x00")
        act[lookup] = transcrypt(session_key(self._key, grantee, b"\x01"), access_key)

    def _access_key(self, act: dict[bytes, bytes], publisher: bytes | None = None) -> bytes:
        """The access key this node's entry of `publisher`'s ACT holds (ECDH of this node's key
        with the publisher's: the same keys the publisher derived for this node)."""
        other = self._publisher if publisher is None else publisher
        encrypted = act.get(session_key(self._key, other, b"\x00"))
        if encrypted is None:
            raise ActNotFound("the ACT holds no access key for this node")
        return transcrypt(session_key(self._key, other, b"\x01"), encrypted)

    def _save(self, store: Store, data: bytes, *, encrypt: bool = False) -> bytes:
        upload = Upload(store, encrypt=encrypt)
        upload.feed(data)
        return upload.finish()

    async def _read(self, reference: bytes) -> bytes:
        fetch = tree_fetch(reference, self._fetch)
        root = await fetch(reference)
        if root.span > MAX_RECORD:
            raise TooLarge(
                f"{reference.hex()} holds {root.span} bytes, more than an ACT record's {MAX_RECORD}"
            )
        return await read_file(reference, fetch)
