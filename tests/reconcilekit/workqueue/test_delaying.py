"""reconcilekit.workqueue.DelayingQueue: add_after with a fake clock."""

from __future__ import annotations

from reconcilekit.workqueue import DelayingQueue, FakeClock


def make() -> tuple[DelayingQueue[str], FakeClock]:
    clock = FakeClock()
    return DelayingQueue(clock=clock), clock


async def test_an_item_is_added_when_its_delay_has_passed() -> None:
    """add_after(x, 1) queues x at exactly 1 s, not before."""
    queue, clock = make()
    queue.add_after("a", 1.0)
    assert len(queue) == 0
    clock.advance(0.999)
    assert len(queue) == 0
    clock.advance(0.001)
    assert len(queue) == 1
    assert await queue.get() == "a"


async def test_a_non_positive_delay_adds_at_once() -> None:
    """add_after(x, 0) and negative delays are add(x)."""
    queue, _ = make()
    queue.add_after("a", 0)
    queue.add_after("b", -1)
    assert len(queue) == 2


async def test_a_later_add_after_never_postpones() -> None:
    """A waiting item keeps the earlier ready time."""
    queue, clock = make()
    queue.add_after("a", 1.0)
    queue.add_after("a", 10.0)
    clock.advance(1.0)
    assert len(queue) == 1


async def test_an_earlier_add_after_moves_readiness_forward() -> None:
    """A shorter delay replaces a longer one, and the item is added once."""
    queue, clock = make()
    queue.add_after("a", 10.0)
    queue.add_after("a", 1.0)
    clock.advance(1.0)
    assert len(queue) == 1
    assert queue.waiting() == 0
    clock.advance(20.0)
    assert len(queue) == 1


async def test_items_become_ready_in_ready_time_order() -> None:
    """The heap hands items to the queue by ready time, not insertion order."""
    queue, clock = make()
    queue.add_after("late", 2.0)
    queue.add_after("early", 1.0)
    clock.advance(5.0)
    assert [await queue.get(), await queue.get()] == ["early", "late"]


async def test_a_waiting_item_may_also_be_queued_and_dedups_when_ready() -> None:
    """An item both queued and waiting is handed out once per dirty period."""
    queue, clock = make()
    queue.add("a")
    queue.add_after("a", 1.0)
    clock.advance(1.0)
    assert len(queue) == 1


async def test_a_ready_item_that_is_processing_runs_once_more_after_done() -> None:
    """The delayed add follows the processing rule: queued after done."""
    queue, clock = make()
    queue.add("a")
    item = await queue.get()
    queue.add_after("a", 1.0)
    clock.advance(1.0)
    assert len(queue) == 0
    queue.done(item)  # type: ignore[arg-type]
    assert len(queue) == 1


async def test_shut_down_drops_waiting_items_and_their_timer() -> None:
    """No timer is left behind, and add_after after shutdown is ignored."""
    queue, clock = make()
    queue.add_after("a", 1.0)
    queue.shut_down()
    assert not clock.has_waiters()
    queue.add_after("b", 1.0)
    clock.advance(2.0)
    assert len(queue) == 0
    assert await queue.get() is None
