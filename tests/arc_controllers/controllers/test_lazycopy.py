"""LazyCopy: no snapshot until the first mutation, one snapshot only, a JSON merge patch.

Upstream: controllers/actions.github.com/lazycopy_test.go @ 6b62a106 (spec §4.2, §12.6 "present; not read").
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from arc_controllers.controllers.patching import LazyCopy
from reconcilekit.client.patch import MERGE_PATCH as MERGE_PATCH_TYPE


def _pod(**annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "pod"}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


# Upstream: TestLazyCopyDoesNotCopyUntilMutated
def test_does_not_copy_until_mutated() -> None:
    lazy = LazyCopy(_pod())

    assert not lazy.modified()
    with pytest.raises(RuntimeError):
        lazy.merge_from()


# Upstream: TestLazyCopySnapshotsBeforeTheFirstMutation
def test_snapshots_before_the_first_mutation() -> None:
    pod = _pod(key="old")
    lazy = LazyCopy(pod)

    lazy.mutate()["metadata"]["annotations"]["key"] = "new"

    assert lazy.modified()
    assert json.loads(lazy.merge_from().data(pod)) == {"metadata": {"annotations": {"key": "new"}}}


# Upstream: TestLazyCopySnapshotsOnlyOnce — the second mutation diffs against the state before the first
def test_snapshots_only_once() -> None:
    pod = _pod(first="old", second="old")
    lazy = LazyCopy(pod)

    lazy.mutate()["metadata"]["annotations"]["first"] = "new"
    lazy.mutate()["metadata"]["annotations"]["second"] = "new"

    assert json.loads(lazy.merge_from().data(pod)) == {"metadata": {"annotations": {"first": "new", "second": "new"}}}


# Upstream: TestLazyCopyMergeFromIsAMergePatch
def test_merge_from_is_a_merge_patch() -> None:
    lazy = LazyCopy(_pod())
    lazy.mutate()["metadata"]["labels"] = {"key": "value"}

    assert lazy.merge_from().type == MERGE_PATCH_TYPE
