"""Must-show (issue 16, items 4 and 5): no leader-only write lands once another replica leads.

Two managers on one Lease (15 / 10 / 2 s) in separate processes (`leader_process.py`), each
with a leader-only runnable writing a ConfigMap every 0.5 s. The old leader is paused
(SIGSTOP for 25 s) or makes a 30 s blocking call in its loop; the other is elected once the
Lease runs out. "Once elected" is judged on the server: resourceVersions are etcd revisions,
one sequence across all kinds, so a ConfigMap whose resourceVersion is above that of the
Lease update that made the other replica holder was written after the hand-over.

A third test cancels a manager before it leads, with a runnable that takes 8 s to stop,
while the leader releases the Lease: the stopping manager must never lead or write.
``pytest -s`` prints the hand-over times and counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rk_support import CM

from reconcilekit.client import GroupVersionKind, ObjectKey, RestClient, new_client
from reconcilekit.config import load_rest_config
from reconcilekit.leaderelection import BLOCKED_EXIT_CODE, holds_leadership
from reconcilekit.manager import Options, new_manager
from reconcilekit.testing import eventually

pytestmark = [pytest.mark.slow]

LEASE_KIND = GroupVersionKind("coordination.k8s.io", "v1", "Lease")
HELPER = Path(__file__).with_name("leader_process.py")


class Replica:
    """One `leader_process.py`; its output goes to a file the test polls."""

    def __init__(self, env: Any, namespace: str, lease: str, identity: str, log: Path, *extra: str) -> None:
        self.identity = identity
        self.log = log
        self._file = log.open("wb")
        self.proc = asyncio.create_subprocess_exec(
            sys.executable,
            str(HELPER),
            str(env.kubeconfig_path),
            namespace,
            lease,
            identity,
            *extra,
            stdout=self._file,
            stderr=asyncio.subprocess.STDOUT,
        )
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> Replica:
        self.process = await self.proc
        return self

    def marker(self, word: str) -> float | None:
        """The wall time the process printed ``word``, if it did."""
        for line in self.log.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == word:
                return float(parts[1])
        return None

    async def wait_marker(self, word: str, within: float) -> float:
        await eventually(lambda: self.marker(word) is not None, timeout=within, interval=0.1, message=word)
        value = self.marker(word)
        assert value is not None
        return value

    def signal(self, sig: int) -> None:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, sig)

    async def stop(self) -> int | None:
        if self.process is None:
            return None
        if self.process.returncode is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGKILL)
        code = await self.process.wait()
        self._file.close()
        return code


async def _writes(client: RestClient, namespace: str, writer: str) -> list[int]:
    """The creation resourceVersions of ``writer``'s ConfigMaps (they are never updated)."""
    items = await client.list(CM, namespace=namespace, labels={"writer": writer})
    return sorted(int(o["metadata"]["resourceVersion"]) for o in items.items)


async def _became_holder(client: RestClient, namespace: str, lease: str, identity: str, found: list[int]) -> None:
    """Record the resourceVersion of the first Lease update naming ``identity`` as holder."""
    while True:
        async for event in client.watch(LEASE_KIND, namespace=namespace, timeout_seconds=120):
            obj = event.object
            named = event.type != "BOOKMARK" and obj["metadata"]["name"] == lease
            if named and (obj.get("spec") or {}).get("holderIdentity") == identity:
                found.append(int(obj["metadata"]["resourceVersion"]))
                return


async def _fault_and_count(
    env: Any, client: RestClient, namespace: str, tmp_path: Path, *, fault: str, watchdog: bool = True
) -> dict[str, Any]:
    lease = f"fence-{fault}"
    extra = ("--block-after", "6") if fault == "block" else ()
    extra += () if watchdog else ("--no-watchdog",)
    a = await Replica(env, namespace, lease, "a", tmp_path / "a.log", *extra).start()
    b: Replica | None = None
    found: list[int] = []
    holder_watch = asyncio.create_task(_became_holder(client, namespace, lease, "b", found))
    try:
        await a.wait_marker("ELECTED", 90)
        b = await Replica(env, namespace, lease, "b", tmp_path / "b.log").start()
        await b.wait_marker("STARTED", 60)
        if fault == "stop":
            await eventually(lambda: _enough(client, namespace, "a", 4), timeout=60)
            await asyncio.sleep(2.0)  # b's manager is campaigning by now
            faulted = time.time()
            a.signal(signal.SIGSTOP)
        else:
            faulted = await a.wait_marker("BLOCKING", 90)
        elected = await b.wait_marker("ELECTED", 90)
        await eventually(lambda: bool(found), timeout=30)
        if fault == "stop":
            await asyncio.sleep(max(0.0, faulted + 25.0 - time.time()))
            a.signal(signal.SIGCONT)
        assert a.process is not None
        async with asyncio.timeout(90):
            a_exit = await a.process.wait()
        await eventually(lambda: _enough(client, namespace, "b", 3), timeout=30)
        a_writes = await _writes(client, namespace, "a")
        return {
            "handover_s": round(elected - faulted, 2),
            "a_writes_before": sum(rv < found[0] for rv in a_writes),
            "a_writes_after_b_elected": sum(rv > found[0] for rv in a_writes),
            "b_writes": len(await _writes(client, namespace, "b")),
            "a_exit": a_exit,
        }
    finally:
        holder_watch.cancel()
        await asyncio.gather(holder_watch, return_exceptions=True)
        await a.stop()
        if b is not None:
            await b.stop()


