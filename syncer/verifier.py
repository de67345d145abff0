"""ChunkVerifier: BMT verification of delivered chunks on the machine's cores.

Hashing a full chunk takes about 0.1 ms of Python, most of a syncing node's CPU. With workers,
`submit` writes a batch of chunks to the least busy worker process (`syncer.verify_worker`) and
returns at once; the caller awaits the verdicts later, so this process decodes, stores and
answers offers while the workers hash. Each worker answers its batches in order, so one reader
task per worker pairs replies with requests by position.

The chunks of a request travel through memory shared with the worker (a memfd of RING_SIZE
bytes, Linux): `submit` writes the request body there once, in a region the worker's reply frees
(`RingSpace`), and sends the worker a 14-byte reference through the pipe. A request that finds no
room there (the worker is behind by more than the ring holds), or a system without memfd, goes
through the pipe whole, as it did before the ring: so a worker that stops reading still fills
its pipe and is found out by SEND_TIMEOUT.

With no workers (the default for an in-process node, and where there is only one core) the
verdicts are computed inline by `submit`. A worker that dies is logged and its pending batches,
and every batch after, are verified inline: a verdict is never lost, only slower.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import mmap
import os
import subprocess
import sys
from collections import deque
from functools import partial

import trio

from chunks import Chunk
from syncer.verify_worker import (
    MAX_BATCH,
    RingSpace,
    WorkerProtocolError,
    check,
    decode_reply,
    encode_reference,
    encode_request,
    frame_length,
    request_size,
    write_request,
)

__all__ = ["MAX_BATCH", "ChunkVerifier", "Verdicts"]

log = logging.getLogger(__name__)

MAX_WORKERS = 8
WORKER_NICENESS = 5
"""Workers run this much nicer than the node (set as they start, so their imports are nice too):
where they share a core with the node's own process, or with its peers on the same machine, the
protocol's latency comes before bulk hashing, which takes the time left over."""
PIPE_SIZE = 1 << 20
RING_SIZE = 2 << 20
"""Bytes of memory shared with each worker: three requests of 128 full chunks (528 KB each)."""
SEND_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0


