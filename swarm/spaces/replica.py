"""One space at a node (trio shell): read its member list and member feeds, keep them processed.

The node hands it a `ChunkSource` (its store, the swarm, a way to keep what it fetched); the
rules are the pure `SpaceReader`'s. Tasks, in one nursery:

- the **member list** reader: polls the local store for the next member list update (and asks
  the swarm for it now and then), admits members, starts a feed reader for each;
- a **feed reader** per member: fetches the member's next messages in order, within the window
  the engine allows (so a slow reader holds a bounded number of messages), from the local store,
  polling it;
- per feed, a **prober** and a **follower** (`swarm.spaces.sources`): the first asks the swarm for
  the next message every few seconds (for feeds this node does not get by pull sync), the second
  keeps what live propagation pushes;
- the **pump**: processes what is ready and extends the total order whenever something arrived,
  and on a tick (inactive members only time out with the clock).

Writers' messages posted through this node are offered at once (`publish`), without waiting for
a poll. Everything it waits for is bounded by the caller's timeouts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio

from chunks.chunk import Chunk
from chunks.feeds import parse_update, update_address
from chunks.soc import InvalidSoc
from swarm.spaces.config import SpaceConfig
from swarm.spaces.messages import MEMBERS_TOPIC, InvalidSpaceMessage, decode_member_entry, message_topic
from swarm.spaces.reader import SpaceReader, WriterView
from swarm.spaces.sources import ChunkSource, FeedFollow, follow_feed, probe_feed, stored_payload

__all__ = ["NotCaughtUp", "Replica", "ReplicaStatistics"]

log = logging.getLogger(__name__)


class NotCaughtUp(Exception):
    """The replica could not get far enough within the time given; the text says where it is."""


@dataclass(frozen=True)
class ReplicaStatistics:
    """Where one space's replica at this node stands."""

    members: int  # members admitted from the member list
    processed: int  # messages processed (in causal order), every member's
    held: int  # messages fetched and held, not processed yet (waiting for what they depend on)
    ordered: int  # messages placed in the total order
    settled: bool  # every feed's last look found nothing new and everything ready is processed


