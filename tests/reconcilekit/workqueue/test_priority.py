"""reconcilekit.workqueue.PriorityQueue: controller-runtime's priority queue rules (semantics §5.3)."""

from __future__ import annotations

import asyncio
import itertools

from reconcilekit.metrics import REGISTRY
from reconcilekit.workqueue import FakeClock, ItemExponentialFailureRateLimiter, PriorityQueue

_names = itertools.count()


def make(name: str = "") -> tuple[PriorityQueue[str], FakeClock]:
    clock = FakeClock()
    return PriorityQueue(ItemExponentialFailureRateLimiter(), name=name, clock=clock), clock


async def take(queue: PriorityQueue[str], n: int) -> list[str]:
    items = []
    for _ in range(n):
        item = await queue.get()
        assert item is not None
        items.append(item)
    return items


async def test_each_key_exists_once() -> None:
    """Re-adding a queued key does not duplicate it."""
    queue, _ = make()
    queue.add("a")
    queue.add("a")
    assert len(queue) == 1


async def test_highest_priority_first_fifo_within_a_priority() -> None:
    """Priorities order hand-out; ties go by the time the item became ready."""
    queue, _ = make()
    queue.add_with_opts("low-1", priority=-100)
    queue.add_with_opts("mid-1")
    queue.add_with_opts("high", priority=10)
    queue.add_with_opts("mid-2")
    queue.add_with_opts("low-2", priority=-100)
    assert await take(queue, 5) == ["high", "mid-1", "mid-2", "low-1", "low-2"]


async def test_raising_a_priority_moves_the_item_to_the_back_of_its_new_fifo() -> None:
    """The effective priority is the max; raising it re-queues behind that priority's items."""
    queue, _ = make()
    queue.add_with_opts("a", priority=-100)
    queue.add_with_opts("x", priority=0)
    queue.add_with_opts("a", priority=0)
    queue.add_with_opts("x", priority=-100)  # lowering is ignored
    assert await queue.get_with_priority() == ("x", 0)
    assert await queue.get_with_priority() == ("a", 0)


async def test_a_ready_item_stays_ready_and_a_waiting_one_only_moves_earlier() -> None:
    """The effective ready time is the minimum."""
    queue, clock = make()
    queue.add("ready")
    queue.add_after("ready", 10.0)
    assert len(queue) == 1
    assert queue.waiting() == 0
    queue.add_after("w", 10.0)
    queue.add_after("w", 1.0)
    queue.add_after("w", 5.0)
    clock.advance(1.0)
    assert len(queue) == 2
    assert queue.waiting() == 0


async def test_a_waiting_item_becomes_ready_when_added_now() -> None:
    """add() of a waiting key makes it ready at once."""
    queue, clock = make()
    queue.add_after("a", 10.0)
    queue.add("a")
    assert len(queue) == 1
    clock.advance(10.0)
    assert len(queue) == 1


async def test_a_key_being_processed_is_skipped_and_handed_out_after_done() -> None:
    """Never two workers on one key: a re-add waits for done()."""
    queue, _ = make()
    queue.add("a")
    assert await queue.get() == "a"
    queue.add("a")
    queue.add("b")
    assert await queue.get() == "b"  # "a" is processing: skipped
    blocked = asyncio.create_task(queue.get(), name="blocked-getter")
    await asyncio.sleep(0)
    assert not blocked.done()
    queue.done("a")
    assert await asyncio.wait_for(blocked, timeout=5) == "a"


async def test_shut_down_hands_out_nothing_more() -> None:
    """Unlike client-go's queue, get() returns None at once after shutdown."""
    queue, _ = make()
    queue.add("a")
    waiter_queue, _ = make()
    waiting = asyncio.create_task(waiter_queue.get(), name="waiting-getter")
    await asyncio.sleep(0)
    queue.shut_down()
    waiter_queue.shut_down()
    assert await queue.get() is None
    assert await waiting is None
    queue.add("b")
    assert queue.shutting_down()
    await queue.shut_down_with_drain()


async def test_rate_limited_delay_and_the_shorter_of_after_and_the_limiter() -> None:
    """rate_limited uses the limiter's delay; with after > 0 the shorter one wins."""
    queue, clock = make()
    queue.add_rate_limited("a")  # 5 ms
    clock.advance(0.004)
    assert len(queue) == 0
    clock.advance(0.001)
    assert len(queue) == 1
    queue.add_with_opts("b", after=10.0, rate_limited=True)  # limiter: 5 ms < 10 s
    clock.advance(0.005)
    assert len(queue) == 2
    assert queue.num_requeues("a") == 1
    queue.forget("a")
    assert queue.num_requeues("a") == 0


async def test_timer_survives_handed_out_waiting_entries() -> None:
    """An item made ready early leaves a stale timer entry that is skipped."""
    queue, clock = make()
    queue.add_after("a", 1.0)
    queue.add_after("b", 2.0)
    queue.add("a")
    assert await queue.get() == "a"
    queue.done("a")
    clock.advance(2.0)
    assert await queue.get() == "b"
    assert not clock.has_waiters()


async def test_metrics_count_retries_only_for_positive_delays() -> None:
    """workqueue_retries_total: adds with a positive delay; depth counts ready items."""
    name = f"pq-metrics-{next(_names)}"
    queue, clock = make(name)
    labels = {"name": name, "controller": name}
    queue.add("a")
    queue.add_after("b", 0)
    queue.add_after("c", 1.0)
    assert REGISTRY.get_sample_value("workqueue_retries_total", labels) == 1
    assert REGISTRY.get_sample_value("workqueue_depth", labels) == 2
    clock.advance(1.0)
    assert REGISTRY.get_sample_value("workqueue_depth", labels) == 3
    assert REGISTRY.get_sample_value("workqueue_adds_total", labels) == 3
    await queue.get()
    assert REGISTRY.get_sample_value("workqueue_depth", labels) == 2
