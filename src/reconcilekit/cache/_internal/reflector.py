"""The reflector: list, then watch from the list's resourceVersion, and keep it that way.

* LIST in pages of 500, then WATCH from the list's ``metadata.resourceVersion`` with
  bookmarks and a server-side timeout drawn from [300, 600) s.
* A watch the server closes (timeout, EOF, a dropped connection) is re-opened at once from
  the last resourceVersion seen (bookmarks included): no relist.
* A watch that goes silent for ``read_idle_timeout`` seconds (no byte at all: with
  bookmarks about every 60 s a healthy watch is never that quiet) is a half-open
  connection: it is dropped and re-opened the same way (issue 16).
* A watch that fails with 410 Gone/Expired ends the cycle and the reflector relists at the
  last resourceVersion at once (only a second 410 in a row waits a backoff delay first);
  objects missing from the new list reach handlers as tombstones (see
  `SharedIndexInformer.replace`). Only a *failing list* with 410 or "too large resource
  version" falls back to a quorum list (RV "").
* Connection refused or 429 when opening a watch: wait one backoff delay (a 429's
  ``Retry-After`` when it gives one), re-watch at the same resourceVersion. Any other error:
  backoff, then relist.
* A watch closed within 1 s with no event counts as an error (backoff, relist).
* Delays never exceed the backoff cap, jitter included; after a connection-level failure
  (nobody answered) they stay under the lower ``unreachable_cap``. The first event of a
  watch resets the backoff: a list and a watch worked.

resourceVersions are opaque strings: never compared, never computed.

Ports: k8s.io/client-go/tools/cache/reflector.go (Reflector.ListAndWatch, list, watch,
handleWatch) and tools/pager/pager.go; the read-idle deadline, the immediate relist after a
410, the reset on success and the capped jitter are ours (issue 16: a half-open watch left
the cache stale for 584 s; a restarted API server was seen 47.8 s after it was ready).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import random
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import structlog

from reconcilekit.cache._internal.backoff import BackoffManager, BackoffSettings
from reconcilekit.cache._internal.shared_informer import SharedIndexInformer
from reconcilekit.client.interfaces import GroupVersionKind, Object, WithWatch
from reconcilekit.errors import (
    APIStatusError,
    TooManyRequestsError,
    from_status,
    is_forbidden,
    is_gone,
    is_resource_expired,
    is_too_many_requests,
    is_unauthorized,
)

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_READ_IDLE_TIMEOUT",
    "MIN_WATCH_TIMEOUT",
    "Reflector",
    "WatchStalledError",
]

log = structlog.get_logger(__name__)

DEFAULT_PAGE_SIZE = 500
"""Items per LIST page. Ports: pager.defaultPageSize"""

MIN_WATCH_TIMEOUT = 300.0
"""Seconds: watches ask the server to close after a time in [this, 2 × this). Ports: minWatchTimeout"""

DEFAULT_READ_IDLE_TIMEOUT = 120.0
"""Seconds a watch may stay silent before it is dropped: twice kube-apiserver's ~60 s bookmark interval."""

_SHORT_WATCH = 1.0
"""Seconds: a watch closed this fast with no event is treated as an error."""


class WatchStalledError(Exception):
    """The watch closed in under a second with no event (the server may be unhealthy).

    Ports: reflector.go "very short watch" error
    """


def _too_large_rv(err: BaseException) -> bool:
    """The server said the requested resourceVersion is newer than it knows. Ports: isTooLargeResourceVersionError"""
    if not isinstance(err, APIStatusError):
        return False
    if any(c.get("reason") == "ResourceVersionTooLarge" for c in err.causes):
        return True
    return "too large resource version" in err.message.lower()


def _causes(err: BaseException) -> list[BaseException]:
    """``err`` and its ``__cause__`` chain (the client wraps aiohttp's errors in TransportError)."""
    chain: list[BaseException] = []
    cur: BaseException | None = err
    while cur is not None and cur not in chain:
        chain.append(cur)
        cur = cur.__cause__
    return chain


def _connection_refused(err: BaseException) -> bool:
    """Nobody listens (the API server is down or restarting). Ports: utilnet.IsConnectionRefused"""
    return any(isinstance(e, ConnectionRefusedError | aiohttp.ClientConnectorError) for e in _causes(err))


