"""Adopting what Go ARC's integrity-hash and runner-spec-hash schemes left behind, with no churn.

Go ARC 0.14.0-0.14.2 (released) created a new EphemeralRunnerSet, named ``<scale set>-xxxxx``,
per ``actions.github.com/runner-spec-hash`` and never changed a set's runner spec in place;
`RunnerSetPublisher.get` finds that set by its owner, and it is adopted here like an
integrity-hash set (the same annotation test, the same spec comparison, nothing due when
its runners equal its spec).

Before the revision scheme (#4638), Go ARC patched a new runner spec into the
EphemeralRunnerSet in place and its set controller, on seeing the set's
``actions.github.com/integrity-hash`` annotation differ from the hash of the spec,
removed every runner without a job and then wrote the new hash. A set Go ARC left
behind therefore has both revisions at 0, carries the annotation, and, if Go ARC
stopped between the two steps, still owes that cleanup. Its runners and its listener
carry the annotation too (runners copy the set's annotations at creation).

This module decides, without writing:

* `is_legacy_runner_set`: the set is in that state (the annotation, both revisions 0);
* `pending_legacy_cleanup`: which of its runners the owed cleanup removes. Go's hash
  cannot be recomputed here, so a runner is judged by its spec: one whose spec differs
  semantically from the set's runner spec was built before the change and is due; one
  whose spec equals it keeps running, idle or busy (adoption without churn). Of the
  due runners, those with a job finish it (they are ephemeral); the rest are removed.

The EphemeralRunnerSet reconciler removes what is due (as its revision cleanup does:
terminated runners deleted, the others unregistered, then deleted) and then strips the
annotation from the set (`drop_legacy_hash`) with an optimistic-lock patch, in the same
pass. That strip is the commit point: a crash before it repeats a pass that finds the
removed runners deleting and nothing more due, and after it the set is no longer legacy
and the applied revision (0, equal to the actionable one) takes over.

On runners the annotation is inert: nothing compares runner annotations. A listener
carrying it is recreated once, as upstream does (TestLegacyIntegrityHash
AnnotationCausesOneTimeListenerRecreation): its spec names Go ARC's listener image
anyway, so it differs from ours whatever the annotations say; no runner is touched.

Ports: none; the June 2026 master EphemeralRunnerSet controller's integrity-hash branch
(EphemeralRunnerSetReconciler.Reconcile, the hash mismatch that deletes idle runners) is the
behaviour adopted here, and 0.14.2's runner-spec-hash set lookup is what `RunnerSetPublisher.get` finds.
Beyond: ARC #4638; its review asked for a one-time legacy-hash migration, merged without one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from arc_controllers.api.v1alpha1.equality import semantic_equal
from arc_controllers.constants import ANNOTATION_KEY_INTEGRITY_HASH_OLDER
from arc_controllers.controllers.runnerstates import has_job, new_ephemeral_runners_by_states, runner_id
from reconcilekit.client.interfaces import Object

__all__ = [
    "LEGACY_HASHES",
    "LEGACY_INTEGRITY_HASH",
    "LEGACY_RUNNER_SPEC_HASH",
    "LegacyCleanup",
    "carries_legacy_hash",
    "drop_legacy_hash",
    "is_legacy_runner_set",
    "pending_legacy_cleanup",
    "runner_spec_matches_set",
]

LEGACY_INTEGRITY_HASH = ANNOTATION_KEY_INTEGRITY_HASH_OLDER
"""``actions.github.com/integrity-hash``, written by Go ARC master after #4516 and before #4638."""

LEGACY_RUNNER_SPEC_HASH = "actions.github.com/runner-spec-hash"
"""Written on its sets by Go ARC 0.14.0-0.14.2 (released), which named them ``<scale set>-xxxxx``."""

LEGACY_HASHES = (LEGACY_INTEGRITY_HASH, LEGACY_RUNNER_SPEC_HASH)
"""Either marks a set Go ARC wrote; the strip at the commit point removes both."""

