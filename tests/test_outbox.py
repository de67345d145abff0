"""PriorityOutbox: strict priority, FIFO per class, bounded with backpressure."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from streamer.outbox import Priority, PriorityOutbox


async def test_most_urgent_class_first_fifo_within_a_class() -> None:
    box: PriorityOutbox[str] = PriorityOutbox(capacity=8)
    box.put_nowait("h1", Priority.HISTORICAL)
    box.put_nowait("l1", Priority.LIVE)
    box.put_nowait("h2", Priority.HISTORICAL)
    box.put_nowait("r1", Priority.RETRIEVAL)
    box.put_nowait("l2", Priority.LIVE)
    got = [await box.get() for _ in range(5)]
    assert got == ["r1", "l1", "l2", "h1", "h2"]


async def test_a_full_class_makes_its_producer_wait_but_not_other_classes() -> None:
    box: PriorityOutbox[int] = PriorityOutbox(capacity=2)
    box.put_nowait(1, Priority.HISTORICAL)
    box.put_nowait(2, Priority.HISTORICAL)
    with pytest.raises(trio.WouldBlock):
        box.put_nowait(3, Priority.HISTORICAL)
    box.put_nowait(10, Priority.RETRIEVAL)  # another class still has room
    done = []

    async def producer() -> None:
        await box.put(3, Priority.HISTORICAL)
        done.append(3)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(producer)
            await trio.testing.wait_all_tasks_blocked()
            assert done == []  # still waiting: its class is full
            assert box.statistics().producers_waiting == 1
            assert await box.get() == 10
            await trio.testing.wait_all_tasks_blocked()
            assert done == []  # retrieval leaving frees nothing for historical
            assert await box.get() == 1
    assert done == [3]
    assert [box.get_nowait(), box.get_nowait()] == [2, 3]


async def test_consumer_waits_for_items_and_close_ends_the_channel() -> None:
    box: PriorityOutbox[int] = PriorityOutbox(capacity=2)
    got = []

    async def consumer() -> None:
        while True:
            try:
                got.append(await box.get())
            except trio.EndOfChannel:
                return

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(consumer)
            await trio.testing.wait_all_tasks_blocked()
            await box.put(7, Priority.LIVE)
            await trio.testing.wait_all_tasks_blocked()
            box.put_nowait(8, Priority.LIVE)
            box.close()
    assert got == [7, 8]
    with pytest.raises(trio.ClosedResourceError):
        box.put_nowait(9, Priority.LIVE)


async def test_close_wakes_blocked_producers_with_an_error() -> None:
    box: PriorityOutbox[int] = PriorityOutbox(capacity=1)
    box.put_nowait(1, Priority.LIVE)
    errors = []

    async def producer() -> None:
        try:
            await box.put(2, Priority.LIVE)
        except trio.ClosedResourceError as exc:
            errors.append(exc)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(producer)
            await trio.testing.wait_all_tasks_blocked()
            box.close()
    assert len(errors) == 1
    assert box.clear() == 1
    assert len(box) == 0
