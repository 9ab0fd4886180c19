"""arc-sim end to end on the session's kube-apiserver: the shipped smoke scenario, every job done.

Runs `run_simulation`, the same code path as the ``arc-sim`` command (controller manager
in-process, listener as an ``arc-listener`` process, simulated runners), in namespaces of its
own so it shares the control plane with the other tests. The controller runs as the Helm
charts' ServiceAccount with only their rules (`chart_rbac`; ``ARC_ENVTEST_CHART_RBAC=0``: admin).
"""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from arc_controllers.cmd.sim.main import ARS, SimResult, run_simulation
from arc_controllers.cmd.sim.report import render_summary
from arc_controllers.cmd.sim.scenario import RESTRICTED_LABEL, Scenario, load_scenario
from reconcilekit.client import RestClient
from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey
from reconcilekit.config import RestConfig
from reconcilekit.errors import NotFoundError

from .chart_rbac import (
    CONTROLLER_SERVICE_ACCOUNT,
    chart_rbac_enabled,
    install_chart_rbac,
    service_account_config,
    uninstall_chart_rbac,
)

pytestmark = pytest.mark.slow


def _in_own_namespaces(scenario: Scenario, **update: Any) -> Scenario:
    """The scenario in namespaces of its own (the control plane is shared with the other tests)."""
    suffix = uuid.uuid4().hex[:6]
    scale_set = scenario.scale_set.model_copy(
        update={"namespace": f"sim-runners-{suffix}", "controller_namespace": f"sim-systems-{suffix}"}
    )
    return scenario.model_copy(update={"scale_set": scale_set, **update})


async def _run_as_chart(
    scenario: Scenario, envtest_environment: Any, client: RestClient, tmp_path: Path, progress: io.StringIO
) -> SimResult:
    """`run_simulation` with the controller holding only the Helm charts' rules (unless opted out)."""
    ss = scenario.scale_set

    async def chart_identity(admin_client: Any, admin: RestConfig) -> RestConfig:
        await install_chart_rbac(
            admin_client,
            controller_namespace=ss.controller_namespace,
            namespace=ss.namespace,
            scale_set_name=ss.name,
        )
        return await service_account_config(
            admin_client, admin, namespace=ss.controller_namespace, name=CONTROLLER_SERVICE_ACCOUNT
        )

    try:
        return await run_simulation(
            scenario,
            out_dir=tmp_path,
            stream=progress,
            environment=envtest_environment,
            controller_config=chart_identity if chart_rbac_enabled() else None,
        )
    finally:
        await uninstall_chart_rbac(client, controller_namespace=ss.controller_namespace)


async def test_smoke_scenario_serves_every_job(envtest_environment: Any, client: RestClient, tmp_path: Path) -> None:
    scenario = _in_own_namespaces(load_scenario("smoke"), timeout=60.0)
    ss = scenario.scale_set

    progress = io.StringIO()
    result = await _run_as_chart(scenario, envtest_environment, client, tmp_path, progress)
    summary = result.summary
    assert summary.jobs_done == scenario.total_jobs, progress.getvalue()
    assert summary.runners_beyond_demand == 0
    assert summary.runners_with_job == scenario.total_jobs
    assert summary.listener_starts >= 1
    assert summary.controller_requests > 0
    assert summary.wait_p95 >= summary.wait_p50 >= 0
    assert result.plot is not None
    assert result.plot.read_bytes()[:4] == b"\x89PNG"
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["jobs_done"] == scenario.total_jobs
    assert "done 5/5" in progress.getvalue()
    # the controller's informers all synced under the chart's rules and nothing of this scale set was
    # refused (the cache is cluster-wide: other tests' leftover runners, in namespaces without the
    # scale-set chart's manager Role, get loud 403s on their secrets, as in a real cluster)
    log = (tmp_path / "controller.log").read_text().splitlines()
    assert not [line for line in log if "list and watch forbidden" in line]
    assert not [line for line in log if "forbidden" in line and f'in the namespace "{ss.namespace}"' in line]
    assert not [line for line in log if "forbidden" in line and f'in the namespace "{ss.controller_namespace}"' in line]
    # on a shared control plane the run deletes its scale set through ARC's own clean-up
    with pytest.raises(NotFoundError):
        await client.get(ARS, ObjectKey(scenario.scale_set.namespace, scenario.scale_set.name))


async def test_field_scenario_serves_every_job_through_issue_19s_failures(
    envtest_environment: Any, client: RestClient, tmp_path: Path
) -> None:
    """``arc-sim field`` end to end under chart RBAC: every job done, 0 runners beyond demand.

    A listener SIGKILLed with its session live (409s, ARC #3209), the session forgotten (refresh
    404, ARC #4356), two empty 200 polls (ARC #4285), runner pods refused by PodSecurity
    admission for a window (ARC #3014: Failed runners recycled) and a runner pod deleted
    mid-job (ARC #4588: its job fails, the runner is not relaunched).
    """
    scenario = _in_own_namespaces(load_scenario("field"))
    progress = io.StringIO()
    result = await _run_as_chart(scenario, envtest_environment, client, tmp_path, progress)
    s = result.summary
    out = progress.getvalue()
    assert s.all_done, out
    assert s.passed, s.failed_jobs
    assert s.runners_beyond_demand == 0, out
    assert s.listener_restarts >= 1
    # each failure happened for real and was answered by the real part
    assert s.actions_faults.get("create_session 409", 0) >= 1, s.actions_faults
    assert s.actions_faults.get("refresh_session 404", 0) >= 1, s.actions_faults
    assert s.actions_faults.get("get_message 200 empty") == 2, s.actions_faults
    assert s.failed_runners.get("InvalidPod", 0) >= 1, s.failed_runners
    assert s.failed_runners_recycled == sum(s.failed_runners.values())
    [(job, reason)] = s.failed_jobs.items()
    assert "deleted mid-job by the scenario" in reason, job
    # the listener recovered in-process from everything but the SIGKILL
    assert s.listener_starts == 2, out
    assert s.faults_not_fired == [], s.faults_not_fired
    assert s.faults_armed == len(scenario.events) + len(scenario.faults)
    conditions = next(line for line in render_summary(s).splitlines() if "conditions seen" in line)
    assert ("none seen" in conditions) == (not s.condition_changes), conditions
    # transitions, not first sightings: whatever went wrong on the way, the set ends Ready again
    ready = [state for _, state in s.condition_changes if state.startswith("AutoscalingRunnerSet Ready=")]
    assert not ready or ready[-1].startswith("AutoscalingRunnerSet Ready=True"), s.condition_changes
    namespace = await client.get(GroupVersionKind("", "v1", "Namespace"), ObjectKey("", scenario.scale_set.namespace))
    assert RESTRICTED_LABEL not in (namespace["metadata"].get("labels") or {})