_SET_BY_THE_SET_CONTROLLER = ("proxySecretRef",)
"""Runner-spec keys the set's controller fills in per runner; not part of what the set asks for."""


def carries_legacy_hash(obj: Mapping[str, Any]) -> bool:
    """The object carries ``actions.github.com/integrity-hash`` or ``actions.github.com/runner-spec-hash``."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return any(key in annotations for key in LEGACY_HASHES)


def is_legacy_runner_set(runner_set: Mapping[str, Any]) -> bool:
    """Go ARC's integrity-hash or runner-spec-hash scheme wrote the set and our revision scheme has not touched it yet.

    One of the annotations is present and both ``spec.actionableRevision`` and
    ``status.appliedActionableRevision`` are 0 (absent). Once a revision moved, a full
    revision cleanup covers whatever the legacy one owed.
    """
    spec = runner_set.get("spec") or {}
    status = runner_set.get("status") or {}
    revisions = int(spec.get("actionableRevision") or 0), int(status.get("appliedActionableRevision") or 0)
    return carries_legacy_hash(runner_set) and revisions == (0, 0)


def _comparable(runner_spec: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (runner_spec or {}).items() if k not in _SET_BY_THE_SET_CONTROLLER}


def runner_spec_matches_set(runner: Mapping[str, Any], runner_set: Mapping[str, Any]) -> bool:
    """The runner was built from the set's current runner spec (semantic equality, as drift is judged)."""
    wanted = (runner_set.get("spec") or {}).get("ephemeralRunnerSpec")
    return semantic_equal(_comparable(runner.get("spec")), _comparable(wanted))


@dataclass(frozen=True, slots=True)
class LegacyCleanup:
    """The runners of a legacy set, by what the owed cleanup does to them."""

    delete: list[Object] = field(default_factory=list)
    """Built from an older spec and terminated: deleted once (no registration left to ask about)."""
    remove: list[Object] = field(default_factory=list)
    """Built from an older spec and not busy: pending ones without a job, running ones that are
    idle or have no runner ID. Removed once (service registration, then the object)."""
    finishing: list[Object] = field(default_factory=list)
    """Built from an older spec and running a job: kept; they go when the job ends."""
    kept: list[Object] = field(default_factory=list)
    """Built from the set's spec: adopted as they are, idle or busy."""
    deleting: list[Object] = field(default_factory=list)
    """Already being deleted: neither counted nor deleted again."""

    @property
    def done(self) -> bool:
        """Nothing is left to delete or remove: the annotation may go."""
        return not self.delete and not self.remove


def pending_legacy_cleanup(runner_set: Mapping[str, Any], runners: Iterable[Object]) -> LegacyCleanup:
    """Split a legacy set's runners by what the cleanup Go ARC owed does to them.

    Args:
        runner_set: the EphemeralRunnerSet (`is_legacy_runner_set` should hold).
        runners: the runners it controls.

    The busy test is the set's own cleanup rule (``cleanUpEphemeralRunners``): a pending
    runner with a job, or a running runner with a runner ID and a job, is busy.
    """
    state = new_ephemeral_runners_by_states(runners, 0)
    out = LegacyCleanup(deleting=list(state.deleting))
    for runner in state.terminated():
        (out.kept if runner_spec_matches_set(runner, runner_set) else out.delete).append(runner)
    busy = [r for r in state.pending if has_job(r)] + [r for r in state.running if runner_id(r) > 0 and has_job(r)]
    for runner in [*state.pending, *state.running]:
        if runner_spec_matches_set(runner, runner_set):
            out.kept.append(runner)
        elif any(runner is b for b in busy):
            out.finishing.append(runner)
        else:
            out.remove.append(runner)
    return out


def drop_legacy_hash(runner_set: Object) -> None:
    """Remove both legacy hash annotations from ``runner_set`` (in memory; the caller patches)."""
    annotations = (runner_set.get("metadata") or {}).get("annotations")
    if annotations:
        for key in LEGACY_HASHES:
            annotations.pop(key, None)
