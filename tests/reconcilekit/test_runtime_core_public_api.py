"""The public names of the work queue, event, handler, predicate, source, controller and builder modules."""

from __future__ import annotations

import importlib

import pytest

MODULES = [
    "reconcilekit.workqueue",
    "reconcilekit.workqueue.clock",
    "reconcilekit.workqueue.delaying",
    "reconcilekit.workqueue.interfaces",
    "reconcilekit.workqueue.metrics",
    "reconcilekit.workqueue.priority",
    "reconcilekit.workqueue.queue",
    "reconcilekit.workqueue.rate_limiter",
    "reconcilekit.workqueue.rate_limiting",
    "reconcilekit.event",
    "reconcilekit.predicate",
    "reconcilekit.handler",
    "reconcilekit.handler.eventhandler",
    "reconcilekit.handler.enqueue",
    "reconcilekit.handler.enqueue_owner",
    "reconcilekit.handler.enqueue_mapped",
    "reconcilekit.source",
    "reconcilekit.source.source",
    "reconcilekit.controller",
    "reconcilekit.controller.controller",
    "reconcilekit.controller.options",
    "reconcilekit.builder",
    "reconcilekit.metrics",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_public_and_true(name: str) -> None:
    """__all__ lists only names that exist, none private, each once (ruff's RUF022 keeps the order)."""
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(set(exported)) == len(exported)
    assert [n for n in exported if n.startswith("_")] == []
    assert [n for n in exported if not hasattr(module, n)] == []


def test_package_faces_export_what_their_modules_do() -> None:
    """Each package's __init__ re-exports every public name of its public modules."""
    for package, modules in {
        "reconcilekit.workqueue": ["delaying", "priority", "queue", "rate_limiter", "rate_limiting", "clock"],
        "reconcilekit.handler": ["enqueue", "enqueue_owner", "enqueue_mapped", "eventhandler"],
        "reconcilekit.source": ["source"],
    }.items():
        face = set(importlib.import_module(package).__all__)
        for module in modules:
            missing = set(importlib.import_module(f"{package}.{module}").__all__) - face
            assert missing == set(), f"{package} lacks {missing}"