class Replica:
    """A space followed by a node. Start with ``await nursery.start(replica.run)``."""

    def __init__(
        self,
        space: bytes,
        source: ChunkSource,
        config: SpaceConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
        on_genesis: Callable[[], None] = lambda: None,
        follow: FeedFollow | None = None,
    ) -> None:
        self.space = space
        self.topic = message_topic(space)
        self.source = source
        self.config = config or SpaceConfig()
        self.clock = clock
        self._on_genesis = on_genesis
        self._follow = follow
        self.reader = SpaceReader(capacity=self.config.capacity, inactive_after=self.config.inactive_after)
        self.reader.members_complete = False  # until the member list is read as far as it goes here
        self.name: str | None = None
        self.member_entries = 0  # member list updates read
        self.bad_entries = 0  # member list updates that were not member entries (skipped)
        self._published: dict[int, int] = {}  # per member: next seq after its last write through here
        self._idle: dict[int, bool] = {-1: False}  # per feed (-1: the member list): last look found nothing
        self._full: set[int] = set()  # members whose last look found their window full
        self._pumped = trio.Event()  # set after each pump that changed something
        self._arrived = trio.Event()  # set when something was offered: the pump should run
        self._room = trio.Event()  # set when processing freed room in the windows
        self._nursery: trio.Nursery | None = None

    # -- running ----------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._member_list_loop)
            nursery.start_soon(self._pump_loop)
            task_status.started()

    async def _member_list_loop(self) -> None:
        self._nursery_start(self._prober, lambda: self._member_list_address(), -1)
        self._start_follow(self.space, MEMBERS_TOPIC, lambda: self.member_entries)
        while True:
            data = self.source.local(self._member_list_address())
            if data is None:
                self._idle[-1] = True
                if not self.reader.members_complete and self.member_entries:
                    self.reader.members_complete = True
                    self._arrived.set()
                await self._nap()
                continue
            self._idle[-1] = False
            self._admit(self.member_entries, data)
            self.member_entries += 1
            await trio.lowlevel.checkpoint()

    def _member_list_address(self) -> bytes:
        return update_address(self.space, MEMBERS_TOPIC, self.member_entries)

    def _admit(self, index: int, data: bytes) -> None:
        try:
            update = parse_update(self.space, MEMBERS_TOPIC, index, data)
            entry = decode_member_entry(update.soc.payload, index)
        except (InvalidSoc, InvalidSpaceMessage) as exc:
            self.bad_entries += 1
            log.warning("space %s: member list update %d skipped: %s", self.space.hex(), index, exc)
            return
        if index == 0:
            self.name = entry.name
            self._on_genesis()
        known = self.reader.members
        try:
            member = self.reader.add_member(entry.owner, self.clock())
        except ValueError as exc:  # the space is full: every reader skips the same entries
            self.bad_entries += 1
            log.warning("space %s: member list update %d skipped: %s", self.space.hex(), index, exc)
            return
        if member == known:  # a new member: read its feed
            self._idle[member] = False
            self.reader.orderer.set_drained(member, False)
            self._nursery_start(self._feed_loop, member)
            self._nursery_start(self._prober, lambda: self._next_address(member), member)
            self._start_follow(entry.owner, self.topic, lambda: self._first_missing(member))
        self._arrived.set()

    def _start_follow(self, owner: bytes, topic: bytes, start: Callable[[], int]) -> None:
        """Keep what live propagation pushes of a feed, if this node follows feeds live."""
        if self._follow is not None:
            retry = self.config.remote_every
            self._nursery_start(
                follow_feed, self._follow, self.source, owner, topic, start, retry, self._arrived_now
            )

    def _nursery_start(self, function: Callable[..., Awaitable[None]], *args: object) -> None:
        assert self._nursery is not None, "the replica is not running"
        self._nursery.start_soon(function, *args)

    async def _feed_loop(self, member: int) -> None:
        while True:
            seq = self._next_wanted(member)
            if seq is None:
                self._idle[member] = True
                self._full.add(member)
                self.reader.orderer.set_drained(member, False)  # more may wait in the store
                await self._room_or_nap()
                continue
            data = self.source.local(self.message_address(member, seq))
            if data is None:
                self._idle[member] = True
                self.reader.orderer.set_drained(member, True)
                await self._nap()
                continue
            self._idle[member] = False
            self.reader.orderer.set_drained(member, False)
            self._offer(member, seq, data)
            await trio.lowlevel.checkpoint()

    def _first_missing(self, member: int) -> int:
        return self.reader.orderer.wanted(member).start

    def _next_wanted(self, member: int) -> int | None:
        """The next message of ``member`` to fetch, None if its window is full."""
        orderer = self.reader.orderer
        for seq in orderer.wanted(member):
            if not orderer.holds(member, seq):
                return seq
        return None

    def message_address(self, member: int, seq: int) -> bytes:
        return update_address(self.reader.orderer.owner(member), self.topic, seq)

    def _next_address(self, member: int) -> bytes | None:
        seq = self._next_wanted(member)
        return None if seq is None else self.message_address(member, seq)

    def _offer(self, member: int, seq: int, data: bytes) -> bool:
        payload = stored_payload(data)
        # a chunk that cannot be a SOC at all is offered as nothing: the reader finds it invalid
        taken = self.reader.offer(member, seq, payload or b"", self.clock())
        self._arrived.set()
        return taken

    def _prober(self, address_of: Callable[[], bytes | None], feed: int) -> Awaitable[None]:
        what = f"space {self.space.hex()}: feed {feed}"
        return probe_feed(self.source, address_of, self.config.remote_every, self._arrived_now, what)

    def _arrived_now(self) -> None:
        self._arrived.set()

    async def _nap(self) -> None:
        with trio.move_on_after(self.config.poll):
            await self._arrived.wait()

    async def _room_or_nap(self) -> None:
        with trio.move_on_after(self.config.tick):
            await self._room.wait()

    async def _pump_loop(self) -> None:
        while True:
            with trio.move_on_after(self.config.tick):
                await self._arrived.wait()
            self._arrived = trio.Event()
            causal, ordered = self.reader.pump(self.clock())
            if causal or ordered:
                self._pumped.set()
                self._pumped = trio.Event()
            if causal:  # room in the windows: a feed that was full must look before the replica settles
                for member in self._full:
                    self._idle[member] = False
                self._full.clear()
                self._room.set()
                self._room = trio.Event()

    # -- for the node's API ------------------------------------------------------------------------

    def wake(self) -> None:
        """Something was stored: look at the store now rather than at the next poll."""
        self._arrived.set()

    def publish(self, member: int, seq: int, data: bytes) -> None:
        """A member's message just stored at this node: offer it now rather than at the next poll."""
        self._published[member] = max(self._published.get(member, 0), seq + 1)
        self._offer(member, seq, data)

    def settled(self) -> bool:
        """Whether every feed's last look found nothing new and everything ready is processed."""
        return all(self._idle.values()) and not self._arrived.is_set()

    async def wait_settled(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until `settled`; whether it did."""
        with trio.move_on_after(timeout):
            while not self.settled():
                await trio.sleep(self.config.poll / 2)
            return True
        return False

    async def wait_changed(self, timeout: float) -> None:
        """Wait until the next pump that processed or ordered something, at most ``timeout`` s."""
        with trio.move_on_after(timeout):
            await self._pumped.wait()

    async def writer_view(self, owner: bytes, timeout: float) -> WriterView:
        """What ``owner`` needs to write its next message, once this replica has processed every
        message of it there is (locally, or from the swarm); NotCaughtUp if that takes too long."""
        await self.wait_settled(timeout)
        member = self.reader.orderer.member_of(owner)
        if member is None and not self.member_entries:
            raise NotCaughtUp(f"this node knows no space {self.space.hex()}: it has no member list (yet)")
        if member is None:
            raise NotCaughtUp(f"{owner.hex()} is not a member of space {self.space.hex()} (yet)")
        with trio.move_on_after(timeout):
            while True:
                view = self.reader.writer_view(member)
                if not view.pending_own:
                    ahead = self.message_address(member, view.next)
                    data = self.source.local(ahead)
                    if data is None and self._published.get(member) == view.next:
                        return view  # it wrote its last message through here: nothing newer elsewhere
                    if data is None:
                        with trio.move_on_after(1.0):
                            data = await self.source.remote(ahead)
                        if data is None:
                            return view
                        self.source.keep(Chunk(ahead, data))
                self._arrived.set()
                await self.wait_changed(self.config.tick)
        raise NotCaughtUp(self._behind(member, self.reader.writer_view(member)))

    def _behind(self, member: int, view: WriterView) -> str:
        waiting = [w for w in self.reader.orderer.waits() if w.member == member]
        why = f"; it waits for {waiting[0].needs[0]}:{waiting[0].needs[1]}" if waiting else ""
        return (
            f"this node has processed {view.next} messages of the member, with {view.pending_own} more "
            f"held{why}: try again, or write through a node that has caught up"
        )

    def statistics(self) -> ReplicaStatistics:
        orderer = self.reader.orderer
        return ReplicaStatistics(
            members=orderer.members,
            processed=orderer.processed,
            held=orderer.held_total(),
            ordered=self.reader.total.emitted,
            settled=self.settled(),
        )
