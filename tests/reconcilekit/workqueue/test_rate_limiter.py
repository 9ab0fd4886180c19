"""reconcilekit.workqueue rate limiters and the rate-limiting queue: the backoff sequence."""

from __future__ import annotations

import pytest

from reconcilekit.workqueue import (
    BucketRateLimiter,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
)


def test_exponential_backoff_doubles_from_5ms_and_caps_at_1000s() -> None:
    """5 ms, 10 ms, 20 ms, ... 655.36 s for the 18th failure, then 1000 s from the 19th on."""
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [limiter.when("a") for _ in range(25)]
    assert delays[:5] == [0.005, 0.01, 0.02, 0.04, 0.08]
    assert delays[17] == pytest.approx(655.36)
    assert delays[18:] == [1000.0] * 7
    assert limiter.num_requeues("a") == 25


def test_exponential_backoff_is_per_item_and_reset_by_forget() -> None:
    """Each item has its own count; forget starts it over."""
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == 0.005
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.005


def test_exponential_backoff_survives_huge_failure_counts() -> None:
    """No float overflow after thousands of failures: the cap holds."""
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    for _ in range(2000):
        delay = limiter.when("a")
    assert delay == 1000.0


def test_bucket_allows_a_burst_then_spaces_tokens_at_qps() -> None:
    """100 tokens at once, then one every 0.1 s; tokens come back as time passes."""
    clock = FakeClock()
    bucket: BucketRateLimiter[str] = BucketRateLimiter(10.0, 100, clock=clock)
    assert [bucket.when(str(n)) for n in range(100)] == [0.0] * 100
    assert bucket.when("x") == pytest.approx(0.1)
    assert bucket.when("y") == pytest.approx(0.2)
    clock.advance(10.0)  # 100 tokens accrue, minus the 2 owed, capped at the burst
    assert bucket.when("z") == 0.0
    assert bucket.num_requeues("x") == 0


def test_max_of_asks_every_limiter_and_returns_the_longest() -> None:
    """The bucket spends a token even when the exponential delay wins."""
    clock = FakeClock()
    bucket: BucketRateLimiter[str] = BucketRateLimiter(10.0, 1, clock=clock)
    limiter = MaxOfRateLimiter(ItemExponentialFailureRateLimiter[str](1.0, 100.0), bucket)
    assert limiter.when("a") == 1.0  # bucket: 0, exponential: 1
    assert limiter.when("a") == 2.0  # bucket: 0.1, exponential: 2
    assert bucket.when("probe") == pytest.approx(0.2)  # two tokens were taken before
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_fast_slow_switches_after_the_fast_attempts() -> None:
    """max_fast_attempts fast delays, then slow ones."""
    limiter: ItemFastSlowRateLimiter[str] = ItemFastSlowRateLimiter(0.01, 5.0, 2)
    assert [limiter.when("a") for _ in range(4)] == [0.01, 0.01, 5.0, 5.0]
    limiter.forget("a")
    assert limiter.when("a") == 0.01


async def test_add_rate_limited_waits_the_growing_backoff() -> None:
    """The queue waits 5 ms, then 10 ms, then 20 ms; forget() starts over at 5 ms."""
    clock = FakeClock()
    queue: RateLimitingQueue[str] = RateLimitingQueue(ItemExponentialFailureRateLimiter(), clock=clock)
    for expected in [0.005, 0.01, 0.02]:
        queue.add_rate_limited("a")
        clock.advance(expected * 0.999)
        assert len(queue) == 0
        clock.advance(expected * 0.002)
        assert len(queue) == 1
        item = await queue.get()
        queue.done(item)  # type: ignore[arg-type]
    assert queue.num_requeues("a") == 3
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    queue.add_rate_limited("a")
    clock.advance(0.005)
    assert len(queue) == 1
    queue.shut_down()


async def test_forget_does_not_remove_a_queued_item() -> None:
    """forget() resets the backoff only."""
    queue: RateLimitingQueue[str] = RateLimitingQueue(clock=FakeClock())
    queue.add("a")
    queue.forget("a")
    assert len(queue) == 1


def test_bad_limiter_arguments_fail_where_written() -> None:
    """Nonsense delays and rates are rejected at construction."""
    with pytest.raises(ValueError):
        ItemExponentialFailureRateLimiter(0.0, 1.0)
    with pytest.raises(ValueError):
        BucketRateLimiter(0.0, 1)
    with pytest.raises(ValueError):
        MaxOfRateLimiter()