async def _enough(client: RestClient, namespace: str, writer: str, n: int) -> bool:
    return len(await _writes(client, namespace, writer)) >= n


@pytest.mark.parametrize("watchdog", [True, False], ids=["watchdog", "fence-only"])
async def test_a_leader_paused_by_sigstop_writes_nothing_once_the_other_leads(
    envtest_environment: Any, client: RestClient, namespace: str, tmp_path: Path, watchdog: bool
) -> None:
    """With the watchdog the resumed process usually exits at once (the pause looks like a
    block); without it the fence and the renew loop's deadline check alone keep it silent."""
    numbers = await _fault_and_count(envtest_environment, client, namespace, tmp_path, fault="stop", watchdog=watchdog)
    print(f"\nSIGSTOP 25 s (watchdog {'on' if watchdog else 'off'}): {numbers}")
    assert numbers["a_writes_before"] >= 4
    assert numbers["a_writes_after_b_elected"] == 0
    assert numbers["b_writes"] >= 3
    assert numbers["a_exit"] in ((1, BLOCKED_EXIT_CODE) if watchdog else (1,))  # lost, or the watchdog saw the pause


async def test_a_leader_blocked_30_s_exits_hard_before_the_other_leads(
    envtest_environment: Any, client: RestClient, namespace: str, tmp_path: Path
) -> None:
    numbers = await _fault_and_count(envtest_environment, client, namespace, tmp_path, fault="block")
    print(f"\nblocking call 30 s: {numbers}")
    assert numbers["a_writes_before"] == 6
    assert numbers["a_writes_after_b_elected"] == 0
    assert numbers["a_exit"] == BLOCKED_EXIT_CODE


class _Writer:
    def __init__(self, client: Any, namespace: str, writes: list[str]) -> None:
        self._client = client
        self._namespace = namespace
        self.writes = writes

    async def start(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            if holds_leadership():
                name = f"late-{len(self.writes)}"
                await self._client.create(
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": self._namespace}}
                )
                self.writes.append(name)


class _SlowToStop:
    def __init__(self) -> None:
        self.running = asyncio.Event()

    def need_leader_election(self) -> bool:
        return False

    async def start(self) -> None:
        self.running.set()
        try:
            await asyncio.Future()
        finally:
            await asyncio.sleep(8.0)


async def test_a_manager_cancelled_before_it_leads_never_writes_while_the_lease_frees_up(
    envtest_environment: Any, namespace: str
) -> None:
    config = await load_rest_config(envtest_environment.kubeconfig_path)
    base = {
        "metrics_bind_address": "0",
        "leader_election": True,
        "leader_election_id": "fence-shutdown",
        "leader_election_namespace": namespace,
        "lease_duration": 15.0,
        "renew_deadline": 10.0,
        "retry_period": 2.0,
        "exit_on_blocked_leader": False,  # in the test runner's own process: never a hard exit here
    }
    leader = new_manager(config, Options(**base, leader_election_release_on_cancel=True))  # type: ignore[arg-type]
    stopping = new_manager(config, Options(**base))  # type: ignore[arg-type]
    writes: list[str] = []
    slow = _SlowToStop()
    stopping.add(_Writer(stopping.get_client(), namespace, writes))
    stopping.add(slow)
    leader_task = asyncio.create_task(leader.start())
    stopping_task: asyncio.Task[None] | None = None
    try:
        await asyncio.wait_for(leader.elected().wait(), 60)
        stopping_task = asyncio.create_task(stopping.start())
        await asyncio.wait_for(slow.running.wait(), 60)
        await asyncio.sleep(3.0)  # campaigning (retry 2 s) against a valid Lease
        began = time.monotonic()
        stopping_task.cancel()  # a slow shutdown begins (8 s) ...
        await asyncio.sleep(0.5)
        leader_task.cancel()  # ... and the Lease is released during it
        await asyncio.gather(leader_task, return_exceptions=True)
        await asyncio.wait_for(asyncio.gather(stopping_task, return_exceptions=True), 60)
        shutdown = time.monotonic() - began
        async with new_client(config) as reader:
            lease = await reader.get(LEASE_KIND, ObjectKey(namespace, "fence-shutdown"))
        holder = lease["spec"].get("holderIdentity")
        print(f"\nstopping manager: {len(writes)} writes, shutdown {shutdown:.1f} s, lease holder now {holder!r}")
        assert shutdown >= 8.0
        assert writes == []
        assert not stopping.elected().is_set()
        assert holder != stopping.identity
    finally:
        for task in (leader_task, stopping_task):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
