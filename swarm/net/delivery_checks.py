"""The BMT checks of retrieved chunks, gathered into batches for the node's verifier workers.

Every chunk a retrieval receives is hashed against its address before it is used (about 0.1 ms
of Python per full chunk, a quarter of what a download that retrieves costs the node). With a
verifier worker (`syncer.verifier`, handed in as ``verify``) that hashing runs on another core.
Handing chunks over one at a time would cost a pipe write and a reply per chunk, so deliveries
that arrive together are checked together: the first delivery to ask becomes the batch's
leader, lets the tasks woken with it (the other answers read from the same socket data) join
for one scheduling round, then submits them all and hands each its verdict. Batches pipeline:
a delivery that arrives while one is being verified starts the next.

The leader's submission and wait are shielded from cancellation (a hedged race that another
peer won, a download cut short), so the deliveries that joined it always get their verdicts;
the wait is bounded by the verifier, which verifies in this process whatever a failed worker
owed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from chunks import Chunk, InvalidChunk

__all__ = ["MAX_BATCH", "BatchedChecks", "Verify"]

Verify = Callable[[list[Chunk]], Awaitable[list[str | None]]]
"""Each chunk's problem (None if valid), in order: `swarm.node.Node._verify_chunks`."""

MAX_BATCH = 128
"""Most chunks in one submission (a download has 32 retrievals in flight; a peer 64)."""


class _Verdict:
    __slots__ = ("done", "problem")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.problem: str | None = None


class BatchedChecks:
    """Checks retrieved chunks with ``verify``, the deliveries of one scheduling round together."""

    def __init__(self, verify: Verify) -> None:
        self._verify = verify
        self._waiting: list[tuple[Chunk, _Verdict]] = []
        self.batches = 0  # submissions made
        self.chunks = 0  # chunks checked

    async def checked(self, chunk: Chunk) -> Chunk:
        """`chunk` marked `verified` (as `Chunk.checked` returns it) if its data hashes to its
        address; `InvalidChunk` if not."""
        if chunk.verified:
            return chunk
        verdict = _Verdict()
        self._waiting.append((chunk, verdict))
        if len(self._waiting) == 1:
            await self._lead()
        else:
            await verdict.done.wait()  # a cancelled follower leaves; its leader still finishes
        if verdict.problem is not None:
            raise InvalidChunk(chunk.address, verdict.problem)
        return Chunk(chunk.address, chunk.data, verified=True)

    async def _lead(self) -> None:
        with trio.CancelScope(shield=True):
            await trio.lowlevel.checkpoint()  # the deliveries woken with this one join the batch
            batch, self._waiting = self._waiting, []
            for start in range(0, len(batch), MAX_BATCH):
                part = batch[start : start + MAX_BATCH]
                try:
                    problems = await self._verify([chunk for chunk, _ in part])
                except BaseException:
                    for _, verdict in batch[start:]:
                        verdict.problem = "not verified: the verifier failed"
                        verdict.done.set()
                    raise
                self.batches += 1
                self.chunks += len(part)
                for (_, verdict), problem in zip(part, problems, strict=True):
                    verdict.problem = problem
                    verdict.done.set()