def _unreachable(err: BaseException) -> bool:
    """No answer at all: refused, reset, or timed out before a response (the server is not there)."""
    if isinstance(err, APIStatusError):
        return False
    return _connection_refused(err) or _stream_broken(err)


def _went_silent(err: BaseException) -> bool:
    """The read-idle deadline passed: no byte arrived for that long (aiohttp's ``sock_read``)."""
    return any(isinstance(e, aiohttp.SocketTimeoutError) for e in _causes(err))


def _stream_broken(err: BaseException) -> bool:
    """The server went away mid-stream: client-go's watch sees that as a normal end."""
    if _connection_refused(err):
        return False
    return any(
        isinstance(
            e,
            aiohttp.ClientPayloadError
            | aiohttp.ServerDisconnectedError
            | ConnectionResetError
            | asyncio.IncompleteReadError
            | aiohttp.ClientOSError
            | TimeoutError,
        )
        for e in _causes(err)
    )


def _accepts(func: Any, name: str) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


class Reflector:
    """Keeps one informer's store equal to the server's objects of one kind and scope.

    Args:
        client: lists and watches (the `WithWatch` role).
        gvk: the kind.
        store: the informer that receives the changes.
        namespace: one namespace, or ``None`` for all.
        labels, fields: selectors applied server-side to list and watch.
        page_size: LIST page size (500); 0 lists in one request.
        min_watch_timeout: seconds, see `MIN_WATCH_TIMEOUT`.
        backoff: delays between cycles and watch retries.
        allow_watch_bookmarks: ask for BOOKMARK events (default true).
        read_idle_timeout: seconds a watch may go without receiving a byte before it is
            dropped and re-opened (default `DEFAULT_READ_IDLE_TIMEOUT`, 120 s); ``None`` waits
            as long as the server's ``timeoutSeconds`` allows. Passed to the client's
            ``watch`` when it takes a ``read_idle_timeout`` argument.
        initial_list_from_watch_cache: make the first LIST at resourceVersion "0" (client-go's
            choice: any freshness, from the API server's watch cache, which ignores ``limit``
            and answers in one piece). Off by default: the first LIST is a paginated quorum
            read, so at most one page (500 objects) is decoded at a time, which keeps the
            start-up memory peak near the steady state.
        freeze_listed_objects: during the first LIST only, `gc.freeze` after each decoded
            page and once the store holds the complete list (see the cache `Options` of the
            same name). Off by default.

    Ports: cache.Reflector
    """

    def __init__(
        self,
        *,
        client: WithWatch,
        gvk: GroupVersionKind,
        store: SharedIndexInformer,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        backoff: BackoffSettings | None = None,
        allow_watch_bookmarks: bool = True,
        read_idle_timeout: float | None = DEFAULT_READ_IDLE_TIMEOUT,
        initial_list_from_watch_cache: bool = False,
        freeze_listed_objects: bool = False,
    ) -> None:
        if read_idle_timeout is not None and read_idle_timeout <= 0:
            raise ValueError("read_idle_timeout must be positive seconds or None")
        self._client = client
        self._first_list_rv = "0" if initial_list_from_watch_cache else ""
        self._gvk = gvk
        self._store = store
        self._namespace = namespace
        self._labels = labels
        self._fields = fields
        self._page_size = page_size
        self._min_watch_timeout = max(min_watch_timeout, 0.0)
        self._backoff = BackoffManager(backoff or BackoffSettings())
        self._bookmarks = allow_watch_bookmarks
        self._read_idle_timeout = read_idle_timeout
        self._watch_takes_idle = _accepts(client.watch, "read_idle_timeout")
        self._expired_in_a_row = 0
        self._last_sync_rv = ""
        self._rv_unavailable = False
        self._paginated_result = False
        self._list_takes_rv = _accepts(client.list, "resource_version")
        self._freeze = freeze_listed_objects
        self._log = log.bind(gvk=str(gvk), namespace=namespace or "")
        self.lists = 0
        """How many complete LISTs this reflector made (for tests and metrics)."""
        self.watches = 0
        """How many watches this reflector opened."""
        self.expired = 0
        """How many watches ended with 410 Gone/Expired."""
        self.forbidden = 0
        """How many list-and-watch cycles ended with 401/403 (each one logged at error level)."""
        self.silent = 0
        """How many watches were dropped because they went silent past ``read_idle_timeout``."""

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion a re-watch would start from. Ports: LastSyncResourceVersion"""
        return self._last_sync_rv

    @property
    def read_idle_timeout(self) -> float | None:
        """Seconds a watch may stay silent before it is dropped (``None``: no deadline)."""
        return self._read_idle_timeout

    async def run(self) -> None:
        """List and watch until cancelled, with backoff between cycles. Ports: Reflector.Run"""
        self._store.mark_started()
        while True:
            try:
                await self._list_and_watch()
            except Exception as err:  # every failure is retried: that is the reflector's job
                self._log_failure(err)
                wait = self._backoff.delay(unreachable=_unreachable(err))
            else:
                wait = self._delay_after_expiry()
            if wait > 0:
                await asyncio.sleep(wait)

    def _delay_after_expiry(self) -> float:
        """The watch got 410: relist at once, unless the previous watch ended that way too.

        After an API server restart the first re-watch gets 410 (its new watch cache starts
        at etcd's current revision); waiting out the delay built up while it was down only
        keeps the cache stale. A second 410 in a row, with no event between, backs off.
        """
        if self._expired_in_a_row <= 1:
            return 0.0
        return self._backoff.delay()

    def _log_failure(self, err: Exception) -> None:
        if is_gone(err) or is_resource_expired(err):
            self._log.debug("watch expired, relisting", error=str(err))
        elif is_forbidden(err) or is_unauthorized(err):
            # client-go's DefaultWatchErrorHandler reports these through HandleError (error level):
            # the identity lacks list/watch here, and the informer never syncs until RBAC changes.
            self.forbidden += 1
            self._log.error(
                "list and watch forbidden: the informer cannot sync until RBAC grants list and watch",
                error=str(err),
                attempts=self.forbidden,
            )
        else:
            self._log.warning("list and watch failed", error=repr(err))

    async def _list_and_watch(self) -> None:
        """Ports: Reflector.ListAndWatch"""
        await self._list()
        await self._watch_loop()

    # -- LIST --------------------------------------------------------------------------

    def _relist_rv(self) -> str:
        """Ports: Reflector.relistResourceVersion"""
        if self._rv_unavailable:
            return ""
        if self._last_sync_rv == "":
            return self._first_list_rv  # client-go: "0"; see initial_list_from_watch_cache
        return self._last_sync_rv

    async def _list(self) -> None:
        """Ports: Reflector.list"""
        rv = self._relist_rv()
        try:
            items, list_rv = await self._paged_list(rv)
        except Exception as err:
            if not (is_gone(err) or is_resource_expired(err) or _too_large_rv(err)):
                raise
            self._rv_unavailable = True
            items, list_rv = await self._paged_list(self._relist_rv())
        self._rv_unavailable = False
        self._store.replace(items, list_rv)
        self._freeze_gc()
        self._last_sync_rv = list_rv
        self.lists += 1

    async def _paged_list(self, rv: str) -> tuple[list[Object], str]:
        """Every page of one LIST; the list's RV is the first page's. Ports: pager.List"""
        page_size: int | None = self._page_size or None
        if self._list_takes_rv and rv not in ("", "0") and not self._paginated_result:
            page_size = None  # a concrete RV can be served from the watch cache in one go
        transform = self._store.transform
        items: list[Object] = []
        token: str | None = None
        list_rv = ""
        while True:
            try:
                page = await self._list_page(rv if token is None else "", page_size, token)
            except Exception as err:
                if token is None or not (is_gone(err) or is_resource_expired(err)):
                    raise
                # a continuation expired: one unpaginated list at the original RV
                items, token = [], None
                page = await self._list_page(rv, None, None)
            if token is None:
                list_rv = page.resource_version
                if rv == "0" and page.continue_token:
                    self._paginated_result = True
            for obj in page.items:
                if transform is not None:
                    obj = transform(obj)
                items.append(obj)
            page.items = []
            self._freeze_gc()
            token = page.continue_token
            if not token:
                return items, list_rv

    def _freeze_gc(self) -> None:
        """Python only: `gc.freeze` during the first LIST when ``freeze_listed_objects`` is on (cache `Options`).

        Only the first: a relist (after a 410, say) happens while reconciles run, and freezing
        then would keep for good every cycle that their live tasks, frames and exceptions
        later become.
        """
        if self._freeze and self.lists == 0:
            gc.freeze()

    async def _list_page(self, rv: str, limit: int | None, token: str | None) -> Any:
        kwargs: dict[str, Any] = {
            "namespace": self._namespace,
            "labels": self._labels,
            "fields": self._fields,
            "limit": limit,
            "continue_token": token,
        }
        if self._list_takes_rv:
            kwargs["resource_version"] = rv
        return await self._client.list(self._gvk, **kwargs)

    # -- WATCH -------------------------------------------------------------------------

    async def _watch_loop(self) -> None:
        """Re-watch from the last RV until an error ends the cycle. Ports: Reflector.watch"""
        while True:
            timeout = int(self._min_watch_timeout * (1.0 + random.random()))
            started = time.monotonic()
            events = 0
            self.watches += 1
            kwargs: dict[str, Any] = {}
            if self._watch_takes_idle:
                kwargs["read_idle_timeout"] = self._read_idle_timeout
            try:
                stream = self._client.watch(
                    self._gvk,
                    namespace=self._namespace,
                    labels=self._labels,
                    fields=self._fields,
                    resource_version=self._last_sync_rv,
                    timeout_seconds=max(timeout, 1),
                    allow_watch_bookmarks=self._bookmarks,
                    **kwargs,
                )
                async for event in stream:
                    events += 1
                    self._handle(event.type, event.object)
                    if events == 1:
                        # A list and a watch worked: the next failure starts from the first delay.
                        self._backoff.reset()
                        self._expired_in_a_row = 0
            except Exception as err:
                if is_gone(err) or is_resource_expired(err):
                    self.expired += 1
                    self._expired_in_a_row += 1
                    self._log.debug("watch expired", error=str(err))
                    return  # relist at the last RV (see run)
                if events == 0 and (_connection_refused(err) or is_too_many_requests(err)):
                    self._log.debug("watch could not start, retrying", error=repr(err))
                    await asyncio.sleep(self._watch_retry_delay(err))
                    continue
                if not _stream_broken(err):
                    raise
                if _went_silent(err):
                    self.silent += 1
                    self._log.warning(
                        "watch went silent, re-watching",
                        read_idle_timeout=self._read_idle_timeout,
                        resource_version=self._last_sync_rv,
                        events=events,
                    )
                else:
                    self._log.debug("watch stream broke", error=repr(err), events=events)
            if events == 0 and time.monotonic() - started < _SHORT_WATCH:
                raise WatchStalledError("very short watch: closed in under a second with no events")

    def _watch_retry_delay(self, err: BaseException) -> float:
        """Seconds before re-opening a watch that could not start (refused, or 429)."""
        if isinstance(err, TooManyRequestsError) and err.retry_after is not None:
            # The server said when (a 429 while its watch cache initializes says 1 s): believe it,
            # within the cap.
            return min(max(err.retry_after, 0.0), self._backoff.cap)
        return self._backoff.delay(unreachable=not isinstance(err, APIStatusError))

    def _handle(self, event_type: str, obj: Object) -> None:
        """Apply one watch event. Ports: reflector.go handleAnyWatch"""
        if event_type == "ERROR":
            code = obj.get("code")
            raise from_status(int(code) if isinstance(code, int) else 500, obj)
        meta = obj.get("metadata") or {}
        rv = str(meta.get("resourceVersion") or "")
        if event_type == "BOOKMARK":
            self._store.bookmark(rv)
        else:
            transform = self._store.transform
            if transform is not None:
                obj = transform(obj)
            if event_type == "ADDED":
                self._store.add(obj)
            elif event_type == "MODIFIED":
                self._store.update(obj)
            elif event_type == "DELETED":
                self._store.delete(obj)
            else:
                self._log.warning("unknown watch event type", type=event_type)
                return
        if rv:
            self._last_sync_rv = rv
