"""The /healthz and /readyz endpoints: named checks, aggregated or one at a time.

Bodies are controller-runtime's, byte for byte:

* all checks pass → 200 ``ok`` (with ``?verbose``: one ``[+]<name> ok`` line per check,
  sorted, then ``healthz check passed``);
* any check fails → 500 with ``[-]<name> failed: reason withheld`` lines and
  ``healthz check failed``;
* ``?exclude=<name>`` (repeatable) skips a check (``[+]<name> excluded: ok``);
* ``<path>/<name>`` runs one check: 200 ``ok`` or 500 ``internal server error: <err>``;
  an unknown name is 404.

Ports: sigs.k8s.io/controller-runtime/pkg/healthz (healthz.go)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import structlog
from aiohttp import web
from aiohttp.typedefs import Handler

__all__ = ["CONTENT_TYPE", "Checker", "add_health_routes", "ping"]

log = structlog.get_logger(__name__)

Checker = Callable[[], Awaitable[None]]
"""A check: returns when healthy, raises when not (same shape as `manager.Checker`). Ports: healthz.Checker"""

CONTENT_TYPE = "text/plain"
CHARSET = "utf-8"


async def ping() -> None:
    """The check that always passes. Ports: healthz.Ping"""


def _text(body: str, status: int = 200) -> web.Response:
    return web.Response(text=body, status=status, content_type=CONTENT_TYPE, charset=CHARSET)


def _aggregate(checks: Mapping[str, Checker]) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        excluded = set(request.query.getall("exclude", []))
        verbose = "verbose" in request.query
        failed = False
        lines: list[str] = []
        for name in sorted(checks):
            if name in excluded:
                excluded.discard(name)
                lines.append(f"[+]{name} excluded: ok\n")
                continue
            try:
                await checks[name]()
            except Exception as err:
                log.debug("health check failed", check=name, error=repr(err))
                lines.append(f"[-]{name} failed: reason withheld\n")
                failed = True
            else:
                lines.append(f"[+]{name} ok\n")
        if excluded:
            lines.append(f"warn: some health checks cannot be excluded: no matches for {', '.join(sorted(excluded))}\n")
        if failed:
            return _text("".join(lines) + "healthz check failed\n", 500)
        if not verbose:
            return _text("ok")
        return _text("".join(lines) + "healthz check passed\n")

    return handle


def _single(checks: Mapping[str, Checker]) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        check = checks.get(request.match_info["name"])
        if check is None:
            return _text("404 page not found\n", 404)
        try:
            await check()
        except Exception as err:
            return _text(f"internal server error: {err}\n", 500)
        return _text("ok")

    return handle


def add_health_routes(app: web.Application, path: str, checks: Mapping[str, Checker]) -> None:
    """Mount ``path`` and ``path/<name>`` for ``checks`` (nothing if there are none).

    Ports: healthz.Handler as mounted by the manager's addHealthProbeServer
    """
    if not checks:
        return
    path = "/" + path.strip("/")
    app.router.add_get(path, _aggregate(checks))
    app.router.add_get(path + "/", _aggregate(checks))
    app.router.add_get(path + "/{name}", _single(checks))