class Verdicts:
    """The pending verdicts on one submitted batch: one problem per chunk, None if valid."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks
        self._problems: list[str | None] | None = None
        self._ready = trio.Event()

    def set(self, problems: list[str | None]) -> None:
        self._problems = problems
        self._ready.set()

    def verify_inline(self) -> None:
        self.set([check(chunk) for chunk in self.chunks])

    async def wait(self) -> list[str | None]:
        await self._ready.wait()
        assert self._problems is not None
        return self._problems


class _Worker:
    def __init__(self, number: int, process: trio.Process, memory: mmap.mmap | None) -> None:
        self.number = number
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self.stdin = process.stdin
        self.stdout = process.stdout
        self.memory = memory
        self.ring = RingSpace(len(memory)) if memory is not None else None
        self.pending: deque[tuple[Verdicts, bool]] = deque()  # and whether it holds a ring region
        self.alive = True
        self.send_lock = trio.Lock()
        if isinstance(self.stdin, trio.lowlevel.FdStream):
            _widen_pipe(self.stdin.fileno())

    def failed(self, why: str) -> None:
        """Stop using this worker; whatever it owed is verified here."""
        if not self.alive:
            return
        self.alive = False
        log.error("chunk verifier worker %d failed (%s); verifying in the node process", self.number, why)
        while self.pending:
            self.pending.popleft()[0].verify_inline()


class ChunkVerifier:
    """Verifies batches of chunks in worker processes (or inline); start it with `run`."""

    def __init__(self, workers: int = 0) -> None:
        if not 0 <= workers <= MAX_WORKERS:
            raise ValueError(f"verify workers must be 0..{MAX_WORKERS}, not {workers}")
        self.workers = workers
        self._workers: list[_Worker] = []

    @property
    def live_workers(self) -> int:
        return sum(1 for worker in self._workers if worker.alive)

    async def run(self, *, task_status: trio.TaskStatus[ChunkVerifier] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the workers and serve until cancelled (which ends them)."""
        try:
            async with trio.open_nursery() as nursery:
                for number in range(self.workers):
                    try:
                        worker = await self._start_worker(nursery, number)
                    except OSError as exc:
                        log.error(
                            "cannot start chunk verifier worker %d (%s); verifying with fewer",
                            number,
                            exc,
                        )
                        break
                    self._workers.append(worker)
                    nursery.start_soon(self._read_replies, worker)
                task_status.started(self)
        finally:
            for worker in self._workers:  # a late submit verifies inline, and writes nothing here
                worker.alive = False
                if worker.memory is not None:
                    worker.memory.close()

    async def _start_worker(self, nursery: trio.Nursery, number: int) -> _Worker:
        """Spawn worker ``number`` with its shared memory (if this system has memfd)."""
        command = [sys.executable, "-m", "syncer.verify_worker"]
        fd, memory = _shared_memory(RING_SIZE)
        try:
            if fd is not None:
                command += ["--shared", str(fd), str(RING_SIZE)]
            start = partial(
                trio.run_process,
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                check=False,
                deliver_cancel=_end_worker,
                pass_fds=() if fd is None else (fd,),
            )
            process = await nursery.start(start)
            with contextlib.suppress(AttributeError, OSError):  # not Unix
                niceness = min(19, os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICENESS)
                os.setpriority(os.PRIO_PROCESS, process.pid, niceness)
        except BaseException:
            if memory is not None:
                memory.close()
            raise
        finally:
            if fd is not None:
                os.close(fd)  # the mapping stays; the worker has its own descriptor
        return _Worker(number, process, memory)

    async def submit(self, chunks: list[Chunk]) -> Verdicts:
        """Start verifying ``chunks`` (1..MAX_BATCH); await ``wait()`` on the result for the verdicts."""
        verdicts = Verdicts(chunks)
        live = [worker for worker in self._workers if worker.alive]
        if not live:
            verdicts.verify_inline()
            return verdicts
        worker = min(live, key=lambda w: len(w.pending))
        size = request_size(chunks)
        offset = worker.ring.take(size) if worker.ring is not None else None
        if offset is not None:
            assert worker.memory is not None
            write_request(worker.memory, offset, chunks)
            request = encode_reference(offset, size)
        else:
            request = encode_request(chunks)
        worker.pending.append((verdicts, offset is not None))  # before any await: replies pair by order
        # A request half-written would corrupt the stream, so a cancelled caller does not cut it
        # off. The worker is always reading (or dead, and the write fails at once); one that
        # stops reading for SEND_TIMEOUT is given up and killed.
        with trio.CancelScope(shield=True, deadline=trio.current_time() + SEND_TIMEOUT) as scope:
            async with worker.send_lock:
                try:
                    await worker.stdin.send_all(request)
                except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                    worker.failed(f"its stdin broke: {exc!r}")
        if scope.cancelled_caught:
            worker.failed(f"it read no request for {SEND_TIMEOUT:g}s")
            worker.process.kill()
        return verdicts

    async def _read_replies(self, worker: _Worker) -> None:
        buffer = bytearray()
        try:
            while True:
                while len(buffer) < 4:
                    await _receive_into(worker, buffer)
                size = frame_length(bytes(buffer[:4]))
                while len(buffer) < 4 + size:
                    await _receive_into(worker, buffer)
                body = bytes(buffer[4 : 4 + size])
                del buffer[: 4 + size]
                if not worker.pending:
                    raise WorkerProtocolError("a reply to no request")
                verdicts, in_ring = worker.pending.popleft()
                if in_ring:
                    assert worker.ring is not None
                    worker.ring.release()
                verdicts.set(decode_reply(body, len(verdicts.chunks)))
        except (WorkerProtocolError, EOFError, trio.BrokenResourceError) as exc:
            code = worker.process.returncode if worker.process.returncode is not None else "running"
            worker.failed(f"{exc}; exit status {code}")


async def _end_worker(process: trio.Process) -> None:
    """Stop a worker when the verifier is cancelled: close its stdin, which ends its loop (it
    ignores SIGTERM), and kill it only if it has not exited within STOP_TIMEOUT."""
    if process.stdin is not None:
        await process.stdin.aclose()
    with trio.move_on_after(STOP_TIMEOUT):
        await process.wait()
    process.kill()


def _shared_memory(size: int) -> tuple[int | None, mmap.mmap | None]:
    """A descriptor of ``size`` bytes of anonymous memory and this process's mapping of it, or
    (None, None) where there is no memfd (not Linux): requests then go through the pipe."""
    try:
        fd = os.memfd_create("swarm-verify", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None, None
    try:
        os.ftruncate(fd, size)
        return fd, mmap.mmap(fd, size)
    except OSError:
        os.close(fd)
        return None, None


def _widen_pipe(fd: int) -> None:
    """Let a pipe hold a whole batch or two, so the worker never waits for the rest of a request
    while this process is busy elsewhere (Linux; the default 64 KiB holds 15 chunks)."""
    with contextlib.suppress(AttributeError, OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


async def _receive_into(worker: _Worker, buffer: bytearray) -> None:
    data = await worker.stdout.receive_some(1 << 16)
    if not data:
        raise EOFError("its stdout closed")
    buffer += data
