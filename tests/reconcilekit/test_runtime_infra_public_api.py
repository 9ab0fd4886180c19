"""The public names of the cache, delegating client, leader election, manager, health and testing modules."""

from __future__ import annotations

import importlib

import pytest

MODULES = [
    "reconcilekit.cache",
    "reconcilekit.cache.informer_cache",
    "reconcilekit.cache.options",
    "reconcilekit.cache.reader",
    "reconcilekit.cache._internal.indexer",
    "reconcilekit.cache._internal.reflector",
    "reconcilekit.cache._internal.selectors",
    "reconcilekit.cache._internal.shared_informer",
    "reconcilekit.client.delegating",
    "reconcilekit.healthz",
    "reconcilekit.leaderelection",
    "reconcilekit.leaderelection.elector",
    "reconcilekit.leaderelection.lease_lock",
    "reconcilekit.manager",
    "reconcilekit.manager.options",
    "reconcilekit.manager.signals",
    "reconcilekit.metrics.server",
    "reconcilekit.testing",
    "reconcilekit.testing.eventually",
    "reconcilekit.testing.fake_client",
    "reconcilekit.testing.faults",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_public_and_true(name: str) -> None:
    """__all__ lists only names that exist, none private, each once."""
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(set(exported)) == len(exported)
    assert [n for n in exported if n.startswith("_")] == []
    assert [n for n in exported if not hasattr(module, n)] == []


def test_testing_face_exports_the_kit() -> None:
    face = set(importlib.import_module("reconcilekit.testing").__all__)
    for module in ("eventually", "fake_client", "faults"):
        missing = set(importlib.import_module(f"reconcilekit.testing.{module}").__all__) - face
        assert missing == set(), f"reconcilekit.testing lacks {missing}"
