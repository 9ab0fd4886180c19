"""arc-sim's measurements: percentiles, the summary, the progress line and the plot."""

from __future__ import annotations

import io
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from arc_controllers.cmd.sim import main as sim_main
from arc_controllers.cmd.sim.main import plot_if_possible
from arc_controllers.cmd.sim.progress import Progress, format_sample
from arc_controllers.cmd.sim.report import Sample, Summary, Timeline, percentile, render_summary, summarize, write_plot


def _timeline() -> Timeline:
    tl = Timeline()
    for rid, (q, s, d) in enumerate([(0, 1, 4), (0, 2, 5), (0, 3, 6), (5, 5.5, 8)], start=1):
        tl.job_queued(rid, q)
        tl.job_started(rid, s)
        tl.job_done(rid, d)
    tl.job_queued(9, 9)  # never started
    tl.samples = [
        Sample(t=0, runners={"Pending": 2}, jobs_queued=3, jobs_running=0, jobs_done=0),
        Sample(t=1, runners={"Pending": 1, "Running": 3}, jobs_queued=1, jobs_running=2, jobs_done=0),
        Sample(t=2, runners={}, jobs_queued=0, jobs_running=0, jobs_done=4),
    ]
    tl.events = [(1.5, "controller restarted")]
    return tl


def test_percentile() -> None:
    assert percentile([1, 2, 3, 4, 5], 50) == 3
    assert percentile([1, 2], 50) == 1.5
    assert percentile([0, 10], 95) == 9.5
    assert math.isnan(percentile([], 50))


def test_summary_counts() -> None:
    s = summarize(
        _timeline(),
        scenario="t",
        jobs_total=5,
        duration=10.0,
        runners_created=7,
        runners_with_job=4,
        idle_allowance=1,
        controller_requests=140,
        actions_requests=35,
        listener_starts=1,
    )
    assert s.jobs_done == 4
    assert not s.all_done
    assert s.peak_runners == 4
    assert s.wait_p50 == 1.5  # waits 0.5, 1, 2, 3
    assert s.runners_beyond_demand == 2
    assert s.requests_per_runner == 20.0
    assert s.actions_per_runner == 5.0
    text = render_summary(s)
    assert "JOBS LEFT UNDONE" in text
    assert "4/5" in text
    assert "runners beyond demand" in text


def test_progress_line_per_second_without_a_tty() -> None:
    out = io.StringIO()
    p = Progress(out, jobs_total=5, tty=False)
    for sample in _timeline().samples:
        p.show(sample)
    p.note("event")
    lines = out.getvalue().splitlines()
    assert len(lines) == 4
    assert "\r" not in out.getvalue()
    assert "Pending 1 Running 3" in lines[1]
    assert "done 0/5" in lines[1]


def test_progress_redraws_on_a_tty() -> None:
    out = io.StringIO()
    p = Progress(out, jobs_total=5, tty=True)
    sample = _timeline().samples[0]
    p.show(sample)
    p.show(sample)
    p.finish()
    assert out.getvalue().count("\r") == 2
    assert out.getvalue().endswith("\n")
    assert format_sample(sample, jobs_total=5) in out.getvalue()


def test_plot_is_a_png(tmp_path: Path) -> None:
    path = write_plot(_timeline(), tmp_path / "out" / "plot.png", title="t")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_is_skipped_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the ``sim`` extra the run still ends with its text outputs; only the PNG is skipped."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ModuleNotFoundError
    assert plot_if_possible(_timeline(), tmp_path / "p.png", title="t") is None
    assert not (tmp_path / "p.png").exists()


