"""Work queue metrics: client-go's names, on reconcilekit's registry, timed by the injected clock."""

from __future__ import annotations

import itertools

from reconcilekit.metrics import REGISTRY
from reconcilekit.workqueue import FakeClock, RateLimitingQueue

_names = itertools.count()


def sample(metric: str, queue: str) -> float:
    value = REGISTRY.get_sample_value(metric, {"name": queue, "controller": queue})
    return 0.0 if value is None else value


async def test_depth_adds_retries_and_durations_are_recorded() -> None:
    """Every workqueue_* series moves as the queue is used."""
    clock = FakeClock()
    name = f"metrics-test-{next(_names)}"
    queue: RateLimitingQueue[str] = RateLimitingQueue(name=name, clock=clock)
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert sample("workqueue_adds_total", name) == 2
    assert sample("workqueue_depth", name) == 2
    clock.advance(2.0)
    item = await queue.get()
    assert sample("workqueue_depth", name) == 1
    assert sample("workqueue_queue_duration_seconds_sum", name) == 2.0
    clock.advance(3.0)
    assert sample("workqueue_unfinished_work_seconds", name) == 3.0
    assert sample("workqueue_longest_running_processor_seconds", name) == 3.0
    queue.done(item)  # type: ignore[arg-type]
    assert sample("workqueue_work_duration_seconds_sum", name) == 3.0
    assert sample("workqueue_unfinished_work_seconds", name) == 0.0
    queue.add_after("c", 0)
    queue.add_rate_limited("d")
    assert sample("workqueue_retries_total", name) == 2
    queue.shut_down()


async def test_an_unnamed_queue_records_nothing() -> None:
    """No name, no series, as client-go's unnamed queues."""
    queue: RateLimitingQueue[str] = RateLimitingQueue(clock=FakeClock())
    queue.add("a")
    assert sample("workqueue_adds_total", "") == 0
