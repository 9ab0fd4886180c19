"""The controller's worker loop and its outcome table.

After each reconcile (the request is always ``done`` afterwards):

==========================  ====================================  ==================
outcome                     queue                                 ``result`` label
==========================  ====================================  ==================
`TerminalError` raised      nothing (and no forget)               ``error``
any other exception         ``add_rate_limited`` (result ignored) ``error``
``requeue_after > 0``       ``forget``, ``add_after``             ``requeue_after``
``requeue``                 ``add_rate_limited``                  ``requeue``
otherwise                   ``forget``                            ``success``
==========================  ====================================  ==================

With the priority queue, requeues keep the priority the request was handed out
with, unless the `Result` sets ``priority``.

Every error is logged as ``reconciler error`` at error level with ``error`` (its text),
and with its traceback unless the same error (type, text and raising line) had its
traceback logged less than ``Options.error_traceback_interval`` seconds ago (then the line
says ``traceback_omitted="repeated"``; see `reconcilekit.controller._tracebacks`), except
a 409 Conflict (`reconcilekit.errors.is_conflict`, also through ``__cause__``): that one
is logged as ``reconciler conflict, requeued`` at info level, one line with the error's
text and no traceback. Its queue and metrics outcome is that of any other error.
A group of errors counts as a conflict when every member does (recursively): an
`ExceptionGroup` (its ``exceptions``), or any exception carrying a non-empty list or tuple
of exceptions in an ``errors`` attribute (a combined error, Go's ``multierr.Combine``).
One member that is not a conflict makes the whole group a ``reconciler error``.

Differs: controller-runtime logs every reconcile error, conflicts included, at error
level. A conflict on an optimistic-lock write is the expected answer to a stale cache
read (ARC's runner status patch returns it as the reconcile error on purpose; the
rate-limited retry reads fresh state), so a normal run would fill its log with
error-level tracebacks that need no action. Only the log line differs: the request is
still requeued rate-limited and counted in ``controller_runtime_reconcile_errors_total``.

Python only: the traceback of a ``reconciler error`` (Go errors carry none). A request that
keeps failing the same way logs it once per ``error_traceback_interval`` (60 s by default),
not on every retry: formatting it was most of the CPU of a failed reconcile.

Ports: sigs.k8s.io/controller-runtime/pkg/internal/controller/controller.go
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import uuid
from collections.abc import Iterator, Mapping

import structlog

from reconcilekit._internal.fence import fence_holds
from reconcilekit.controller import _metrics as metrics
from reconcilekit.controller._tracebacks import TracebackLimiter
from reconcilekit.controller._workers import LEASE as WORKER_LEASE
from reconcilekit.controller._workers import WorkerSlots
from reconcilekit.controller.options import Options
from reconcilekit.errors import TerminalError, is_conflict
from reconcilekit.reconcile import Reconciler, Request, Result
from reconcilekit.source.source import Source, SyncingSource
from reconcilekit.workqueue.clock import Clock, RealClock
from reconcilekit.workqueue.interfaces import RateLimiter, RateLimitingInterface
from reconcilekit.workqueue.priority import PriorityQueue, add_with_priority
from reconcilekit.workqueue.rate_limiter import default_controller_rate_limiter, default_item_based_rate_limiter
from reconcilekit.workqueue.rate_limiting import RateLimitingQueue

_log = structlog.get_logger("reconcilekit.controller")

RECONCILE_ID: contextvars.ContextVar[str] = contextvars.ContextVar("reconcilekit_reconcile_id")
"""The ID of the reconcile running in this context (set by the worker around each call)."""

_NOT_PANICS = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)
"""Non-`Exception` exceptions that are signals, not panics: always passed on unchanged."""


def is_terminal(err: BaseException) -> bool:
    """Whether ``err`` is, or wraps, a `TerminalError`.

    Wrapping means the ``__cause__`` chain (``raise ... from terminal``) and the
    members of exception groups, as Go's ``errors.Is`` follows ``Unwrap``.

    Ports: the errors.Is(err, reconcile.TerminalError(nil)) test of reconcileHandler
    """
    seen: set[int] = set()
    stack: list[BaseException] = [err]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, TerminalError):
            return True
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        if current.__cause__ is not None:
            stack.append(current.__cause__)
    return False


class Controller:
    """Runs sources into a rate-limited queue and workers that reconcile its requests.

    Build it with `reconcilekit.controller.new_controller` or the builder.

    Ports: internal/controller.Controller
    """

    def __init__(self, name: str, reconciler: Reconciler, options: Options) -> None:
        self._name = name
        self._reconciler = reconciler
        self._options = options
        self._clock: Clock = options.clock or RealClock()
        self._log_values: Mapping[str, str] = dict(options.log_values or {})
        self._sources: list[Source] = []
        self._started = False
        self._queue: RateLimitingInterface[Request] | None = None
        self._tasks: asyncio.TaskGroup | None = None
        self._metrics = metrics.ControllerMetrics(name, options.max_concurrent_reconciles)
        self._tracebacks = TracebackLimiter(options.error_traceback_interval, self._clock)

    @property
    def name(self) -> str:
        """The controller's name: its metrics' ``controller`` label and its log key."""
        return self._name

    @property
    def queue(self) -> RateLimitingInterface[Request] | None:
        """Python only: the queue, once started (for tests and debugging)."""
        return self._queue

    def need_leader_election(self) -> bool:
        """Whether the manager starts this controller only once elected. Ports: Controller.NeedLeaderElection"""
        return self._options.need_leader_election

    def watch(self, source: Source, /) -> None:
        """Add ``source``; after start it starts at once (without waiting for its sync).

        Ports: Controller.Watch
        """
        if self._tasks is not None and self._queue is not None:
            self._tasks.create_task(source.start(self._queue), name=f"{self._name}-source-{len(self._sources)}")
        self._sources.append(source)

    async def reconcile(self, request: Request, /) -> Result:
        """Call the reconciler once, with the reconciliation timeout and panic recovery.

        Raises:
            TimeoutError: the reconciliation timeout expired (counted in
                ``controller_runtime_reconcile_timeouts_total``).
            RuntimeError: ``panic: ... [recovered]``, for a non-`Exception`
                `BaseException` when ``recover_panic`` is set.
            TypeError: the reconciler returned something other than a `Result`.
            Exception: whatever the reconciler raised.

        Differs: Go's panics have no Python twin; a "panic" here is a
        `BaseException` that is not an `Exception` and not a cancellation
        or exit signal.

        Ports: Controller.Reconcile
        """
        try:
            timeout = self._options.reconciliation_timeout
            if timeout is None:
                result = await self._reconciler.reconcile(request)
            else:
                deadline = asyncio.timeout(timeout)
                try:
                    async with deadline:
                        result = await self._reconciler.reconcile(request)
                except TimeoutError:
                    if deadline.expired():
                        self._metrics.timeouts.inc()
                    raise
            if not isinstance(result, Result):
                raise TypeError(f"reconciler returned {type(result).__name__}, not a Result")
            return result
        except _NOT_PANICS:
            raise
        except Exception:
            raise
        except BaseException as panic:
            self._metrics.panics.inc()
            if self._options.recover_panic:
                raise RuntimeError(f"panic: {panic!r} [recovered]") from panic
            _log.error("observed a panic", exc_info=panic)
            raise

    async def start(self) -> None:
        """Start the sources, wait for their sync, then run the workers until cancelled.

        On cancellation the workers are cancelled (an in-flight reconcile sees
        `asyncio.CancelledError` at its next await), the queue shuts down and
        the sources stop; start returns only when all of them have.

        Raises:
            RuntimeError: started twice.
            TimeoutError: a source did not sync within ``cache_sync_timeout``
                seconds (chained to the source's last error, if any).
            Exception: a source or, with ``recover_panic`` off, a reconcile failed.

        Ports: Controller.Start
        """
        if self._started:
            raise RuntimeError(f"controller {self._name} was started more than once")
        self._started = True
        queue = self._new_queue()
        self._queue = queue
        self._metrics.active_workers.set(0)
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                for n, source in enumerate(self._sources):
                    tasks.create_task(source.start(queue), name=f"{self._name}-source-{n}")
                await self._wait_for_sync()
                workers = self._options.max_concurrent_reconciles
                _log.info("starting workers", controller=self._name, worker_count=workers)
                slots = self._new_worker_slots(tasks, queue)
                for n in range(workers):
                    tasks.create_task(self._work(queue, slots), name=f"{self._name}-worker-{n}")
        except BaseExceptionGroup as group:
            errors = [err for err in _leaves(group) if not isinstance(err, asyncio.CancelledError)]
            if len(errors) == 1:
                error = errors[0]
                error.__suppress_context__ = True  # the group is ours; keep the error's own cause
                raise error from error.__cause__
            raise
        finally:
            self._tasks = None
            queue.shut_down()
            _log.info("all workers finished", controller=self._name)

    def _new_queue(self) -> RateLimitingInterface[Request]:
        """Ports: the queue construction at the top of Controller.Start"""
        options = self._options
        limiter: RateLimiter[Request]
        if options.rate_limiter is not None:
            limiter = options.rate_limiter
        elif options.use_priority_queue:
            limiter = default_item_based_rate_limiter()
        else:
            limiter = default_controller_rate_limiter(clock=options.clock)
        if options.new_queue is not None:
            return options.new_queue(self._name, limiter)
        if options.use_priority_queue:
            return PriorityQueue(limiter, name=self._name, clock=options.clock)
        return RateLimitingQueue(limiter, name=self._name, clock=options.clock)

    async def _wait_for_sync(self) -> None:
        """Wait for every syncing source, all within one ``cache_sync_timeout``.

        Ports: Controller.startEventSourcesLocked (the WaitForSync part)
        """
        timeout = self._options.cache_sync_timeout
        deadline = asyncio.get_running_loop().time() + timeout
        for source in list(self._sources):
            if not isinstance(source, SyncingSource):
                continue
            try:
                async with asyncio.timeout_at(deadline):
                    await source.wait_for_sync()
            except TimeoutError as err:
                cause = getattr(source, "last_error", None)
                message = (
                    f"failed to wait for {self._name} caches to sync {source}: "
                    f"timed out waiting for cache to be synced after {timeout} s"
                )
                raise TimeoutError(message) from (cause or err)

    def _new_worker_slots(self, tasks: asyncio.TaskGroup, queue: RateLimitingInterface[Request]) -> WorkerSlots:
        """Python only: the workers' slots; a reconcile that yields its worker starts a substitute loop.

        The substitute runs in a copy of the context the workers started in (not the
        yielding reconcile's, whose log bindings and reconcile ID are its own).
        """
        base = contextvars.copy_context()
        substitutes = itertools.count()
        active = self._metrics.active_workers

        def start_substitute() -> bool:
            name = f"{self._name}-worker-substitute-{next(substitutes)}"
            work = self._work(queue, slots)
            try:
                tasks.create_task(work, name=name, context=base.copy())
            except RuntimeError:  # the controller is stopping: the reconcile keeps its worker
                work.close()
                return False
            return True

        slots = WorkerSlots(
            workers=self._options.max_concurrent_reconciles,
            max_yielded=self._options.max_yielded_reconciles,
            start_substitute=start_substitute,
            on_hold=lambda delta: active.inc() if delta > 0 else active.dec(),
        )
        return slots

    async def _work(self, queue: RateLimitingInterface[Request], slots: WorkerSlots) -> None:
        """Take requests until the queue shuts down, or until the leader fence fails.

        A worker whose reconcile yielded it (`reconcilekit.controller.yield_worker`) was
        replaced by a substitute loop when it did; it retires once that reconcile ends.

        Ports: Controller.processNextWorkItem, in a loop (Python only: the leader fence check, yielded workers)
        """
        get_with_priority = getattr(queue, "get_with_priority", None)
        while True:
            await slots.wait_for_room()
            if get_with_priority is not None:
                got: tuple[Request, int] | None = await get_with_priority()
                if got is None:
                    return
                request, priority = got
            else:
                item = await queue.get()
                if item is None:
                    return
                request, priority = item, 0
            if not fence_holds():  # leadership is ending: hand out nothing more
                queue.done(request)
                _log.info("leader fence failed: worker stops taking requests", controller=self._name)
                return
            try:
                lease = await slots.take()
            except BaseException:
                queue.done(request)
                raise
            token = WORKER_LEASE.set(lease)
            try:
                await self._reconcile_handler(queue, request, priority)
            finally:
                WORKER_LEASE.reset(token)
                slots.give_back(lease)
                queue.done(request)
            if lease.handed_over:
                return

    async def _reconcile_handler(self, queue: RateLimitingInterface[Request], request: Request, priority: int) -> None:
        """Reconcile one request and act on the outcome as the module's table says.

        Differs: a conflict is logged at info level without traceback, and a repeated
        error's traceback at most once per ``error_traceback_interval`` (module docstring).

        Ports: Controller.reconcileHandler
        """
        reconcile_id = str(uuid.uuid4())
        token = RECONCILE_ID.set(reconcile_id)
        started = self._clock.monotonic()
        try:
            with structlog.contextvars.bound_contextvars(
                controller=self._name,
                **self._log_values,
                namespace=request.namespace,
                name=request.name,
                reconcile_id=reconcile_id,
            ):
                try:
                    result = await self.reconcile(request)
                except Exception as err:
                    if is_terminal(err):
                        self._metrics.terminal_errors.inc()
                    else:
                        add_with_priority(queue, request, rate_limited=True, priority=priority)
                    self._metrics.errors.inc()
                    self._metrics.total["error"].inc()
                    if _only_conflicts(err):
                        _log.info("reconciler conflict, requeued", error=str(err))
                    elif self._tracebacks.should_log(err):
                        _log.error("reconciler error", error=str(err), exc_info=err)
                    else:
                        _log.error("reconciler error", error=str(err), traceback_omitted="repeated")
                    return
                if result.priority is not None:
                    priority = result.priority
                if result.requeue_after > 0:
                    queue.forget(request)
                    add_with_priority(queue, request, after=result.requeue_after, priority=priority)
                    self._metrics.total["requeue_after"].inc()
                elif result.requeue:
                    add_with_priority(queue, request, rate_limited=True, priority=priority)
                    self._metrics.total["requeue"].inc()
                else:
                    queue.forget(request)
                    self._metrics.total["success"].inc()
        finally:
            self._metrics.time.observe(self._clock.monotonic() - started)
            RECONCILE_ID.reset(token)


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    """Python only: the non-group exceptions inside ``group``, depth first."""
    for err in group.exceptions:
        if isinstance(err, BaseExceptionGroup):
            yield from _leaves(err)
        else:
            yield err


def _only_conflicts(err: BaseException) -> bool:
    """Python only: ``err`` is a 409 Conflict, or a group whose every member is (module docstring).

    A group is a `BaseExceptionGroup` (``exceptions``) or an exception with a non-empty
    ``errors`` list/tuple of exceptions; an empty or malformed ``errors`` is not a group.
    """
    if is_conflict(err):
        return True
    members: object = err.exceptions if isinstance(err, BaseExceptionGroup) else getattr(err, "errors", None)
    if not isinstance(members, (list, tuple)) or not members:
        return False
    return all(isinstance(m, BaseException) and _only_conflicts(m) for m in members)