def test_plot_if_possible_does_not_hide_other_missing_modules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Only a missing matplotlib is tolerated; any other import error is a bug and propagates."""

    def broken(*_: object, **__: object) -> Path:
        raise ModuleNotFoundError("No module named 'numpy'", name="numpy")

    monkeypatch.setattr(sim_main, "write_plot", broken)
    with pytest.raises(ModuleNotFoundError):
        plot_if_possible(_timeline(), tmp_path / "p.png", title="t")


def _field_timeline() -> Timeline:
    tl = Timeline()
    for rid in (1, 2, 3):
        tl.job_queued(rid, 0, f"job-{rid - 1}")
        tl.job_started(rid, 1)
    tl.job_done(1, 3)
    tl.job_done(2, 2, "failed")
    tl.jobs[2].reason, tl.jobs[2].expected = "runner pod r2 deleted mid-job by the scenario (ARC #4588)", True
    tl.job_done(3, 4, "failed")
    tl.jobs[3].reason = "runner pod r3 deleted mid-job, not by the scenario"
    return tl


def _field_summary(tl: Timeline, **overrides: Any) -> Summary:
    fields: dict[str, Any] = {
        "scenario": "field",
        "jobs_total": 3,
        "duration": 10.0,
        "runners_created": 7,
        "runners_with_job": 3,
        "idle_allowance": 0,
        "controller_requests": 100,
        "actions_requests": 50,
        "listener_starts": 2,
        "failed_runners": {"InvalidPod": 4},
        "failed_runners_recycled": 4,
        "condition_changes": [
            (0.0, "AutoscalingRunnerSet Ready=True Running"),
            (12.0, "AutoscalingRunnerSet Ready=False Forbidden"),
            (20.0, "AutoscalingRunnerSet Ready=True Running"),
        ],
        "actions_faults": {"create_session 409": 3, "refresh_session 404": 1, "get_message 200 empty": 2},
    }
    fields.update(overrides)
    return summarize(tl, **fields)


def test_failed_jobs_are_done_listed_with_their_reason_and_unexpected_ones_fail_the_run() -> None:
    s = _field_summary(_field_timeline())
    assert s.jobs_done == 3
    assert s.all_done
    assert s.failed_jobs == {
        "job-1": "runner pod r2 deleted mid-job by the scenario (ARC #4588)",
        "job-2": "runner pod r3 deleted mid-job, not by the scenario",
    }
    assert s.unexpected_failures == 1
    assert not s.passed
    text = render_summary(s)
    assert "3/3 (1 succeeded, 2 failed)" in text
    assert "failed: job-1" in text
    assert "by the scenario" in text


def test_recycled_failed_runners_are_not_beyond_demand_but_are_printed() -> None:
    tl = _field_timeline()
    tl.jobs[3].expected = True
    s = _field_summary(tl)
    assert s.passed
    assert s.runners_beyond_demand == 0  # 7 created, 3 with a job, 4 Failed without one and recycled
    kept = _field_summary(tl, failed_runners_recycled=3)  # one Failed runner still there at the end
    assert kept.runners_beyond_demand == 1
    text = render_summary(s)
    assert "Failed runners seen" in text
    assert "4 (InvalidPod x4); 4 recycled without a job" in text
    assert "2 (1 restarts)" in text
    assert "create_session 409 x3" in text
    assert "refresh_session 404 x1" in text
    assert "get_message 200 empty x2" in text
    rows = [line.strip().split("  ", 1) for line in text.splitlines()]
    assert ["conditions seen", "3 transition(s)"] in [[k, v.strip()] for k, v in rows]
    changes = [(k, v.strip()) for k, v in rows if k.startswith("t=")]
    assert changes == [
        ("t=0s", "AutoscalingRunnerSet Ready=True Running"),
        ("t=12s", "AutoscalingRunnerSet Ready=False Forbidden"),
        ("t=20s", "AutoscalingRunnerSet Ready=True Running"),  # the return to Ready shows
    ]


def test_faults_that_did_not_fire_are_printed_one_line_each() -> None:
    tl = _field_timeline()
    tl.jobs[3].expected = True

    def rows(s: Summary) -> list[tuple[str, str]]:
        return [(k, v.strip()) for k, v in (line.strip().split("  ", 1) for line in render_summary(s).splitlines())]

    assert ("scenario faults fired", "5/5") in rows(_field_summary(tl, faults_armed=5))
    line = "forgetSession at t=14s: no session refresh answered 404 after it (no listener lost its live session)"
    missed = rows(_field_summary(tl, faults_armed=5, faults_not_fired=[line]))
    assert ("scenario faults fired", "4/5  (SOME DID NOT FIRE)") in missed
    assert ("did not fire", line) in missed


def test_no_conditions_and_no_failures_print_as_such() -> None:
    s = summarize(
        _timeline(),
        scenario="t",
        jobs_total=5,
        duration=1.0,
        runners_created=4,
        runners_with_job=4,
        idle_allowance=0,
        controller_requests=1,
        actions_requests=1,
        listener_starts=1,
    )
    text = render_summary(s)
    assert "conditions seen" in text
    assert "none seen" in text
    assert "Failed runners seen" in text
    assert s.listener_restarts == 0


def test_runners_replaced_by_a_rollout_are_not_beyond_demand_but_are_printed() -> None:
    tl = _field_timeline()
    tl.jobs[3].expected = True
    s = _field_summary(tl, runners_created=8, runners_replaced_by_rollout=1)
    assert s.runners_beyond_demand == 0  # 8 created, 3 with a job, 4 recycled, 1 replaced by the rollout
    assert s.runners_replaced_by_rollout == 1
    rows = dict(line.strip().split("  ", 1) for line in render_summary(s).splitlines())
    assert rows["runners beyond demand"].strip() == "0"
    assert rows["runners replaced by a rollout"].strip() == "1"
    idle = _field_summary(tl, runners_created=9, runners_replaced_by_rollout=1)
    assert idle.runners_beyond_demand == 1  # any other idle runner still counts
