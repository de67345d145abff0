"""Peer sessions: accepting and dialling connections, one session per peer, and what they left.

`Sessions` greets every connection (`streamer.handshake`), keeps at most one per peer
(two connections to one peer: the one dialled by the lower overlay stays, and both sides agree),
builds the `Peer` through the factory the node gives it, runs it until it ends, and reports
`connected` / `disconnected` to the node. It remembers what ended sessions leave behind for the
status views: their byte counters, the last few disconnections and why, the protocol violations
and the refused handshakes.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import trio

from kademlia.addresses import PeerAddress
from streamer.channel import TlsCredentials
from streamer.connection import Disconnect, PeerConnection, close_quietly
from streamer.handshake import HandshakeFailed, handshake
from streamer.messages import GoodbyeCode, Handshake, Message
from streamer.outbox import Priority
from swarm.net.greeting_slots import GreetingSlots
from swarm.net.logbudget import LogBudget
from swarm.net.peer import Peer
from syncer.stats import RETIRED

__all__ = ["KEEP_GONE", "RECENT_DISCONNECTIONS", "TRAFFIC", "Disconnection", "Sessions"]

log = logging.getLogger(__name__)

MAX_GREETINGS = 128
"""Inbound connections still in their greeting, at most (a flood of half-open connections must
not slow the honest handshakes down); a newcomer from a less busy address takes the slot of the
busiest address's oldest greeting (`swarm.net.greeting_slots`), others are closed at once."""
MAX_GREETINGS_PER_HOST = 16
"""The same, from one remote address, so that one host cannot take all of MAX_GREETINGS."""
GREETING_SILENCE = 3.0
"""Seconds an inbound connection may stay silent before its first byte (an honest peer opens
with its TLS ClientHello or its Hello at once); then it is closed."""
KEEP_GONE = 256
"""Peers gone whose own counters are kept; older ones are summed under `RETIRED` (so a stream
of one-off identities costs no memory per identity)."""
RECENT_DISCONNECTIONS = 16
"""How many ended sessions are remembered (newest first), so dropped peers stay visible."""
TRAFFIC = ("payload_bytes_in", "protocol_bytes_in", "payload_bytes_out", "protocol_bytes_out")


@dataclass(frozen=True)
class Disconnection:
    """One ended session: who ended it, the Goodbye code's name, the reason, a violation or not."""

    overlay: bytes
    po: int
    at: float
    by: str
    code: str
    reason: str
    violation: bool


