"""reconcilekit.controller: the outcome table, concurrency, sync, metrics and log context."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from reconcilekit import source
from reconcilekit.controller import Controller, Options, new_controller, reconcile_id_from_context
from reconcilekit.errors import ConflictError, TerminalError
from reconcilekit.handler import EnqueueRequestForObject
from reconcilekit.metrics import REGISTRY
from reconcilekit.reconcile import Request, Result
from reconcilekit.workqueue import FakeClock, ItemExponentialFailureRateLimiter, PriorityQueue, RateLimitingQueue

from .runtime_fakes import CONFIGMAP, FakeInformers, ScriptedReconciler, next_call, obj, settle

_names = itertools.count()
A = Request("default", "a")
_use_priority_queue = True


@pytest.fixture(autouse=True, params=[True, False], ids=["priority-queue", "client-go-queue"])
def queue_flavour(request: pytest.FixtureRequest) -> None:
    """Every test runs with both queues: the outcome table is the same."""
    global _use_priority_queue
    _use_priority_queue = request.param


@pytest.fixture
def logs() -> Any:
    """Log lines as dicts, not rendered (rendering tracebacks is slow)."""
    with capture_logs() as captured:
        yield captured


def metric(name: str, controller: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, {"controller": controller, **labels}) or 0.0


class Env:
    """A controller over a fake informer, with a fake clock and a per-item 5 ms backoff."""

    def __init__(self, script: Callable[[Request, int], Result] | None = None, **options: Any) -> None:
        self.clock = FakeClock()
        self.informers = FakeInformers()
        self.informer = self.informers.informer_for(CONFIGMAP)
        self.reconciler = ScriptedReconciler(script)
        self.name = f"test_controller_{next(_names)}"
        self.controller: Controller = new_controller(
            self.name,
            self.reconciler,
            Options(
                clock=self.clock,
                rate_limiter=ItemExponentialFailureRateLimiter(),
                use_priority_queue=_use_priority_queue,
                **options,
            ),
        )
        self.controller.watch(source.kind(self.informers, CONFIGMAP, EnqueueRequestForObject(), clock=self.clock))

    @property
    def queue(self) -> Any:
        queue = self.controller.queue  # type: ignore[attr-defined]
        assert isinstance(queue, PriorityQueue if _use_priority_queue else RateLimitingQueue)
        return queue

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[asyncio.Task[None]]:
        task = asyncio.create_task(self.controller.start(), name=f"{self.name}-start")
        await settle()
        try:
            yield task
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


# Upstream: pkg/internal/controller/controller_test.go
#   It "should not requeue if the error is a terminal error"
async def test_terminal_error_is_not_requeued_and_not_forgotten(logs: list[dict[str, Any]]) -> None:
    """TerminalError: no requeue, no forget, counted as error and terminal error."""

    def script(_: Request, n: int) -> Result:
        if n == 1:
            raise RuntimeError("transient")
        raise TerminalError("bad spec")

    env = Env(script)
    async with env.running():
        env.informer.add(obj("a"))
        assert await next_call(env.reconciler) == A
        assert env.queue.num_requeues(A) == 1
        env.clock.advance(0.005)
        assert await next_call(env.reconciler) == A
        assert env.queue.num_requeues(A) == 1  # not forgotten
        assert len(env.queue) == 0
        assert env.queue.waiting() == 0
        env.clock.advance(1000)
        await settle()
        assert env.reconciler.count == 2
    assert metric("controller_runtime_terminal_reconcile_errors_total", env.name) == 1
    assert metric("controller_runtime_reconcile_errors_total", env.name) == 2
    assert metric("controller_runtime_reconcile_total", env.name, result="error") == 2
    errors = [line for line in logs if line["event"] == "reconciler error"]
    assert [str(line["exc_info"]) for line in errors] == ["transient", "bad spec"]
    assert all(line["log_level"] == "error" for line in errors)


async def test_an_error_that_wraps_a_terminal_error_is_terminal(logs: Any) -> None:
    """A TerminalError anywhere in the __cause__ chain counts as terminal."""

    def script(_: Request, _n: int) -> Result:
        try:
            raise TerminalError("bad spec")
        except TerminalError as err:
            raise RuntimeError("wrapped") from err

    env = Env(script)
    async with env.running():
        env.informer.add(obj("a"))
        await next_call(env.reconciler)
        assert env.queue.waiting() == 0
    assert metric("controller_runtime_terminal_reconcile_errors_total", env.name) == 1


# Upstream: pkg/internal/controller/controller_test.go
#   It "should requeue a Request with rate limiting if the Result has Requeue: true" and
#   "should requeue a Request if there is an error and continue processing items"
async def test_an_error_requeues_with_rate_limiting_and_ignores_the_result(logs: Any) -> None:
    """Any other exception: add_rate_limited, so the retry comes after 5 ms, then 10 ms."""
    env = Env(lambda _r, n: (_ for _ in ()).throw(RuntimeError("boom")) if n <= 2 else Result())
    async with env.running():
        env.informer.add(obj("a"))
        await next_call(env.reconciler)
        assert env.queue.waiting() == 1
        env.clock.advance(0.0049)
        await settle()
        assert env.reconciler.count == 1
        env.clock.advance(0.0001)
        await next_call(env.reconciler)
        assert env.queue.num_requeues(A) == 2
        env.clock.advance(0.01)
        await next_call(env.reconciler)
        assert env.queue.num_requeues(A) == 0  # success forgets
    assert metric("controller_runtime_reconcile_total", env.name, result="error") == 2
    assert metric("controller_runtime_reconcile_total", env.name, result="success") == 1


async def test_a_conflict_is_one_info_line_and_still_requeued_and_counted(logs: Any) -> None:
    """A 409, bare or chained as the cause: no error-level line, no traceback; queue and metrics as any error.

    Python only (a deliberate difference from controller-runtime, see the module docstring).
    """
    conflict = ConflictError(409, "Conflict", "the object has been modified")

    def script(_: Request, n: int) -> Result:
        if n == 1:
            raise conflict
        if n == 2:
            raise RuntimeError("failed to update ephemeral runner status") from conflict
        return Result()

    env = Env(script)
    async with env.running():
        env.informer.add(obj("a"))
        await next_call(env.reconciler)
        assert env.queue.num_requeues(A) == 1  # rate-limited, not forgotten
        assert env.queue.waiting() == 1
        env.clock.advance(0.005)
        await next_call(env.reconciler)
        assert env.queue.num_requeues(A) == 2
        env.clock.advance(0.01)
        await next_call(env.reconciler)
        assert env.queue.num_requeues(A) == 0
    assert metric("controller_runtime_reconcile_errors_total", env.name) == 2
    assert metric("controller_runtime_reconcile_total", env.name, result="error") == 2
    assert [line for line in logs if line["log_level"] == "error" or "exc_info" in line] == []
    quiet = [line for line in logs if line["event"] == "reconciler conflict, requeued"]
    assert [(line["log_level"], line["error"]) for line in quiet] == [
        ("info", "409 Conflict: the object has been modified"),
        ("info", "failed to update ephemeral runner status"),
    ]


class _Combined(Exception):
    """A combined error as a library builds one (multierr.Combine): the members in ``errors``."""

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


async def test_a_group_of_only_conflicts_is_quiet_and_one_other_member_makes_it_loud(logs: Any) -> None:
    """Several 409s from one batch (an ExceptionGroup, nested, or an ``errors`` list): one info line;
    the same group with one non-conflict member: a ``reconciler error`` with its traceback.

    Python only (the module docstring's group rule).
    """
    conflict = ConflictError(409, "Conflict", "the object has been modified")
    other = RuntimeError("pod create refused")
    raised: list[Exception] = [
        ExceptionGroup("batch", [conflict, conflict]),
        _Combined([conflict, ExceptionGroup("inner", [conflict])]),
        _Combined([conflict, other]),
        ExceptionGroup("batch", [conflict, other]),
        _Combined([]),
    ]

    def script(_: Request, n: int) -> Result:
        if n <= len(raised):
            raise raised[n - 1]
        return Result()

    env = Env(script)
    async with env.running():
        env.informer.add(obj("a"))
        for _ in raised:
            await next_call(env.reconciler)
            env.clock.advance(1000.0)
        await next_call(env.reconciler)
    assert metric("controller_runtime_reconcile_errors_total", env.name) == len(raised)
    quiet = [line["log_level"] for line in logs if line["event"] == "reconciler conflict, requeued"]
    loud = [line for line in logs if line["event"] == "reconciler error"]
    assert quiet == ["info", "info"]
    assert [(line["log_level"], type(line["exc_info"]).__name__) for line in loud] == [
        ("error", "_Combined"),
        ("error", "ExceptionGroup"),
        ("error", "_Combined"),
    ]


# Upstream: pkg/internal/controller/controller_test.go
#   It "should perform a requeueAfter with RequeueAfter set"
async def test_requeue_after_forgets_then_adds_after_the_delay(logs: Any) -> None:
    """requeue_after > 0: forget (backoff reset), then add_after(requeue_after)."""

    def script(_: Request, n: int) -> Result:
        if n == 1:
            raise RuntimeError("first fails")
        return Result(requeue_after=30.0, requeue=True) if n == 2 else Result()

    env = Env(script)
    async with env.running():
        env.informer.add(obj("a"))
        await next_call(env.reconciler)
        env.clock.advance(0.005)
        await next_call(env.reconciler)
        assert env.queue.num_requeues(A) == 0  # forgotten
        assert env.queue.waiting() == 1
        env.clock.advance(29.5)
        await settle()
        assert env.reconciler.count == 2
        env.clock.advance(0.5)
        await next_call(env.reconciler)
    assert metric("controller_runtime_reconcile_total", env.name, result="requeue_after") == 1


async def test_requeue_adds_rate_limited_without_forgetting() -> None:
    """requeue=True: add_rate_limited, so the backoff grows: 5 ms, then 10 ms."""
    env = Env(lambda _r, n: Result(requeue=n <= 2))
    async with env.running():
        env.informer.add(obj("a"))
        await next_call(env.reconciler)
        assert env.queue.num_requeues(A) == 1
        env.clock.advance(0.005)
        await next_call(env.reconciler)
        assert env.queue.num_requeues(A) == 2
        env.clock.advance(0.0099)
        await settle()
        assert env.reconciler.count == 2
        env.clock.advance(0.0001)
        await next_call(env.reconciler)
        assert env.queue.num_requeues(A) == 0
    assert metric("controller_runtime_reconcile_total", env.name, result="requeue") == 2


async def test_success_forgets_and_queues_nothing(logs: Any) -> None:
    """Result(): forget; nothing waits; counted as success."""

    def script(_: Request, n: int) -> Result:
        if n == 1:
            raise RuntimeError("first fails")
        return Result()

    env = Env(script)
    async with env.running():
        env.informer.add(obj("a"))
        await next_call(env.reconciler)
        env.clock.advance(0.005)
        await next_call(env.reconciler)
        assert env.queue.num_requeues(A) == 0
        assert len(env.queue) == 0
        assert env.queue.waiting() == 0
    assert metric("controller_runtime_reconcile_total", env.name, result="success") == 1
    assert metric("controller_runtime_reconcile_time_seconds_count", env.name) == 2


async def test_all_results_are_pre_initialised_at_start() -> None:
    """reconcile_total has all four result series at 0 before any reconcile."""
    env = Env(max_concurrent_reconciles=3)
    async with env.running():
        for result in ["success", "error", "requeue", "requeue_after"]:
            assert (
                REGISTRY.get_sample_value(
                    "controller_runtime_reconcile_total", {"controller": env.name, "result": result}
                )
                == 0.0
            )
        assert metric("controller_runtime_max_concurrent_reconciles", env.name) == 3
        assert metric("controller_runtime_active_workers", env.name) == 0


async def test_max_concurrent_reconciles_never_processes_one_key_twice_at_once() -> None:
    """Three workers run three keys at once, and a key in processing is never handed to an idle one.

    Only "a" is held while it is re-added, so two workers sit idle: a queue that handed out a
    key in processing would give "a" to one of them when the next key wakes it (an overlap and
    a third call). Keys are released one by one, so the guard is tested with free workers.
    """
    gates = {name: asyncio.Event() for name in "abcd"}
    active: set[Request] = set()
    overlaps: list[Request] = []
    peak = 0
    calls: list[Request] = []

    class Gated:
        async def reconcile(self, request: Request, /) -> Result:
            nonlocal peak
            if request in active:
                overlaps.append(request)
            active.add(request)
            calls.append(request)
            peak = max(peak, len(active))
            try:
                await gates[request.name].wait()
            finally:
                active.discard(request)
            return Result()

    env = Env(max_concurrent_reconciles=3)
    env.controller._reconciler = Gated()  # type: ignore[attr-defined]
    async with env.running():
        env.informer.add(obj("a"))
        await settle()
        for _ in range(5):
            env.informer.update(obj("a"), obj("a"))  # adds while "a" is processing, two workers idle
        await settle()
        assert calls == [A]
        for name in "bcd":
            env.informer.add(obj(name))  # each add wakes an idle worker: it must not take "a"
            await settle()
        assert overlaps == []
        assert calls == [A, Request("default", "b"), Request("default", "c")]  # d waits for a worker
        assert peak == 3
        assert metric("controller_runtime_active_workers", env.name) == 3
        for name in "bcd":
            gates[name].set()
            await settle()
        assert overlaps == []
        assert calls.count(A) == 1  # b, c, d freed workers while "a" still ran
        gates["a"].set()
        await settle(50)
    assert overlaps == []
    assert calls.count(A) == 2  # five adds during processing: exactly one more run
    assert sorted(set(calls)) == [Request("default", n) for n in "abcd"]


async def test_each_reconcile_gets_a_fresh_reconcile_id_in_the_log_context() -> None:
    """controller, namespace, name and reconcile_id are bound around each reconcile."""
    seen: list[dict[str, Any]] = []

    def script(_: Request, _n: int) -> Result:
        seen.append({**structlog.contextvars.get_contextvars(), "from_context": reconcile_id_from_context()})
        return Result()

    env = Env(script)
    async with env.running():
        env.informer.add(obj("a"))
        await next_call(env.reconciler)
        env.informer.add(obj("b", "other"))
        await next_call(env.reconciler)
    first, second = seen
    assert first["controller"] == env.name
    assert (first["namespace"], first["name"]) == ("default", "a")
    assert (second["namespace"], second["name"]) == ("other", "b")
    assert first["reconcile_id"] == first["from_context"]
    assert uuid.UUID(first["reconcile_id"]).version == 4
    assert first["reconcile_id"] != second["reconcile_id"]
    assert reconcile_id_from_context() is None
    assert "reconcile_id" not in structlog.contextvars.get_contextvars()


class Panic(BaseException):
    """A BaseException that is not an Exception: the Python face of a Go panic."""


async def test_a_panic_is_counted_and_requeued_when_recovered(logs: Any) -> None:
    """recover_panic (default): panics_total++, then the error path (rate-limited requeue)."""

    def script(_: Request, n: int) -> Result:
        if n == 1:
            raise Panic("nil map")
        return Result()

    env = Env(script)
    async with env.running():
        env.informer.add(obj("a"))
        await next_call(env.reconciler)
        assert env.queue.waiting() == 1
        env.clock.advance(0.005)
        await next_call(env.reconciler)
    assert metric("controller_runtime_reconcile_panics_total", env.name) == 1
    assert metric("controller_runtime_reconcile_errors_total", env.name) == 1


async def test_an_unrecovered_panic_stops_the_controller(logs: Any) -> None:
    """recover_panic=False: the panic leaves start()."""

    def script(_: Request, _n: int) -> Result:
        raise Panic("nil map")

    env = Env(script, recover_panic=False)
    task = asyncio.create_task(env.controller.start(), name="panicking-controller")
    await settle()
    env.informer.add(obj("a"))
    with pytest.raises(Panic):
        await asyncio.wait_for(task, timeout=5)
    assert metric("controller_runtime_reconcile_panics_total", env.name) == 1


async def test_a_reconcile_past_its_timeout_is_cancelled_counted_and_requeued(logs: Any) -> None:
    """reconciliation_timeout: the reconcile is cancelled, timeouts_total++, rate-limited requeue."""
    env = Env(reconciliation_timeout=0.01)

    class Hanging:
        async def reconcile(self, request: Request, /) -> Result:
            await asyncio.Event().wait()
            return Result()

    env.controller._reconciler = Hanging()  # type: ignore[attr-defined]
    async with env.running():
        env.informer.add(obj("a"))
        for _ in range(500):
            if env.queue.waiting():
                break
            await asyncio.sleep(0.005)
        assert env.queue.waiting() == 1
    assert metric("controller_runtime_reconcile_timeouts_total", env.name) == 1
    assert metric("controller_runtime_reconcile_errors_total", env.name) == 1


async def test_start_fails_when_a_source_does_not_sync_in_time(logs: Any) -> None:
    """A source that never syncs fails start() with TimeoutError after cache_sync_timeout."""
    env = Env(cache_sync_timeout=0.01)
    env.informer.synced = False
    with pytest.raises(TimeoutError, match="timed out waiting for cache to be synced"):
        await asyncio.wait_for(env.controller.start(), timeout=5)
    assert env.queue.shutting_down()


async def test_workers_start_only_after_the_initial_list_is_enqueued() -> None:
    """Initial adds are handled before the first reconcile; sync waits for the registration."""
    env = Env()
    env.informer.objects = [obj("a"), obj("b")]
    async with env.running():
        assert {await next_call(env.reconciler), await next_call(env.reconciler)} == {
            Request("default", "a"),
            Request("default", "b"),
        }


async def test_kind_source_retries_get_informer_every_10s() -> None:
    """NoKindMatchError (CRD not installed yet): another try each 10 s of the clock."""
    env = Env()
    env.informers.fail = 2
    env.informer.objects = [obj("a")]
    async with env.running():
        assert env.informers.calls == 1
        env.clock.advance(9.9)
        await settle()
        assert env.informers.calls == 1
        env.clock.advance(0.1)
        await settle()
        assert env.informers.calls == 2
        env.clock.advance(10)
        assert await next_call(env.reconciler) == A
        assert env.informers.calls == 3


async def test_stop_cancels_in_flight_reconciles_and_unregisters_handlers() -> None:
    """Cancelling start() cancels the workers, shuts the queue down and removes the source's handler."""
    cancelled = asyncio.Event()

    class Hanging:
        async def reconcile(self, request: Request, /) -> Result:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return Result()

    env = Env()
    env.controller._reconciler = Hanging()  # type: ignore[attr-defined]
    async with env.running():
        env.informer.add(obj("a"))
        await settle()
    assert cancelled.is_set()
    assert env.queue.shutting_down()
    assert env.informer.handlers == {}


async def test_a_controller_starts_only_once() -> None:
    """A second start() is an error."""
    env = Env()
    async with env.running():
        with pytest.raises(RuntimeError, match="more than once"):
            await env.controller.start()


def test_controller_names_are_unique_unless_validation_is_skipped() -> None:
    """A second controller with one name is rejected."""
    name = f"test_unique_{next(_names)}"
    new_controller(name, ScriptedReconciler())
    with pytest.raises(ValueError, match="already exists"):
        new_controller(name, ScriptedReconciler())
    new_controller(name, ScriptedReconciler(), Options(skip_name_validation=True))
    with pytest.raises(ValueError, match="must specify name"):
        new_controller("", ScriptedReconciler())


def test_options_reject_nonsense() -> None:
    """Bad option values fail where they are written."""
    with pytest.raises(ValueError):
        Options(max_concurrent_reconciles=0)
    with pytest.raises(ValueError):
        Options(cache_sync_timeout=0)
    with pytest.raises(ValueError):
        Options(reconciliation_timeout=-1)


async def test_need_leader_election_follows_the_option() -> None:
    """Controllers are leader-elected unless told otherwise."""
    assert new_controller(f"t_{next(_names)}", ScriptedReconciler()).need_leader_election()
    assert not new_controller(
        f"t_{next(_names)}", ScriptedReconciler(), Options(need_leader_election=False)
    ).need_leader_election()


async def test_requeues_keep_the_handed_out_priority_unless_the_result_sets_one() -> None:
    """Priority queue: an initial-list request (-100) is requeued at -100; Result.priority overrides."""
    if not _use_priority_queue:
        pytest.skip("priorities exist only on the priority queue")
    env = Env(lambda _r, n: Result(requeue_after=1.0) if n == 1 else Result(requeue_after=1.0, priority=5))
    env.informer.objects = [obj("a")]
    async with env.running():
        await next_call(env.reconciler)
        assert env.queue._entries[A].priority == -100
        env.clock.advance(1.0)
        await next_call(env.reconciler)
        assert env.queue._entries[A].priority == 5


async def test_the_default_rate_limiter_depends_on_the_queue() -> None:
    """Priority queue: per-item 5 ms..1000 s only; client-go queue: max of that and the bucket."""
    name = f"t_{next(_names)}"
    controller = new_controller(name, ScriptedReconciler(), Options(use_priority_queue=_use_priority_queue))
    task = asyncio.create_task(controller.start(), name="default-limiter")
    await settle()
    limiter = controller.queue.rate_limiter  # type: ignore[attr-defined]
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    expected = "ItemExponentialFailureRateLimiter" if _use_priority_queue else "MaxOfRateLimiter"
    assert type(limiter).__name__ == expected


async def test_a_reconciler_that_returns_no_result_is_an_error_not_a_crash(logs: Any) -> None:
    """Returning None (a forgotten return) is logged and requeued; the worker lives on."""
    env = Env(lambda _r, n: None if n == 1 else Result())  # type: ignore[arg-type, return-value]
    async with env.running():
        env.informer.add(obj("a"))
        await next_call(env.reconciler)
        env.clock.advance(0.005)
        await next_call(env.reconciler)
    assert "not a Result" in str(next(line["exc_info"] for line in logs if line["event"] == "reconciler error"))


async def test_watch_after_start_starts_the_source_at_once() -> None:
    """A source added to a running controller delivers without a restart."""
    env = Env()
    other = FakeInformers()
    late = other.informer_for(CONFIGMAP)
    async with env.running():
        env.controller.watch(source.kind(other, CONFIGMAP, EnqueueRequestForObject(), clock=env.clock))
        await settle()
        late.add(obj("late"))
        assert await next_call(env.reconciler) == Request("default", "late")


async def test_a_sync_timeout_names_the_source_and_chains_why_the_informer_was_missing(logs: Any) -> None:
    """The start error says which source and carries the last get_informer error as its cause."""
    env = Env(cache_sync_timeout=0.01)
    env.informers.fail = 1_000
    with pytest.raises(TimeoutError, match="kind source: v1, Kind=ConfigMap") as caught:
        await asyncio.wait_for(env.controller.start(), timeout=5)
    assert type(caught.value.__cause__).__name__ == "NoKindMatchError"


async def test_no_work_item_is_handed_out_once_the_leader_fence_fails(logs: Any) -> None:
    """Issue 16: a leader-only controller under a failed fence reconciles nothing more."""
    from reconcilekit._internal.fence import LEADER_FENCE

    holds = [True]
    env = Env()
    token = LEADER_FENCE.set(lambda: holds[0])  # the task below inherits it, as in the manager's group
    try:
        async with env.running():
            env.informer.add(obj("a"))
            assert await next_call(env.reconciler) == A
            holds[0] = False  # e.g. the process resumed after a pause past renew_deadline
            env.informer.add(obj("b"))
            await settle()
            assert env.reconciler.count == 1
            assert any(line["event"].startswith("leader fence failed") for line in logs)
    finally:
        LEADER_FENCE.reset(token)


def _missing_secret() -> None:
    raise RuntimeError('secrets "no-such-config-secret" not found')


async def test_a_repeated_error_logs_its_traceback_once_per_interval(logs: Any) -> None:
    """The same error (type, text, raising line) within ``error_traceback_interval`` seconds of
    its last traceback is logged without one; every line carries ``error``; another error, or
    the same text from another line, gets its own traceback; after the interval it comes back.

    Python only (the module docstring's traceback rule).
    """

    def script(_: Request, n: int) -> Result:
        if n in (1, 2, 4, 5):
            _missing_secret()
        if n == 3:
            raise KeyError("github_token")
        if n == 6:
            raise RuntimeError('secrets "no-such-config-secret" not found')
        return Result()

    env = Env(script)
    async with env.running():
        env.informer.add(obj("a"))
        for advance in (1.0, 1.0, 1.0, 60.0, 1.0, 1.0):
            await next_call(env.reconciler)
            env.clock.advance(advance)
        await next_call(env.reconciler)
    lines = [line for line in logs if line["event"] == "reconciler error"]
    assert [("exc_info" in line, line.get("traceback_omitted")) for line in lines] == [
        (True, None),
        (False, "repeated"),  # 1 s after the first
        (True, None),  # another error
        (False, "repeated"),  # 3 s after the first
        (True, None),  # 63 s after the first: the interval is over
        (True, None),  # same type and text, another raising line
    ]
    assert [line["error"] for line in lines] == [
        'secrets "no-such-config-secret" not found',
        'secrets "no-such-config-secret" not found',
        "'github_token'",
        'secrets "no-such-config-secret" not found',
        'secrets "no-such-config-secret" not found',
        'secrets "no-such-config-secret" not found',
    ]
    assert all(line["log_level"] == "error" for line in lines)
    assert metric("controller_runtime_reconcile_errors_total", env.name) == 6


async def test_error_traceback_interval_zero_logs_every_traceback(logs: Any) -> None:
    """``error_traceback_interval=0``: the old behaviour, a traceback on every line."""
    env = Env(lambda _r, n: _missing_secret() if n <= 3 else Result(), error_traceback_interval=0)  # type: ignore[func-returns-value]
    async with env.running():
        env.informer.add(obj("a"))
        for _ in range(3):
            await next_call(env.reconciler)
            env.clock.advance(1.0)
        await next_call(env.reconciler)
    lines = [line for line in logs if line["event"] == "reconciler error"]
    assert [str(line["exc_info"]) for line in lines] == ['secrets "no-such-config-secret" not found'] * 3


def test_error_traceback_interval_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="error_traceback_interval"):
        Options(error_traceback_interval=-1)
