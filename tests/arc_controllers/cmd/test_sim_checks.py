"""arc-sim checks that each fault of its scenario fired, and records condition transitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arc_controllers.actions.fake import FaultInjector
from arc_controllers.cmd.sim import main as sim_main
from arc_controllers.cmd.sim.checks import Armed, Seen, describe, unfired
from arc_controllers.cmd.sim.main import SimResult
from arc_controllers.cmd.sim.report import Timeline, summarize
from arc_controllers.cmd.sim.scenario import load_scenario
from arc_controllers.cmd.sim.system import conditions_of

FIELD = load_scenario("field")
ITEMS: list[Any] = [*FIELD.events, *FIELD.faults]
"""killListener, forgetSession, refuseRunnerPods, deleteRunnerPod, then the empty-body fault."""


def _everything_fired() -> tuple[list[Armed], Seen]:
    injector = FaultInjector()
    fault = injector.add("get_message", "empty_body", times=2)
    fault.fired = 2
    armed = [Armed(index=i, at=item.at, answers_before={}) for i, item in enumerate(ITEMS)]
    armed[-1].fault = fault
    seen = Seen(
        answers={("create_session", 409): 2, ("refresh_session", 404): 1},
        failed_runner_reasons={"InvalidPod"},
        jobs_cut_by_scenario=1,
        listeners_killed=1,
    )
    return armed, seen


def test_a_field_run_whose_faults_all_fired_passes() -> None:
    armed, seen = _everything_fired()
    assert [type(i).__name__ for i in ITEMS][-1] == "Fault"
    assert unfired(ITEMS, armed, seen) == []


def test_a_session_forgotten_before_any_listener_used_it_did_not_fire() -> None:
    """The reviewer's case: killListener moved to t=10, so forgetSession drops the dead listener's session."""
    armed, seen = _everything_fired()
    forget = next(a for a in armed if ITEMS[a.index].action == "forgetSession")  # type: ignore[union-attr]
    forget.answers_before = {("refresh_session", 404): 1}  # the 404 seen came before it, none after
    [line] = unfired(ITEMS, armed, seen)
    assert line.startswith("forgetSession at t=14s: no session refresh answered 404")
    assert "\n" not in line


def test_each_event_names_what_it_missed() -> None:
    armed, _ = _everything_fired()
    armed[-1].fault.fired = 1  # type: ignore[union-attr]
    lines = unfired(ITEMS, armed, Seen(answers={}))
    assert [line.split(":", 1)[0] for line in lines] == [
        "killListener at t=1s",
        "forgetSession at t=14s",
        "refuseRunnerPods at t=22s",
        "deleteRunnerPod at t=38s",
        "fault get_message empty_body at t=18s",
    ]
    assert "no listener process was running to kill" in lines[0]
    assert "409" in unfired(ITEMS, armed, Seen(answers={}, listeners_killed=1))[0]
    assert "InvalidPod" in lines[2]
    assert "fired 1 of 2" in lines[4]


def test_an_item_the_run_never_reached_did_not_fire() -> None:
    armed, seen = _everything_fired()
    lines = unfired(ITEMS, armed[:-1], seen)
    assert lines == [f"{describe(ITEMS[-1])}: never applied (the run ended first)"]


def test_conditions_are_keyed_by_object_and_type_whatever_the_reason() -> None:
    obj = {
        "kind": "AutoscalingListener",
        "metadata": {"name": "l1"},
        "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "AnyNewReason"}, {"bad": 1}]},
    }
    want = "AutoscalingListener Ready=False AnyNewReason"
    assert conditions_of(obj) == {("AutoscalingListener", "l1", "Ready"): want}
    assert conditions_of({"kind": "X"}) == {}


def test_arc_sim_exits_1_naming_the_fault_that_did_not_fire(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = "forgetSession at t=14s: no session refresh answered 404 after it (no listener lost its live session)"
    tl = Timeline()
    tl.job_queued(1, 0, "job-0")
    tl.job_done(1, 2)
    summary = summarize(
        tl,
        scenario="field",
        jobs_total=1,
        duration=3.0,
        runners_created=1,
        runners_with_job=1,
        idle_allowance=0,
        controller_requests=1,
        actions_requests=1,
        listener_starts=1,
        faults_not_fired=[line],
        faults_armed=5,
    )

    async def fake_run(*_: Any, **__: Any) -> SimResult:
        return SimResult(summary=summary, timeline=tl, plot=None)

    monkeypatch.setattr(sim_main, "run_simulation", fake_run)
    assert sim_main.main(["field", f"--out={tmp_path}"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"arc-sim: scenario faults did not fire: {line}"]


def test_a_kill_expects_409s_only_when_the_scenario_keeps_the_session_for_them() -> None:
    """chaos.yaml's bare kill (expiry time only) may meet no 409 on a slow machine: that is no miss."""
    chaos = load_scenario("chaos")
    [kill] = chaos.events
    assert kill.conflicts_before_expiry == 0  # type: ignore[union-attr]
    armed = [Armed(index=0, at=kill.at, answers_before={})]
    assert unfired([kill], armed, Seen(answers={}, listeners_killed=1)) == []
    assert unfired([kill], armed, Seen(answers={}))[0].endswith("no listener process was running to kill")
