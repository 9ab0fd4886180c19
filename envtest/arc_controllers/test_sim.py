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

from arc_controllers.cmd.sim.main import ARS, run_simulation
from arc_controllers.cmd.sim.scenario import load_scenario
from reconcilekit.client import RestClient
from reconcilekit.client.interfaces import ObjectKey
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


async def test_smoke_scenario_serves_every_job(envtest_environment: Any, client: RestClient, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:6]
    smoke = load_scenario("smoke")
    scenario = smoke.model_copy(
        update={
            "scale_set": smoke.scale_set.model_copy(
                update={"namespace": f"sim-runners-{suffix}", "controller_namespace": f"sim-systems-{suffix}"}
            ),
            "timeout": 60.0,
        }
    )
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

    progress = io.StringIO()
    try:
        result = await run_simulation(
            scenario,
            out_dir=tmp_path,
            stream=progress,
            environment=envtest_environment,
            controller_config=chart_identity if chart_rbac_enabled() else None,
        )
    finally:
        await uninstall_chart_rbac(client, controller_namespace=ss.controller_namespace)
    summary = result.summary
    assert summary.jobs_done == scenario.total_jobs, progress.getvalue()
    assert summary.runners_beyond_demand == 0
    assert summary.runners_with_job == scenario.total_jobs
    assert summary.listener_starts >= 1
    assert summary.controller_requests > 0
    assert summary.wait_p95 >= summary.wait_p50 >= 0
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
