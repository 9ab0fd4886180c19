"""A manager with leader election in its own process, for the fencing tests (run as a script).

    python leader_process.py KUBECONFIG NAMESPACE LEASE IDENTITY [--block-after N] [--no-watchdog]

Its leader-only runnable creates a ConfigMap ``<identity>-<seq>`` (label ``writer=<identity>``)
every 0.5 s while `holds_leadership()`. With ``--block-after N`` it makes a 30 s blocking call
(``time.sleep``) after its N-th write and then writes once more *without* checking the fence,
as careless code would: only the watchdog's hard exit keeps that write from landing.
Prints ``ELECTED`` and ``BLOCKING`` lines (flushed) for the test to time; exit status 1 when
leadership is lost, 70 when the watchdog ends the process.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from reconcilekit.client import GroupVersionKind
from reconcilekit.config import load_rest_config
from reconcilekit.leaderelection import holds_leadership
from reconcilekit.manager import LeaderElectionLostError, Options, new_manager

CM = GroupVersionKind("", "v1", "ConfigMap")
BLOCK_SECONDS = 30.0


def say(what: str) -> None:
    print(f"{what} {time.time():.3f}", flush=True)


class LeaderWriter:
    """Leader-elected (no need_leader_election): writes every 0.5 s while the fence holds."""

    def __init__(self, manager: object, namespace: str, identity: str, block_after: int) -> None:
        self._client = manager.get_client()  # type: ignore[attr-defined]
        self._namespace = namespace
        self._identity = identity
        self._block_after = block_after
        self.seq = 0

    async def _write(self) -> None:
        self.seq += 1
        meta = {"name": f"{self._identity}-{self.seq:04d}", "namespace": self._namespace}
        meta["labels"] = {"writer": self._identity}
        await self._client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})

    async def start(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            if not holds_leadership():
                continue
            await self._write()
            if self._block_after and self.seq == self._block_after:
                say("BLOCKING")
                time.sleep(BLOCK_SECONDS)  # noqa: ASYNC251 - the blocking call under test
                await self._write()  # careless: no fence check after the block


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kubeconfig")
    parser.add_argument("namespace")
    parser.add_argument("lease")
    parser.add_argument("identity")
    parser.add_argument("--block-after", type=int, default=0)
    parser.add_argument("--no-watchdog", action="store_true")
    args = parser.parse_args()
    config = await load_rest_config(args.kubeconfig)
    options = Options(
        metrics_bind_address="0",
        leader_election=True,
        leader_election_id=args.lease,
        leader_election_namespace=args.namespace,
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        exit_on_blocked_leader=not args.no_watchdog,
    )
    mgr = new_manager(config, options)
    mgr.identity = args.identity
    mgr.add(LeaderWriter(mgr, args.namespace, args.identity, args.block_after))

    async def report() -> None:
        await mgr.elected().wait()
        say("ELECTED")

    reporter = asyncio.create_task(report())
    say("STARTED")
    try:
        await mgr.start()
    except LeaderElectionLostError:
        say("LOST")
        return 1
    finally:
        reporter.cancel()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