class Sessions:
    """Connections to peers, one session each."""

    def __init__(
        self,
        local_handshake: Callable[[bytes, bytes], Handshake],
        make_peer: Callable[[PeerConnection], Peer],
        *,
        network_id: int,
        overlay: bytes,
        connected: Callable[[Peer], None],
        disconnected: Callable[[Peer], None],
        credentials: TlsCredentials | None = None,
        refusal: Callable[[bytes], str | None] = lambda overlay: None,
        retired: Callable[[bytes], None] = lambda overlay: None,
        parting: Callable[[bytes], Message | None] = lambda overlay: None,
        ended: Callable[[bytes, bool], None] = lambda overlay, broken: None,
    ) -> None:
        """``refusal`` says why an inbound session from an overlay is not taken (None: it is);
        ``retired`` is told of a peer gone long enough for its own counters to be dropped;
        ``parting`` is what a refused peer is sent before the Goodbye (peers to try instead);
        ``ended`` is told once of each session's end, and whether it was broken off
        (`broken_off`: the manager backs off dialling that peer) or ended cleanly."""
        self._credentials = credentials  # None: a plain channel
        self._refusal = refusal
        self._retired = retired
        self._parting = parting
        self._gone: dict[bytes, None] = {}  # peers gone whose counters are kept, oldest first
        self._local_handshake = local_handshake
        self._make_peer = make_peer
        self.network_id = network_id
        self.overlay = overlay
        self._connected = connected
        self._disconnected = disconnected
        self._session_ended = ended  # how each session ended (the manager's backoff)
        self.peers: dict[bytes, Peer] = {}
        self.past_traffic: dict[bytes, dict[str, int]] = {}
        self.disconnections: deque[Disconnection] = deque(maxlen=RECENT_DISCONNECTIONS)
        self.violations = 0
        self.handshakes_refused = 0
        self.turned_away = 0  # inbound connections closed at once: too many greetings under way
        self.sessions_refused = 0  # inbound sessions not taken: the table does not want them
        self._slots = GreetingSlots(total=MAX_GREETINGS, per_host=MAX_GREETINGS_PER_HOST)
        self._greeting_scopes: dict[int, trio.CancelScope] = {}  # slot token -> its greeting
        self._refusals_logged = LogBudget()
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the nursery dialled sessions run in, until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None

    @property
    def greetings(self) -> int:
        """Inbound connections in their greeting now."""
        return len(self._slots)

    # -- connections ------------------------------------------------------------------------

    async def accept(self, stream: trio.SocketStream) -> None:
        """Serve an inbound connection (the listener's handler)."""
        grant = self._slots.admit(_remote_host(stream))
        if grant.token is None:
            self.turned_away += 1
            await close_quietly(stream)
            return
        if grant.evicted is not None:  # a busier address's oldest greeting gives way
            self.turned_away += 1
            self._greeting_scopes.pop(grant.evicted).cancel()
        conn = None
        with trio.CancelScope() as scope:
            self._greeting_scopes[grant.token] = scope
            try:
                conn = await self._greet(stream, outbound=False)
            except HandshakeFailed:
                return
            finally:
                self._slots.release(grant.token)
                self._greeting_scopes.pop(grant.token, None)
        if conn is None:  # evicted
            await close_quietly(stream)
            return
        await self._run_session(conn)

    async def connect(self, host: str, port: int) -> PeerConnection:
        """Dial once and run the session in the background; returns when the handshake is done."""
        if self._nursery is None:
            raise RuntimeError("sessions are not running")
        stream = await trio.open_tcp_stream(host, port)
        conn = await self._greet(stream, outbound=True)
        ready = trio.Event()
        self._nursery.start_soon(self._run_session, conn, ready)
        await ready.wait()
        return conn

    async def dial(self, address: PeerAddress) -> None:
        """The connection manager's dial: connect, and check the peer is who gossip said."""
        if address.overlay in self.peers:
            return
        conn = await self.connect(address.host, address.port)
        if conn.overlay != address.overlay:
            conn.close(GoodbyeCode.BAD_HANDSHAKE, "not the peer this address was advertised for")
            actual, expected = conn.overlay.hex()[:12], address.overlay.hex()[:12]
            reason = f"{address.host}:{address.port} is {actual}, not {expected}"
            raise HandshakeFailed(reason, GoodbyeCode.BAD_HANDSHAKE, "local")

    async def keep_bootnode(self, host: str, port: int, redial_min: float, redial_max: float) -> None:
        """Dial a bootnode, and again (with backoff) whenever there are no peers at all."""
        delay = redial_min
        while True:
            if self.peers:
                await trio.sleep(redial_min)
                continue
            try:
                await self.connect(host, port)
                delay = redial_min
            except (OSError, HandshakeFailed) as exc:
                log.info("dial bootnode %s:%d failed: %s", host, port, exc)
                await trio.sleep(delay)
                delay = min(delay * 2, redial_max)

    def close_all(self, code: int, reason: str) -> None:
        for peer in list(self.peers.values()):
            peer.conn.close(code, reason)

    def close(self, overlay: bytes, code: int, reason: str) -> None:
        peer = self.peers.get(overlay)
        if peer is not None:
            peer.conn.close(code, reason)

    async def _greet(self, stream: trio.abc.Stream, *, outbound: bool) -> PeerConnection:
        try:
            return await handshake(
                stream,
                self._local_handshake,
                network_id=self.network_id,
                outbound=outbound,
                credentials=self._credentials,
                silence=None if outbound else GREETING_SILENCE,
            )
        except HandshakeFailed as exc:
            self.handshakes_refused += 1
            if self._refusals_logged.allow():
                direction = "out" if outbound else "in"
                note = self._refusals_logged.note()
                log.warning("handshake %s failed (%s): %s%s", direction, exc.by, exc.reason, note)
            raise

    async def _run_session(self, conn: PeerConnection, ready: trio.Event | None = None) -> None:
        """Register the peer, run its connection until it ends, clean up after it."""
        existing = self.peers.get(conn.overlay)
        refusal = None if conn.outbound else self._refusal(conn.overlay)
        if refusal is not None:
            self.sessions_refused += 1
            parting = self._parting(conn.overlay)
            if parting is not None:
                conn.send_nowait(parting, Priority.LIVE)  # an empty outbox: never full
            await _refuse(conn, GoodbyeCode.OVERLOADED, refusal, ready, flush=True)
            return
        if existing is not None:
            if _keep_existing(existing.conn, conn, self.overlay):
                await _refuse(conn, GoodbyeCode.DUPLICATE_CONNECTION, "already connected", ready)
                return
            existing.conn.close(GoodbyeCode.DUPLICATE_CONNECTION, "replaced by a newer connection")
            self._forget(existing)
        peer = self._make_peer(conn)
        self.peers[conn.overlay] = peer
        self._gone.pop(conn.overlay, None)
        self._connected(peer)
        log.info("peer %s connected (%s, po %d)", peer, "out" if conn.outbound else "in", peer.po)
        if ready is not None:
            ready.set()
        try:
            disconnect = await peer.run()
        except Exception:
            # a bug in handling this peer must not take the node down: log it, drop the peer
            log.exception("peer %s: unexpected error; dropping the connection", conn.overlay.hex()[:12])
            disconnect = Disconnect("local", GoodbyeCode.PROTOCOL_ERROR, "internal error")
        finally:
            self._forget(peer)
        self._ended(peer, disconnect)

    def _forget(self, peer: Peer) -> None:
        if self.peers.get(peer.overlay) is not peer:
            return
        del self.peers[peer.overlay]
        totals = self.past_traffic.setdefault(peer.overlay, dict.fromkeys(TRAFFIC, 0))
        for name in TRAFFIC:
            totals[name] += getattr(peer.conn.stats, name)
        peer.closed("peer disconnected")
        self._disconnected(peer)
        self._gone[peer.overlay] = None
        while len(self._gone) > KEEP_GONE:
            self._retire(next(iter(self._gone)))

    def _retire(self, overlay: bytes) -> None:
        del self._gone[overlay]
        traffic = self.past_traffic.pop(overlay, None)
        if traffic is not None:
            retired = self.past_traffic.setdefault(RETIRED, dict.fromkeys(TRAFFIC, 0))
            for name in TRAFFIC:
                retired[name] += traffic[name]
        self._retired(overlay)

    def _ended(self, peer: Peer, disconnect: Disconnect) -> None:
        self.violations += disconnect.violation
        code = _code_name(disconnect.code)
        self.disconnections.appendleft(
            Disconnection(
                peer.overlay,
                peer.po,
                time.time(),
                disconnect.by,
                code,
                disconnect.reason or _no_reason(disconnect.by, code),
                disconnect.violation,
            )
        )
        log.info("peer %s disconnected by %s: %s (%s)", peer, disconnect.by, disconnect.reason or "-", code)
        self._session_ended(peer.overlay, broken_off(disconnect, outbound=peer.conn.outbound))

    def traffic(self, overlay: bytes) -> dict[str, int]:
        """Byte counters of every session with the peer, the current one included."""
        totals = dict(self.past_traffic.get(overlay, dict.fromkeys(TRAFFIC, 0)))
        peer = self.peers.get(overlay)
        if peer is not None:
            for name in TRAFFIC:
                totals[name] += getattr(peer.conn.stats, name)
        return totals


