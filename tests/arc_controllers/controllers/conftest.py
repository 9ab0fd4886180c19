"""Fixtures for the runner controllers' unit tests: a fake API server and a fake Actions service."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakeapi import FakeCluster

from arc_controllers.actions.errors import JobStillRunningError, RunnerExistsError, RunnerNotFoundError
from arc_controllers.controllers.actions_seam import RunnerReference
from arc_controllers.resourcebuilder.runner import JitRunnerConfig

__all__ = ["FakeActions", "JobStillRunningError", "RunnerExistsError", "RunnerNotFoundError"]


class FakeActions:
    """An in-memory Actions service: registrations by id, with fault injection; raises the client's errors."""

    def __init__(self) -> None:
        self.runners: dict[int, RunnerReference] = {}
        self.busy: set[int] = set()
        self.calls: list[tuple[str, Any]] = []
        self.fail_remove: list[BaseException] = []
        self.fail_jit: list[BaseException] = []
        self._next = 1

    async def generate_jit_runner_config(self, *, name: str, work_folder: str, scale_set_id: int) -> JitRunnerConfig:
        self.calls.append(("generate_jit_runner_config", name))
        if self.fail_jit:
            raise self.fail_jit.pop(0)
        if any(r.name == name for r in self.runners.values()):
            raise RunnerExistsError(name)
        rid = self._next
        self._next += 1
        self.runners[rid] = RunnerReference(id=rid, name=name, runner_scale_set_id=scale_set_id)
        return JitRunnerConfig(
            encoded_jit_config=f"jit-{rid}", runner_id=rid, runner_name=name, runner_scale_set_id=scale_set_id
        )

    async def get_runner_by_name(self, name: str, /) -> RunnerReference | None:
        self.calls.append(("get_runner_by_name", name))
        return next((r for r in self.runners.values() if r.name == name), None)

    async def remove_runner(self, runner_id: int, /) -> None:
        self.calls.append(("remove_runner", runner_id))
        if self.fail_remove:
            raise self.fail_remove.pop(0)
        if runner_id in self.busy:
            raise JobStillRunningError(str(runner_id))
        if runner_id not in self.runners:
            raise RunnerNotFoundError(str(runner_id))
        del self.runners[runner_id]


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster()


@pytest.fixture
def actions() -> FakeActions:
    return FakeActions()
