"""The scenario file of arc-sim: the shipped ones load, bad ones say what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from arc_controllers.cmd.sim.objects import autoscaling_runner_set
from arc_controllers.cmd.sim.scenario import (
    DeleteRunnerPodEvent,
    ForgetSessionEvent,
    KillListenerEvent,
    RefuseRunnerPodsEvent,
    RestartEvent,
    RolloutEvent,
    ScenarioError,
    builtin_scenarios,
    load_scenario,
    parse_scenario,
    plan_jobs,
)
from arc_controllers.cmd.sim.system import manager_options_for


def test_shipped_scenarios_load() -> None:
    names = set(builtin_scenarios())
    assert {"default", "rollout", "restart", "smoke"} <= names
    for name in names:
        assert load_scenario(name).total_jobs > 0


def test_default_is_a_burst_then_a_trickle_with_faults() -> None:
    s = load_scenario("default")
    assert s.arrivals[0].every == 0
    assert s.arrivals[0].count > 1
    assert s.arrivals[1].every > 0
    assert s.faults
    assert s.scale_set.min_runners == 0


def test_rollout_and_restart_happen_during_the_burst() -> None:
    rollout, restart = load_scenario("rollout"), load_scenario("restart")
    r_event = rollout.events[0]
    assert isinstance(r_event, RolloutEvent)
    assert r_event.at > 0
    x_event = restart.events[0]
    assert isinstance(x_event, RestartEvent)
    assert x_event.down_for > 0
    # the event comes before the burst can have drained (more jobs than runners)
    assert restart.arrivals[0].count > restart.scale_set.max_runners


def test_plan_is_ordered_and_seeded() -> None:
    text = "name: x\nseed: 7\narrivals: [{at: 5, count: 2, every: 1}, {at: 0, count: 3}]\n"
    a, b = plan_jobs(parse_scenario(text)), plan_jobs(parse_scenario(text))
    assert [j.at for j in a] == [0, 0, 0, 5, 6]
    assert a == b
    assert all(2 <= j.duration <= 5 for j in a)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[1, 2]", "a scenario is a mapping"),
        ("name: x\n", "arrivals"),
        ("name: x\narrivals: [{count: 0}]\n", "arrivals.0.count"),
        ("name: x\narrivals: [{count: 1}]\nscaleSet: {minRunners: 5, maxRunners: 2}\n", "below minRunners"),
        ("name: x\narrivals: [{count: 1}]\nevents: [{at: 1, action: explode}]\n", "events.0"),
        ("name: x\narrivals: [{count: 1}]\nfaults: [{endpoint: nowhere}]\n", "unknown endpoint 'nowhere'"),
        ("name: x\narrivals: [{count: 1}]\nbogus: 1\n", "bogus"),
        ("name: x\narrivals: [{count: 1}]\njobDuration: {min: 3, max: 1}\n", "below min"),
        ("name: [unclosed\n", "not valid YAML"),
        ("name: x\narrivals: [{count: 100000000}]\n", "arrivals.0.count"),
        ("name: x\narrivals: [{count: 6000}, {count: 6000}]\n", "at most 10000"),
        ("name: x\narrivals: [{count: 1}]\nevents: [{at: 1, action: refuseRunnerPods, for: 0}]\n", "events.0"),
        ("name: x\narrivals: [{count: 1}]\nevents: [{at: 1, action: deleteRunnerPod, within: 0}]\n", "within"),
        ("name: x\narrivals: [{count: 1}]\nfaults: [{endpoint: get_message, kind: empty}]\n", "faults.0.kind"),
        ("name: x\narrivals: [{count: 1}]\nfailedRunnerRecycleAge: 0\n", "failedRunnerRecycleAge"),
        ("name: x\narrivals: [{count: 1}]\nscaleSet: {listenerEnv: {'A B': '1'}}\n", "not an environment variable"),
    ],
)
def test_bad_scenarios_name_the_problem(text: str, needle: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, source="s.yaml")
    assert str(err.value).startswith("s.yaml: ")
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_name_lists_the_shipped_ones(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"not a shipped scenario .*default"):
        load_scenario(str(tmp_path / "missing.yaml"))


def test_file_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\narrivals: [{count: 2}]\n")
    assert load_scenario(str(path)).name == "mine"


def test_crds_generated_outside_a_checkout_match_the_checkout(tmp_path: Path) -> None:
    from arc_controllers.api.v1alpha1 import KINDS
    from arc_controllers.api.v1alpha1.crdgen import crd_file_name, generate, render

    checkout = Path(__file__).resolve().parents[3] / "config" / "crd"
    for kind in KINDS:
        assert render(generate(kind)) == (checkout / crd_file_name(kind)).read_text()


def test_field_scenario_runs_every_failure_of_issue_19() -> None:
    """``field``: a listener killed with a live session, a forgotten session, empty polls,
    pods refused at admission for a window, a pod deleted mid-job; Failed runners recycled fast."""
    field = load_scenario("field")
    kinds = {type(e) for e in field.events}
    assert kinds == {KillListenerEvent, ForgetSessionEvent, RefuseRunnerPodsEvent, DeleteRunnerPodEvent}
    assert [(f.endpoint, f.kind) for f in field.faults] == [("get_message", "empty_body")]
    refuse = next(e for e in field.events if isinstance(e, RefuseRunnerPodsEvent))
    assert refuse.duration > 0
    assert field.failed_runner_recycle_age is not None
    assert field.failed_runner_recycle_age < refuse.duration
    # jobs keep arriving after the last event, so each failure meets live demand
    last_event = max(e.at for e in field.events)
    assert max(j.at for j in plan_jobs(field)) > last_event
    assert field.scale_set.listener_env == {"LISTENER_SESSION_CONFLICT_RETRY_INTERVAL": "1"}
    kill = next(e for e in field.events if isinstance(e, KillListenerEvent))
    assert kill.conflicts_before_expiry >= 1  # the next listener meets a 409 however slow it starts
    # the kill comes before the first job: no runner finishes while replicas are stale
    assert kill.at < min(a.at for a in field.arrivals)


def test_new_events_parse_with_their_defaults() -> None:
    text = (
        "name: x\narrivals: [{count: 1}]\nevents:\n"
        "  - {at: 1, action: forgetSession}\n"
        "  - {at: 2, action: refuseRunnerPods, for: 7.5}\n"
        "  - {at: 3, action: deleteRunnerPod}\n"
        "faults: [{at: 4, endpoint: get_message, kind: empty_body, times: 2}]\n"
    )
    s = parse_scenario(text)
    forget, refuse, delete = s.events
    assert isinstance(forget, ForgetSessionEvent)
    assert isinstance(refuse, RefuseRunnerPodsEvent)
    assert refuse.duration == 7.5
    assert isinstance(delete, DeleteRunnerPodEvent)
    assert delete.within == 60.0
    assert s.faults[0].kind == "empty_body"
    assert s.failed_runner_recycle_age is None


def test_recycle_age_reaches_the_controller_and_listener_env_the_template() -> None:
    field = load_scenario("field")
    assert manager_options_for(field, "info").failed_runner_recycle_age == field.failed_runner_recycle_age
    assert manager_options_for(load_scenario("default"), "info").failed_runner_recycle_age == 300.0
    ars = autoscaling_runner_set(field, "https://github.com/o", "secret")
    container = ars["spec"]["listenerTemplate"]["spec"]["containers"][0]
    env = [{"name": "LISTENER_SESSION_CONFLICT_RETRY_INTERVAL", "value": "1"}]
    assert container == {"name": "listener", "env": env}
    assert "listenerTemplate" not in autoscaling_runner_set(load_scenario("default"), "u", "s")["spec"]
