"""configmap-mirror: copy a ConfigMap into the namespaces its annotation names, and keep them in sync.

Annotate a ConfigMap with ``mirror.reconcilekit.io/to: ns-a,ns-b``: copies appear in ``ns-a``
and ``ns-b``, follow every change of the source, disappear from namespaces dropped from the
list, and are all deleted (a finalizer waits for that) when the source is deleted. A copy
changed by hand is put back. Shows: the manager, the builder (``for_`` + ``watches`` with a
map function), predicates, the cached client, finalizers and ``create_or_update``.

Run: ``python examples/configmap_mirror.py`` with a kubeconfig (KUBECONFIG or ~/.kube/config).
"""

from __future__ import annotations

import asyncio

import structlog

from reconcilekit.builder import controller_managed_by
from reconcilekit.client.interfaces import Client, GroupVersionKind, Object
from reconcilekit.client.patch import merge_from
from reconcilekit.controllerutil import add_finalizer, create_or_update, remove_finalizer
from reconcilekit.errors import NotFoundError, ignore_not_found
from reconcilekit.handler import enqueue_requests_from_map_func
from reconcilekit.manager import Manager, Options, new_manager, run_until_signalled
from reconcilekit.predicate import ResourceVersionChangedPredicate
from reconcilekit.reconcile import Request, Result

CM = GroupVersionKind("", "v1", "ConfigMap")
TARGETS = "mirror.reconcilekit.io/to"
SOURCE = "mirror.reconcilekit.io/source"  # annotation on copies: "<namespace>/<name>"
COPY_OF = "mirror.reconcilekit.io/copy-of"  # label on copies: the source's uid
FINALIZER = "mirror.reconcilekit.io/cleanup"

log = structlog.get_logger(__name__)


def targets_of(source: Object) -> list[str]:
    """The namespaces a source asks to be mirrored to (never its own)."""
    raw = (source["metadata"].get("annotations") or {}).get(TARGETS, "")
    own = source["metadata"]["namespace"]
    return sorted({ns.strip() for ns in raw.split(",") if ns.strip() and ns.strip() != own})


def source_of(copy: Object) -> list[Request]:
    """Map a copy's events to its source's request (a map function: no I/O, no mutation)."""
    ref = (copy["metadata"].get("annotations") or {}).get(SOURCE, "")
    namespace, _, name = ref.partition("/")
    return [Request(namespace, name)] if name else []


class MirrorReconciler:
    """Makes the copies of one source ConfigMap match it."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def reconcile(self, request: Request, /) -> Result:
        try:
            source = await self.client.get(CM, request.key)
        except NotFoundError:
            return Result()  # gone: its finalizer already removed the copies
        if SOURCE in (source["metadata"].get("annotations") or {}):
            return Result()  # a copy is never a source
        uid = source["metadata"]["uid"]
        copies = (await self.client.list(CM, labels={COPY_OF: uid})).items
        wanted = [] if source["metadata"].get("deletionTimestamp") else targets_of(source)
        for copy in copies:
            if copy["metadata"]["namespace"] not in wanted:
                await self.client.delete(copy)
                log.info("deleted copy", source=str(request), namespace=copy["metadata"]["namespace"])
        for namespace in wanted:
            await self._ensure_copy(source, namespace)
        await self._set_finalizer(source, present=bool(wanted))
        return Result()

    async def _ensure_copy(self, source: Object, namespace: str) -> None:
        meta = source["metadata"]
        copy: Object = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": meta["name"]}}
        copy["metadata"]["namespace"] = namespace

        def mutate(obj: Object) -> None:
            obj["metadata"].setdefault("labels", {})[COPY_OF] = meta["uid"]
            obj["metadata"].setdefault("annotations", {})[SOURCE] = f"{meta['namespace']}/{meta['name']}"
            obj["data"] = dict(source.get("data") or {})

        try:
            result = await create_or_update(self.client, copy, mutate)
        except NotFoundError:  # the target namespace does not exist (yet)
            log.warning("target namespace missing", namespace=namespace)
            return
        if result != "unchanged":
            log.info("mirrored", source=f"{meta['namespace']}/{meta['name']}", namespace=namespace, result=str(result))

    async def _set_finalizer(self, source: Object, *, present: bool) -> None:
        base = merge_from(source)
        changed = add_finalizer(source, FINALIZER) if present else remove_finalizer(source, FINALIZER)
        if changed:
            try:
                await self.client.patch(source, base)
            except Exception as err:
                if ignore_not_found(err) is not None:
                    raise


def setup(mgr: Manager) -> None:
    """Register the mirror controller with ``mgr``."""
    controller_managed_by(mgr).named("configmap-mirror").for_(
        CM, predicates=[ResourceVersionChangedPredicate()]
    ).watches(CM, enqueue_requests_from_map_func(source_of)).complete(MirrorReconciler(mgr.get_client()))


async def main() -> None:
    from reconcilekit.config import load_rest_config

    mgr = new_manager(await load_rest_config(), Options(health_probe_bind_address=":8081"))
    setup(mgr)
    await run_until_signalled(mgr)


if __name__ == "__main__":
    asyncio.run(main())
