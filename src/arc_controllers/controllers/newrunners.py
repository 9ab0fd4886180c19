"""Runners this process created and whose JIT secret nobody has looked for yet.

A new runner's first reconcile reads its JIT secret (an uncached GET of the `secrets`
resource) only to learn that it does not exist, then registers the runner and creates
the secret. That read is one of the two `secrets` requests per new runner, and the
client's per-resource token bucket (QPS 20, burst 30: Go ARC's flags) makes those
requests the floor of a burst's scale-up: 50 runners wait (100 - 30) / 20 = 3.5 s on
the bucket alone (issue 20, finding 6).

For a runner this process created, the answer is known without asking: JIT secrets are
created only by the EphemeralRunner reconciler, named after the runner, and the runner's
name is new (``generateName``). So the EphemeralRunnerSet reconciler records the UID of
each runner it created, and the runner reconciler takes that record the first time it
provisions the runner: a taken record skips the read once; every later attempt (a
retry after an error, a lost create response, a restarted process, another leader)
finds no record and reads as before. A secret that exists after all (a name reused
while an old runner's secret lingers) answers the create with 409; the reconciler then
gives back the registration it just made and reads the secret on its next attempt.

The informer can show a new runner, and its reconcile start, before the set's create call
has returned. So while creates are in flight, `take` waits (at most `WAIT_FOR_CREATES`
seconds) for them to return before it answers; a runner still unrecorded then is read as
before: the record saves requests, it never decides anything.

Ports: none; Python only (issue 20, finding 6): upstream reads the secret for every new runner.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

__all__ = ["WAIT_FOR_CREATES", "NewRunners"]

WAIT_FOR_CREATES = 5.0
"""Seconds `NewRunners.take` waits at most for runner creates in flight to return."""


class NewRunners:
    """UIDs of runners this process created that no reconcile has provisioned yet; the newest ``capacity`` kept.

    Not thread-safe; one event loop. Python only.
    """

    __slots__ = ("_capacity", "_changed", "_in_flight", "_uids")

    def __init__(self, *, capacity: int = 10_000) -> None:
        """Python only: ``capacity`` runners remembered at most (oldest dropped first: they are read as before)."""
        self._uids: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity
        self._in_flight = 0
        self._changed = asyncio.Event()

    def create_started(self) -> None:
        """A create call of a runner is about to be sent; `create_ended` must follow."""
        self._in_flight += 1

    def create_ended(self, uid: str = "") -> None:
        """The create call started last returned: ``uid`` is the new runner's ("" when it failed)."""
        self._in_flight -= 1
        self.created(uid)
        self._changed.set()
        self._changed = asyncio.Event()

    def created(self, uid: str) -> None:
        """Record that this process created runner ``uid`` (its create call returned)."""
        if not uid:
            return
        self._uids[uid] = None
        while len(self._uids) > self._capacity:
            self._uids.popitem(last=False)

    async def take(self, uid: str, *, wait: float = WAIT_FOR_CREATES) -> bool:
        """True once for a runner recorded by `created`: its JIT secret cannot exist yet.

        While creates are in flight and ``uid`` is not recorded, waits up to ``wait`` seconds
        for them to return first.
        """
        if uid not in self._uids and self._in_flight > 0:
            try:
                async with asyncio.timeout(wait):
                    while uid not in self._uids and self._in_flight > 0:
                        await self._changed.wait()
            except TimeoutError:
                pass
        if uid not in self._uids:
            return False
        del self._uids[uid]
        return True

    def __len__(self) -> int:
        """How many runners are remembered."""
        return len(self._uids)
