"""API requests for one runner lifecycle: created, pod running, job done, deleted.

Runs both runner reconcilers in a manager against a real kube-apiserver (envtest) and the
fake Actions service, plays the listener (ERS patches, the job-started status patch) and
the kubelet (pods/status) by hand, and prints the Kubernetes API requests by verb and
resource: the controllers' (from the manager client's request accounting) and the
simulated listener's. The per-runner ledger of Go ARC (performance-facts.md §1.5, read
from its code, not measured) is 29-34 requests per isolated job; the target is <= 20.

Run: ``KUBEBUILDER_ASSETS=... python -m benchmarks bench_runner_lifecycle``.

Python only: a benchmark.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

GO_ARC_LEDGER = (29, 34)
"""Go ARC's requests for one isolated job (performance-facts.md §1.5): controllers and listener."""

ROOT = Path(__file__).resolve().parents[1]
MERGE = "application/merge-patch+json"


async def _until(check: Callable[[], Awaitable[Any]], *, within: float = 30.0) -> Any:
    deadline = time.monotonic() + within
    while True:
        with contextlib.suppress(Exception):
            value = await check()
            if value is not None and value is not False:
                return value
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.05)


def _tally(counts: dict[Any, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, n in counts.items():
        if key.verb == "watch":
            continue
        label = f"{key.verb} {key.resource}" + ("" if key.code in (200, 201) else f" ({key.code})")
        out[label] = out.get(label, 0) + n
    return dict(sorted(out.items()))


async def _lifecycle() -> tuple[dict[str, int], dict[str, int]]:
    from arc_controllers.actions.fake import FakeActionsService
    from arc_controllers.controllers.actions_seam import SecretActionsClientFactory
    from arc_controllers.controllers.completions import JobCompletions
    from arc_controllers.controllers.deletions import DeletionsRequested
    from arc_controllers.controllers.ephemeralrunner import EphemeralRunnerReconciler
    from arc_controllers.controllers.ephemeralrunnerset import EphemeralRunnerSetReconciler
    from arc_controllers.controllers.indexers import setup_runner_indexers
    from arc_controllers.controllers.newrunners import NewRunners
    from reconcilekit.client import new_client
    from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey
    from reconcilekit.client.patch import raw_patch
    from reconcilekit.config import load_rest_config
    from reconcilekit.envtest import Environment
    from reconcilekit.manager import Options, new_manager

    ers_gvk = GroupVersionKind("actions.github.com", "v1alpha1", "EphemeralRunnerSet")
    er_gvk = GroupVersionKind("actions.github.com", "v1alpha1", "EphemeralRunner")
    pod_gvk = GroupVersionKind("", "v1", "Pod")
    secret_gvk = GroupVersionKind("", "v1", "Secret")
    ns = "bench"

    async with Environment(crd_paths=[ROOT / "config" / "crd"]) as env, FakeActionsService() as svc:
        config = await load_rest_config(env.kubeconfig_path)
        other = new_client(config, register_prometheus=False)  # the listener and the kubelet
        controller_client = new_client(config, register_prometheus=False)
        try:
            await other.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            token = base64.b64encode(svc.github.pat.encode()).decode()
            await other.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "github-config", "namespace": ns},
                    "data": {"github_token": token},
                }
            )
            scale_set = svc.state.create_scale_set({"name": "bench", "runnerGroupId": 1})
            await other.create(
                {
                    "apiVersion": "actions.github.com/v1alpha1",
                    "kind": "EphemeralRunnerSet",
                    "metadata": {"name": "set", "namespace": ns},
                    "spec": {
                        "replicas": 0,
                        "patchID": 0,
                        "ephemeralRunnerSpec": {
                            "githubConfigUrl": svc.config_url(),
                            "githubConfigSecret": "github-config",
                            "runnerScaleSetId": scale_set.id,
                            "spec": {"containers": [{"name": "runner", "image": "runner:latest"}]},
                        },
                    },
                }
            )
            mgr = new_manager(
                config, Options(metrics_bind_address="0", uncached=[secret_gvk]), client=controller_client
            )
            actions = SecretActionsClientFactory(mgr.get_api_reader())
            await setup_runner_indexers(mgr)
            # As setup_controllers wires them: one record of DELETEs sent, of jobs completed, of runners created.
            deletions, completions, new_runners = DeletionsRequested(), JobCompletions(), NewRunners()
            EphemeralRunnerSetReconciler(
                client=mgr.get_client(),
                api_reader=mgr.get_api_reader(),
                actions=actions,
                deletions=deletions,
                completions=completions,
                new_runners=new_runners,
            ).setup_with_manager(mgr)
            EphemeralRunnerReconciler(
                client=mgr.get_client(),
                actions=actions,
                unregistration_queue=None,
                deletions=deletions,
                completions=completions,
                new_runners=new_runners,
            ).setup_with_manager(mgr)
            manager = asyncio.create_task(mgr.start(), name="bench-manager")
            try:

                async def set_ready() -> bool:
                    obj = await other.get(ers_gvk, ObjectKey(ns, "set"))
                    return (obj.get("status") or {}).get("phase") == "Running"

                await _until(set_ready)
                await actions(await other.get(ers_gvk, ObjectKey(ns, "set")))  # warm the Actions client
                await asyncio.sleep(1.0)
                controller_client.reset_request_counts()
                other.reset_request_counts()

                async def patch_set(replicas: int, patch_id: int) -> None:  # the listener
                    obj = await other.get(ers_gvk, ObjectKey(ns, "set"))
                    body = json.dumps({"spec": {"replicas": replicas, "patchID": patch_id}})
                    await other.patch(obj, raw_patch(MERGE, body))

                await patch_set(1, 1)

                async def one_runner() -> dict[str, Any] | None:
                    items = (await other.list(er_gvk, namespace=ns)).items
                    return items[0] if items else None

                runner = await _until(one_runner)
                name = runner["metadata"]["name"]

                async def runner_id_recorded() -> bool:
                    obj = await other.get(er_gvk, ObjectKey(ns, name))
                    return bool((obj.get("status") or {}).get("runnerId"))

                await _until(runner_id_recorded)
                pod = await other.get(pod_gvk, ObjectKey(ns, name))

                async def kubelet(status: dict[str, Any]) -> None:
                    live = await other.get(pod_gvk, ObjectKey(ns, name))
                    await other.status().patch(live, raw_patch(MERGE, json.dumps({"status": status})))

                started = "2026-01-01T00:00:00Z"
                await kubelet(
                    {
                        "phase": "Pending",
                        "containerStatuses": [
                            {"name": "runner", "image": "runner:latest", "imageID": "", "ready": False,
                             "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
                        ],
                    }
                )  # fmt: skip

                async def phase_is(phase: str) -> bool:
                    obj = await other.get(er_gvk, ObjectKey(ns, name))
                    return (obj.get("status") or {}).get("phase") == phase

                await _until(lambda: phase_is("Pending"))
                await kubelet(
                    {
                        "phase": "Running",
                        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started}],
                        "containerStatuses": [
                            {"name": "runner", "image": "runner:latest", "imageID": "", "ready": True,
                             "restartCount": 0, "state": {"running": {"startedAt": started}}}
                        ],
                    }
                )  # fmt: skip

                async def ready() -> bool:
                    obj = await other.get(er_gvk, ObjectKey(ns, name))
                    return bool((obj.get("status") or {}).get("ready"))

                await _until(ready)
                # the listener: job started (GET + locked status patch), then the new desired count
                live = await other.get(er_gvk, ObjectKey(ns, name))
                job = {
                    "metadata": {"resourceVersion": live["metadata"]["resourceVersion"]},
                    "status": {"phase": "Running", "jobId": "job-1", "jobRequestId": 1, "workflowRunId": 1,
                               "jobRepositoryName": "org/repo", "jobWorkflowRef": "wf", "jobDisplayName": "build"},
                }  # fmt: skip
                await other.status().patch(live, raw_patch(MERGE, json.dumps(job)))
                await patch_set(1, 2)
                await asyncio.sleep(0.5)
                # the job completes: the runner exits 0, the listener lowers the count
                await kubelet(
                    {
                        "phase": "Succeeded",
                        "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": started}],
                        "containerStatuses": [
                            {"name": "runner", "image": "runner:latest", "imageID": "", "ready": False,
                             "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
                        ],
                    }
                )  # fmt: skip
                await patch_set(0, 3)

                async def gone() -> bool:
                    items = (await other.list(er_gvk, namespace=ns)).items
                    pods = (await other.list(pod_gvk, namespace=ns)).items
                    return not items and not pods

                await _until(gone)
                await asyncio.sleep(1.0)  # let trailing reconciles finish
                _ = pod
                return _tally(controller_client.request_counts()), _tally(other.request_counts())
            finally:
                manager.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await manager
                await actions.aclose()
        finally:
            await other.close()
            await controller_client.close()


