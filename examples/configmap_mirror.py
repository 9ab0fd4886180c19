"""configmap-mirror: copy a ConfigMap into the namespaces its annotation names, and keep them in sync.

Annotate a ConfigMap with ``mirror.reconcilekit.io/to: ns-a,ns-b``: copies appear in ``ns-a`` and
``ns-b``, follow the source (hand edits are put back), leave namespaces dropped from the list, and
go with the source (a finalizer waits). Only copies it made (label ``mirror.reconcilekit.io/copy-of:
<source uid>``) are ever updated or deleted: a same-named ConfigMap it does not own is left alone,
logged and named in the source's ``mirror.reconcilekit.io/blocked-in`` annotation. Missing target
namespaces and blocked ones are retried every ``retry`` seconds. Shows the manager, the builder,
a predicate, the cached client, health checks, finalizers and ``create_or_update``.

Run against a local control plane (kubectl is not bundled)::

    KUBEBUILDER_ASSETS=... python -m reconcilekit.envtest    # prints "envtest: kubeconfig <path>"
    KUBECONFIG=<path> python examples/configmap_mirror.py    # metrics 127.0.0.1:8080, probes :8081
    kubectl --kubeconfig <path> create namespace a
    kubectl --kubeconfig <path> create configmap settings --from-literal=k=v
    kubectl --kubeconfig <path> annotate configmap settings mirror.reconcilekit.io/to=a
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib

import structlog

from reconcilekit import (
    Client,
    GroupVersionKind,
    Manager,
    NotFoundError,
    Object,
    ObjectKey,
    Options,
    Request,
    ResourceVersionChangedPredicate,
    Result,
    add_finalizer,
    controller_managed_by,
    create_or_update,
    enqueue_requests_from_map_func,
    load_rest_config,
    merge_from,
    new_manager,
    ping,
    remove_finalizer,
    run_until_signalled,
)

CM = GroupVersionKind("", "v1", "ConfigMap")
TARGETS = "mirror.reconcilekit.io/to"
SOURCE = "mirror.reconcilekit.io/source"  # annotation on copies: "<namespace>/<name>"
COPY_OF = "mirror.reconcilekit.io/copy-of"  # label on copies: the source's uid (the owner marker)
BLOCKED = "mirror.reconcilekit.io/blocked-in"  # annotation on sources: namespaces with a foreign namesake
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
    """Makes the copies of one source ConfigMap match it; ``retry``: seconds between re-checks."""

    def __init__(self, client: Client, *, retry: float = 30.0) -> None:
        self.client = client
        self.retry = retry

    async def reconcile(self, request: Request, /) -> Result:
        try:
            source = await self.client.get(CM, request.key)
        except NotFoundError:
            return Result()  # gone: its finalizer already removed the copies
        if SOURCE in (source["metadata"].get("annotations") or {}):
            return Result()  # a copy is never a source
        copies = (await self.client.list(CM, labels={COPY_OF: source["metadata"]["uid"]})).items
        wanted = [] if source["metadata"].get("deletionTimestamp") else targets_of(source)
        for copy in copies:  # only our own copies: the label selector is the owner check
            if copy["metadata"]["namespace"] not in wanted:
                await self.client.delete(copy)
                log.info("deleted copy", source=str(request), namespace=copy["metadata"]["namespace"])
        outcomes = {namespace: await self._ensure_copy(source, namespace) for namespace in wanted}
        blocked = [namespace for namespace, outcome in outcomes.items() if outcome == "blocked"]
        await self._update_source(source, finalizer=bool(wanted), blocked=blocked)
        return Result(requeue_after=self.retry) if {"blocked", "missing"} & set(outcomes.values()) else Result()

    async def _ensure_copy(self, source: Object, namespace: str) -> str:
        """Create or update the copy in ``namespace``: its result, ``"blocked"`` or ``"missing"``."""
        meta = source["metadata"]
        try:
            current = await self.client.get(CM, ObjectKey(namespace, meta["name"]))
        except NotFoundError:
            current = None
        if current is not None and (current["metadata"].get("labels") or {}).get(COPY_OF) != meta["uid"]:
            log.warning("name taken by a ConfigMap we do not own; left alone", source=meta["name"], namespace=namespace)
            return "blocked"
        copy: Object = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": meta["name"]}}
        copy["metadata"]["namespace"] = namespace

        def mutate(obj: Object) -> None:
            obj["metadata"].setdefault("labels", {})[COPY_OF] = meta["uid"]
            obj["metadata"].setdefault("annotations", {})[SOURCE] = f"{meta['namespace']}/{meta['name']}"
            obj["data"] = dict(source.get("data") or {})

        try:
            result = await create_or_update(self.client, copy, mutate)
        except NotFoundError:  # the target namespace does not exist (yet): retried
            log.warning("target namespace missing", namespace=namespace, retry_s=self.retry)
            return "missing"
        if result != "unchanged":
            log.info("mirrored", source=f"{meta['namespace']}/{meta['name']}", namespace=namespace, result=str(result))
        return str(result)

    async def _update_source(self, source: Object, *, finalizer: bool, blocked: list[str]) -> None:
        """Set the finalizer and the blocked-in annotation on the source, in one patch if either changed."""
        base = merge_from(source)
        changed = add_finalizer(source, FINALIZER) if finalizer else remove_finalizer(source, FINALIZER)
        annotations = source["metadata"].setdefault("annotations", {})
        was = annotations.pop(BLOCKED, "")
        if blocked:
            annotations[BLOCKED] = ",".join(blocked)
        if changed or was != ",".join(blocked):
            with contextlib.suppress(NotFoundError):  # deleted meanwhile: nothing to keep
                await self.client.patch(source, base)


def setup(mgr: Manager, *, retry: float = 30.0, name: str = "configmap-mirror") -> None:
    """Register the mirror controller (``name``: unique per process) and ping health checks with ``mgr``."""
    controller_managed_by(mgr).named(name).for_(
        CM, predicates=[ResourceVersionChangedPredicate()]
    ).watches(CM, enqueue_requests_from_map_func(source_of)).complete(MirrorReconciler(mgr.get_client(), retry=retry))
    mgr.add_healthz_check("ping", ping)
    mgr.add_readyz_check("ping", ping)


async def main() -> None:
    parser = argparse.ArgumentParser(description="Mirror annotated ConfigMaps into other namespaces.")
    parser.add_argument("--metrics-bind-address", default="127.0.0.1:8080", help='host:port; "0" turns it off')
    parser.add_argument("--health-probe-bind-address", default="127.0.0.1:8081", help='host:port; "0" turns it off')
    mgr = new_manager(await load_rest_config(), Options(**vars(parser.parse_args())))
    setup(mgr)
    await run_until_signalled(mgr)


if __name__ == "__main__":
    asyncio.run(main())
