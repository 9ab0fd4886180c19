"""reconcilekit.workqueue.Queue: client-go's dedup, re-add, FIFO and shutdown rules."""

from __future__ import annotations

import asyncio

import pytest

from reconcilekit.workqueue import Queue


async def test_duplicate_adds_collapse_into_one_item() -> None:
    """Adding a dirty item again does nothing."""
    queue: Queue[str] = Queue()
    queue.add("a")
    queue.add("a")
    assert len(queue) == 1
    assert await queue.get() == "a"
    assert len(queue) == 0


async def test_order_is_fifo_by_first_dirty_time() -> None:
    """A re-add of a waiting item keeps its place."""
    queue: Queue[str] = Queue()
    for item in ["a", "b", "a", "c", "b"]:
        queue.add(item)
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]


async def test_adds_while_processing_cause_exactly_one_more_round_after_done() -> None:
    """Any number of adds during processing wait for done() and then queue the item once."""
    queue: Queue[str] = Queue()
    queue.add("a")
    assert await queue.get() == "a"
    for _ in range(3):
        queue.add("a")
    assert len(queue) == 0  # not handed out while processing
    queue.done("a")
    assert len(queue) == 1
    assert await queue.get() == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_done_without_re_add_queues_nothing() -> None:
    """done() of an item that was not added meanwhile leaves the queue empty."""
    queue: Queue[str] = Queue()
    queue.add("a")
    item = await queue.get()
    assert item == "a"
    queue.done(item)
    assert len(queue) == 0
    queue.add("a")
    assert len(queue) == 1


async def test_an_item_is_never_held_by_two_workers() -> None:
    """A second worker waits while the only queued key is being processed elsewhere."""
    queue: Queue[str] = Queue()
    queue.add("a")
    first = await queue.get()
    queue.add("a")
    second = asyncio.create_task(queue.get(), name="second-worker")
    await asyncio.sleep(0)
    assert not second.done()
    queue.done(first)  # type: ignore[arg-type]
    assert await second == "a"
    queue.done("a")


async def test_len_excludes_items_being_processed() -> None:
    """len() counts the FIFO only."""
    queue: Queue[str] = Queue()
    queue.add("a")
    queue.add("b")
    await queue.get()
    assert len(queue) == 1


async def test_get_hands_out_queued_items_after_shut_down_then_none() -> None:
    """After shut_down the FIFO drains, adds are ignored, and get returns None once empty."""
    queue: Queue[str] = Queue()
    queue.add("a")
    queue.add("b")
    queue.shut_down()
    queue.add("c")
    assert queue.shutting_down()
    assert await queue.get() == "a"
    assert await queue.get() == "b"
    assert await queue.get() is None


async def test_shut_down_wakes_every_waiting_getter() -> None:
    """Blocked getters return None at shutdown."""
    queue: Queue[str] = Queue()
    getters = [asyncio.create_task(queue.get(), name=f"getter-{n}") for n in range(3)]
    await asyncio.sleep(0)
    queue.shut_down()
    assert await asyncio.gather(*getters) == [None, None, None]


async def test_done_after_shut_down_does_not_requeue() -> None:
    """An add during processing that came after shut down is ignored, so done() queues nothing."""
    queue: Queue[str] = Queue()
    queue.add("a")
    await queue.get()
    queue.shut_down()
    queue.add("a")
    queue.done("a")
    assert await queue.get() is None


async def test_shut_down_with_drain_waits_for_items_being_processed() -> None:
    """shut_down_with_drain returns only once every handed-out item is done."""
    queue: Queue[str] = Queue()
    queue.add("a")
    queue.add("b")
    a = await queue.get()
    b = await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain(), name="drain")
    await asyncio.sleep(0)
    assert queue.shutting_down()
    queue.done(a)  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert not drain.done()
    queue.done(b)  # type: ignore[arg-type]
    await asyncio.wait_for(drain, timeout=5)


async def test_shut_down_with_drain_returns_at_once_when_idle() -> None:
    """Nothing handed out: nothing to wait for."""
    queue: Queue[str] = Queue()
    await asyncio.wait_for(queue.shut_down_with_drain(), timeout=5)


async def test_a_plain_shut_down_ends_a_pending_drain() -> None:
    """shut_down() during shut_down_with_drain stops the wait, as client-go's setDrain(false) does."""
    queue: Queue[str] = Queue()
    queue.add("a")
    await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain(), name="drain")
    await asyncio.sleep(0)
    queue.shut_down()
    await asyncio.wait_for(drain, timeout=5)


async def test_a_cancelled_getter_passes_its_wake_up_on() -> None:
    """A getter cancelled after being woken does not swallow the item."""
    queue: Queue[str] = Queue()
    first = asyncio.create_task(queue.get(), name="first")
    second = asyncio.create_task(queue.get(), name="second")
    await asyncio.sleep(0)
    queue.add("a")  # wakes first
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, timeout=5) == "a"
