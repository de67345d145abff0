"""GSOC (Bee's "graffiti" single-owner chunks) carried by live propagation.

Bee's GSOC is pub/sub by SOC address: a writer uploads ever new content under one SOC address
and every node holding that address hands each new payload to its ``/gsoc/subscribe/{address}``
listeners. Here the node keeps the *first* content of a SOC address (a second one is an
equivocation, kept as evidence), so the payloads travel as live topic messages instead: a SOC
uploaded at a node while some node listens at its address is also published on the topic
`gsoc_topic` (address), and a listener subscribes to that topic. Payloads are the SOC's wrapped
payload without its span, as Bee delivers them.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from chunks import Chunk, keccak256
from chunks.soc import InvalidSoc
from swarm.live.interest import InterestTable
from swarm.live.messages import Stream
from swarm.live.subscription import TopicSubscription

__all__ = ["Gsoc", "gsoc_topic"]

_DOMAIN = b"swarmpy/gsoc"


def gsoc_topic(address: bytes) -> bytes:
    """The live topic that carries the payloads written at a SOC address."""
    return keccak256(_DOMAIN + address)


class _Live(Protocol):
    @property
    def interest(self) -> InterestTable: ...

    def subscribe(self, topic: bytes) -> AbstractAsyncContextManager[TopicSubscription]: ...

    def publish_topic(self, topic: bytes, payload: bytes) -> object: ...


class Gsoc:
    """Publishes uploaded SOCs someone listens to; opens listeners."""

    def __init__(self, live: _Live) -> None:
        self._live = live
        self.published = 0

    def uploaded(self, chunks: list[Chunk]) -> None:
        """Chunks uploaded at this node: each SOC whose address has a listener is published."""
        for chunk in chunks:
            topic = gsoc_topic(chunk.address)
            if not self._live.interest.relays(Stream.topic_of(topic), None):
                continue
            try:
                soc = chunk.soc()
            except InvalidSoc:
                continue  # a content chunk
            self._live.publish_topic(topic, soc.wrapped[8:])
            self.published += 1

    def listen(self, address: bytes) -> AbstractAsyncContextManager[TopicSubscription]:
        """Payloads written at ``address`` (at this node or any other) while the context lasts."""
        return self._live.subscribe(gsoc_topic(address))
