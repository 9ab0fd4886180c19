"""The runners whose DELETE this process sent, shared by the EphemeralRunner and EphemeralRunnerSet reconcilers.

The runner reconciler deletes a runner right after recording Succeeded; the set's
finished-runner cleanup, working from a cache that shows the runner Succeeded but not
yet deleting, used to delete it a second time (1.8–1.9 DELETEs per finished runner,
issue 20's finding 1). Each duplicate costs a token of the ``ephemeralrunners`` bucket
every other runner write waits on. With this record the set skips runners whose
deletion this process already asked for; the set still writes its finished-runner
cleanup marker for the patch ID (the #4642 seed mechanism), it only leaves the DELETE out.

A DELETE the API server accepted is final (a deletionTimestamp is never removed), so a
record never goes wrong by being kept, even after the runner is gone (the set's cache
may still show it): a DELETE in flight counts from before it is sent and is dropped
again if it fails for any reason other than NotFound. The newest ``capacity`` are kept.

Python only: Go ARC sends both DELETEs (the ledger's E3 race).

Ports: none; Python only (issue 20, finding 1): upstream sends the duplicate DELETE this record
saves; nothing upstream to port.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["DeletionsRequested"]


class DeletionsRequested:
    """Runner UIDs whose deletion this process requested; the newest ``capacity`` are kept.

    Not thread-safe; one event loop. Python only.
    """

    __slots__ = ("_capacity", "_uids")

    def __init__(self, *, capacity: int = 10_000) -> None:
        """Python only: ``capacity`` runners remembered at most (oldest dropped first)."""
        self._uids: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity

    def requested(self, uid: str) -> None:
        """Record that a DELETE of runner ``uid`` is being sent (or was accepted)."""
        if not uid:
            return
        self._uids[uid] = None
        self._uids.move_to_end(uid)
        while len(self._uids) > self._capacity:
            self._uids.popitem(last=False)

    def failed(self, uid: str) -> None:
        """The DELETE of ``uid`` failed (not NotFound): nobody else should count on it."""
        self._uids.pop(uid, None)

    def __contains__(self, uid: object) -> bool:
        """True when this process requested the deletion of runner ``uid``."""
        return uid in self._uids

    def __len__(self) -> int:
        """How many runners are remembered."""
        return len(self._uids)
