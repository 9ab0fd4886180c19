"""One measured run of bench_cache_vs_kopf: a trivial ConfigMap controller, reconcilekit or kopf.

Run as ``python -m benchmarks._cache_vs_kopf_worker <impl> <namespace> <count> <server> <ca> <cert> <key>``
with ``KUBECONFIG`` set (kopf logs in with it). Prints ``STARTED <monotonic>`` once imports are
done and ``SYNCED <monotonic>`` when every object was handled once, then idles until killed.
The parent reads memory and CPU from /proc.
"""

from __future__ import annotations

import sys
import time

import_start = time.monotonic()


def _say(word: str) -> None:
    print(f"{word} {time.monotonic():.6f}", flush=True)


async def run_reconcilekit(namespace: str, count: int, server: str, ca: str, cert: str, key: str) -> None:
    import logging

    import structlog

    from reconcilekit.builder import controller_managed_by
    from reconcilekit.cache import Options as CacheOptions
    from reconcilekit.client.interfaces import GroupVersionKind
    from reconcilekit.config import RestConfig
    from reconcilekit.manager import Options, new_manager
    from reconcilekit.reconcile import Request, Result

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    cm = GroupVersionKind("", "v1", "ConfigMap")
    config = RestConfig(host=server, ca_file=ca, cert_file=cert, key_file=key)
    mgr = new_manager(
        config, Options(metrics_bind_address="0", cache=CacheOptions(default_namespaces=[namespace]))
    )
    client = mgr.get_client()
    seen: set[str] = set()

    class RecordName:
        async def reconcile(self, request: Request, /) -> Result:
            await client.get(cm, request.key)  # a cached read, as the Go reference does
            seen.add(request.name)
            if len(seen) == count:
                _say("SYNCED")
            return Result()

    controller_managed_by(mgr).for_(cm).complete(RecordName())
    _say("STARTED")
    await mgr.start()


async def run_kopf(namespace: str, count: int) -> None:
    import logging

    import kopf

    logging.getLogger("kopf").setLevel(logging.WARNING)
    logging.getLogger("aiohttp").setLevel(logging.WARNING)
    seen: set[str] = set()

    # Both handlers are coroutines, kopf's idiomatic form: a plain ``def`` would be run on
    # kopf's thread-pool executor, adding a thread hop per event that is not kopf's best.
    @kopf.on.startup()
    async def configure(settings: kopf.OperatorSettings, **_: object) -> None:
        settings.posting.enabled = False
        settings.posting.level = logging.CRITICAL
        settings.watching.server_timeout = 300

    @kopf.on.event("", "v1", "configmaps")
    async def record_name(name: str, **_: object) -> None:
        seen.add(name)
        if len(seen) == count:
            _say("SYNCED")

    _say("STARTED")
    await kopf.operator(standalone=True, namespaces=[namespace], clusterwide=False)


def main() -> None:
    import asyncio

    impl, namespace, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if impl == "reconcilekit":
        server, ca, cert, key = sys.argv[4:8]
        asyncio.run(run_reconcilekit(namespace, count, server, ca, cert, key))
    elif impl == "kopf":
        asyncio.run(run_kopf(namespace, count))
    else:
        raise SystemExit(f"unknown implementation {impl!r}")


if __name__ == "__main__":
    main()
