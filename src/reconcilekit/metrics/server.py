"""The metrics HTTP server: ``/metrics`` from reconcilekit's registry, plus extra handlers.

Ports: sigs.k8s.io/controller-runtime/pkg/metrics/server (server.go)
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web
from aiohttp.typedefs import Handler
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from reconcilekit.metrics import REGISTRY

__all__ = ["DEFAULT_BIND_ADDRESS", "METRICS_PATH", "metrics_app"]

DEFAULT_BIND_ADDRESS = ":8080"
"""Where the metrics server listens by default; ``"0"`` turns it off."""

METRICS_PATH = "/metrics"
"""The metrics path (cannot be changed, as upstream)."""


def metrics_app(
    *, registry: CollectorRegistry = REGISTRY, extra_handlers: Mapping[str, Handler] | None = None
) -> web.Application:
    """An aiohttp application serving ``registry`` at ``/metrics`` and ``extra_handlers``.

    Ports: metricsserver.NewServer's mux
    """

    async def metrics(_request: web.Request) -> web.Response:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get(METRICS_PATH, metrics)
    for path, handler in (extra_handlers or {}).items():
        if path == METRICS_PATH:
            raise ValueError(f"overriding builtin {METRICS_PATH} endpoint is not allowed")
        app.router.add_route("*", path, handler)
    return app