def main() -> None:
    """Print the controllers' and the simulated listener's API requests for one runner lifecycle."""
    controllers, others = asyncio.run(_lifecycle())
    listener = {k: v for k, v in others.items() if "ephemeralrunner" in k and not k.startswith(("get pods", "list"))}
    print("controllers (EphemeralRunnerSet + EphemeralRunner), by verb and resource:")
    for key, n in controllers.items():
        print(f"  {n:3d}  {key}")
    ours = sum(controllers.values())
    listener_writes = sum(v for k, v in listener.items() if k.startswith("patch"))
    listener_total = listener_writes + 1  # the GET before the job-started patch
    total = ours + listener_total
    # The finished-runner race (ledger E3): the set's uncached read and locked marker patch, plus
    # a second DELETE of the already-deleting runner where nothing shares the DELETEs sent.
    race = controllers.get("patch ephemeralrunnersets/status", 0)
    race_requests = 2 * race + max(controllers.get("delete ephemeralrunners", 0) - 1, 0)
    print(f"controllers total: {ours}")
    if race:
        print(
            f"  of which the finished-runner race (ledger E3, kept for fidelity): {race_requests} "
            "(uncached get set, locked marker patch, any second delete of the already-deleting runner)"
        )
    print(f"listener (simulated, as in the ledger): {listener_total} ({listener_writes} patches + 1 get)")
    print(f"total per lifecycle: {total}  (target <= 20; Go ARC ledger {GO_ARC_LEDGER[0]}-{GO_ARC_LEDGER[1]} + 3 race)")
    print(
        f"without the race: {total - race_requests}; ratio to the Go ARC ledger (without race): "
        f"{(total - race_requests) / GO_ARC_LEDGER[0]:.2f}-{(total - race_requests) / GO_ARC_LEDGER[1]:.2f}"
    )


if __name__ == "__main__":
    main()
