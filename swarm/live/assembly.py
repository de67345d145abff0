"""Building a node's live service from the node's parts: its Ethereum key (``DIR/eth.key``, which
signs the topic messages it publishes), the frame it last started topic streams in (persisted, so
a restarted node never reuses sequence numbers), and the narrow functions the service needs of the
store, the retrieval and its cache."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Protocol

from chunks import Chunk
from chunks.ethkey import Secp256k1Key
from localstore import ChunkDamaged, ChunkNotFound
from swarm.live.config import LiveConfig
from swarm.live.service import LiveService
from swarm.net.retrieval import Retrieval

__all__ = ["FRAME_KEY", "build_live_service"]

FRAME_KEY = b"live/publisher-frame"
_FRAME = struct.Struct(">Q")


class _Store(Protocol):
    def get(self, address: bytes) -> Chunk: ...

    def get_state(self, key: bytes) -> bytes | None: ...

    def put_state(self, key: bytes, value: bytes) -> None: ...


def build_live_service(
    key: Secp256k1Key,
    store: _Store,
    retrieval: Retrieval,
    store_chunks: Callable[[list[Chunk]], object],
    config: LiveConfig,
    evidence: Callable[[bytes, bytes, bytes], object] = lambda address, first, second: None,
) -> LiveService:
    """The live service of a node: ``evidence`` keeps the two signed chunks of an equivocation
    (the node's `syncer.evidence.EquivocationLog`)."""

    def held(address: bytes) -> bytes | None:
        """The data at ``address`` here: the cache first (every new update is put there, so a
        repeat is usually answered from memory), then the store."""
        if address in retrieval.cache:
            cached = retrieval.cache.get(address)
            if cached is not None:
                return cached.data
        try:
            return store.get(address).data
        except (ChunkNotFound, ChunkDamaged):
            return None

    def load_frame() -> int:
        raw = store.get_state(FRAME_KEY)
        return _FRAME.unpack(raw)[0] if raw is not None and len(raw) == _FRAME.size else 0

    return LiveService(
        key=key,
        retrieve=retrieval.get,
        lookup=held,
        evidence=evidence,
        store=store_chunks,
        remember=retrieval.cache.put,
        load_frame=load_frame,
        save_frame=lambda frame: store.put_state(FRAME_KEY, _FRAME.pack(frame)),
        config=config,
    )
