"""Reading feeds over an async getter: concurrent lookup (bounded, stale probes cancelled), at, resolve."""

from __future__ import annotations

import random

import pytest
import trio
import trio.testing

from chunks.chunk import Chunk
from chunks.ethkey import Secp256k1Key
from chunks.feeds import make_update_v1, make_update_v2, parse_update, topic_from_text, update_address
from chunks.soc import InvalidSoc
from swarm.feeds.finder import find_at, find_latest, get_update, resolve_root

KEY = Secp256k1Key.from_hex("22" * 32)
OWNER = KEY.owner
TOPIC = topic_from_text("feeds test")


class Network:
    """Chunks by address, each answer after a random delay; counts probes in flight."""

    def __init__(self, seed: int = 0) -> None:
        self.chunks: dict[bytes, bytes] = {}
        self.random = random.Random(seed)
        self.in_flight = 0
        self.most_in_flight = 0
        self.asked: list[bytes] = []
        self.cancelled = 0
        self.hang: set[bytes] = set()

    def publish(self, updates: int) -> None:
        for index in range(updates):
            soc = make_update_v1(KEY, TOPIC, index, bytes([index % 256]) * 32, 1000 + 10 * index)
            self.chunks[soc.address] = soc.data

    async def get(self, address: bytes) -> bytes | None:
        self.asked.append(address)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await trio.sleep(self.random.uniform(0.01, 0.5))
            if address in self.hang:
                await trio.sleep_forever()
            return self.chunks.get(address)
        except trio.Cancelled:
            self.cancelled += 1
            raise
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize("updates", [0, 1, 2, 9, 300])
async def test_find_latest_returns_the_last_update(
    autojump_clock: trio.testing.MockClock, updates: int
) -> None:
    net = Network(seed=updates)
    net.publish(updates)
    with trio.fail_after(600):
        found = await find_latest(net.get, OWNER, TOPIC, max_probes=4)
    if updates == 0:
        assert found is None
    else:
        assert found is not None and found.index == updates - 1
        assert found.v1_fields == (1000 + 10 * (updates - 1), bytes([(updates - 1) % 256]) * 32)
    assert net.most_in_flight <= 4
    assert net.in_flight == 0  # nothing left running


async def test_stale_probes_are_cancelled_and_a_hung_probe_times_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    net = Network(seed=7)
    net.publish(20)
    net.hang.add(update_address(OWNER, TOPIC, 127))  # an unresponsive peer: never answers
    with trio.fail_after(600):
        found = await find_latest(net.get, OWNER, TOPIC, max_probes=8, probe_timeout=2.0)
    assert found is not None and found.index == 19
    assert net.cancelled >= 1
    assert net.in_flight == 0


async def test_a_probe_that_times_out_counts_as_missing(autojump_clock: trio.testing.MockClock) -> None:
    """As in bee (1 s a probe): an update that does not come in time is taken as not there."""
    net = Network(seed=8)
    net.publish(20)
    net.hang.add(update_address(OWNER, TOPIC, 19))  # the latest, held by an unresponsive peer
    with trio.fail_after(600):
        found = await find_latest(net.get, OWNER, TOPIC, probe_timeout=2.0)
    assert found is not None and found.index == 18
    assert net.in_flight == 0


async def test_start_after_the_latest_and_a_start_hint(autojump_clock: trio.testing.MockClock) -> None:
    net = Network(seed=3)
    net.publish(50)
    with trio.fail_after(600):
        assert await find_latest(net.get, OWNER, TOPIC, start=50) is None
        net.asked.clear()
        found = await find_latest(net.get, OWNER, TOPIC, start=48, max_probes=2)
    assert found is not None and found.index == 49
    assert update_address(OWNER, TOPIC, 0) not in net.asked  # nothing below the hint is probed


async def test_a_forged_latest_update_is_refused(autojump_clock: trio.testing.MockClock) -> None:
    net = Network()
    net.publish(3)
    mallory = make_update_v2(Secp256k1Key.generate(), TOPIC, 2, b"forged")
    net.chunks[update_address(OWNER, TOPIC, 2)] = mallory.data
    with trio.fail_after(600), pytest.raises(InvalidSoc):
        await find_latest(net.get, OWNER, TOPIC)


async def test_get_update_by_index(autojump_clock: trio.testing.MockClock) -> None:
    net = Network()
    net.publish(3)
    with trio.fail_after(60):
        update = await get_update(net.get, OWNER, TOPIC, 1)
        assert update is not None and update.index == 1
        assert await get_update(net.get, OWNER, TOPIC, 3) is None


async def test_find_at_bisects_on_timestamps(autojump_clock: trio.testing.MockClock) -> None:
    net = Network()
    net.publish(100)  # update i stamped 1000 + 10 i
    with trio.fail_after(600):
        for at, expected in [(999, None), (1000, 0), (1005, 0), (1010, 1), (1555, 55), (5000, 99)]:
            net.asked.clear()
            found = await find_at(net.get, OWNER, TOPIC, at, start=0, end=99)
            assert (found.index if found else None) == expected
            assert len(net.asked) <= 8  # log2(100) probes, not a scan


async def test_resolve_root_v1_v2_and_the_ambiguous_length() -> None:
    content = Chunk.from_payload(b"the content")
    store = {content.address: content}

    async def get_chunk(address: bytes) -> Chunk | None:
        return store.get(address)

    v1 = make_update_v1(KEY, TOPIC, 0, content.address, 1)
    root, version = await resolve_root(parse_update(OWNER, TOPIC, 0, v1.data), get_chunk)
    assert (root, version) == (content, "v1")
    v2 = make_update_v2(KEY, TOPIC, 1, b"inline content")
    root, version = await resolve_root(parse_update(OWNER, TOPIC, 1, v2.data), get_chunk)
    assert (root, version) == (Chunk.from_payload(b"inline content"), "v2")
    # 40 payload bytes look like v1 (timestamp + reference), but the "reference" is nowhere: v2
    ambiguous = make_update_v2(KEY, TOPIC, 2, b"x" * 40)
    root, version = await resolve_root(parse_update(OWNER, TOPIC, 2, ambiguous.data), get_chunk)
    assert (root.payload, version) == (b"x" * 40, "v2")