_SENT_AWAY = (GoodbyeCode.OVERLOADED, GoodbyeCode.PRUNED)


def _remote_host(stream: trio.SocketStream) -> str:
    try:
        return str(stream.socket.getpeername()[0])
    except OSError:  # already gone
        return ""


def _keep_existing(existing: PeerConnection, new: PeerConnection, own: bytes) -> bool:
    """Two connections to one peer: keep the one dialled by the lower overlay (both sides agree).

    Two connections dialled the same way mean the peer reconnected: the newer one wins.
    """
    if existing.outbound == new.outbound:
        return False
    dialler_of_new = own if new.outbound else new.overlay
    dialler_of_existing = own if existing.outbound else existing.overlay
    return dialler_of_existing < dialler_of_new


async def _refuse(
    conn: PeerConnection, code: int, reason: str, ready: trio.Event | None, *, flush: bool = False
) -> None:
    """Say Goodbye on an established connection we do not keep (after what is queued, if
    `flush`), and see it closed."""
    conn.close(code, reason, flush=flush)
    if ready is not None:
        ready.set()
    await conn.run(_drop)


async def _drop(msg: object) -> None:
    return None


def _code_name(code: int) -> str:
    try:
        return GoodbyeCode(code).name
    except ValueError:
        return str(code)


def _no_reason(by: str, code: str) -> str:
    """What to say of a disconnection that came with no reason: who ended it, and its code."""
    who = "the peer" if by == "remote" else "this node"
    return f"{who} ended the connection ({code}) without giving a reason"


#: Goodbye codes that end a session without blaming either side.
_CLEAN_ENDS = frozenset(
    {GoodbyeCode.NORMAL, GoodbyeCode.SHUTDOWN, GoodbyeCode.DUPLICATE_CONNECTION, GoodbyeCode.PRUNED}
)


def broken_off(disconnect: Disconnect, *, outbound: bool) -> bool:
    """Whether dialling the peer again at once would likely end the same way, so the session's
    end counts as one failed dial: a protocol violation, ours or the peer's word (a peer that
    refuses us, or one we refuse), or a peer we dialled sending us away (full, or pruning us:
    a clean end otherwise). Every session's end is judged here once, so one refusal is one
    step of the backoff, not two."""
    if outbound and disconnect.by == "remote" and disconnect.code in _SENT_AWAY:
        return True
    return disconnect.violation or disconnect.code not in _CLEAN_ENDS
