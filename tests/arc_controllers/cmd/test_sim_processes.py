"""arc-sim's process readings: /proc parsing, the sampler's CPU window and peaks."""

from __future__ import annotations

import os

import pytest

from arc_controllers.cmd.sim import processes
from arc_controllers.cmd.sim.processes import ProcessSampler, parse_proc

STAT = "4242 (arc (listener)) S 1 4242 4242 0 -1 4194560 900 0 0 0 150 50 0 0 20 0 3 0 100 1000 500 1844"
STATUS = "Name:\tarc-listener\nVmHWM:\t   70000 kB\nVmRSS:\t   65536 kB\nThreads:\t3\n"


def test_parse_proc_reads_cpu_after_the_command_name_and_rss_in_bytes() -> None:
    reading = parse_proc(STAT, STATUS)
    assert reading.cpu_seconds == pytest.approx(200 / processes._CLOCK_TICKS)
    assert reading.rss_bytes == 65536 * 1024
    assert reading.peak_rss_bytes == 70000 * 1024


def test_sampler_counts_cpu_from_the_mark_and_keeps_a_gone_process_last_reading() -> None:
    pids = {"self": [os.getpid()], "gone": [2**22 + 7]}
    sampler = ProcessSampler(lambda: pids)
    sampler.mark()
    sum(i * i for i in range(200_000))  # burn a little CPU
    sampler.sample()
    me = sampler.roles["self"]
    assert me.processes == 1
    assert me.cpu_since_mark >= 0.0
    assert me.peak_rss > 0
    assert me.peak_total_rss_bytes == sum(me.rss_bytes.values()) or me.peak_total_rss_bytes > 0
    assert sampler.roles["gone"].processes == 0
