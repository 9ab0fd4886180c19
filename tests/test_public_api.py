"""The public surface of both packages: truthful ``__all__`` lists and private modules kept private."""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from pathlib import Path
from types import ModuleType

import grimp
import pytest

import arc_controllers
import reconcilekit

SKIP = {"reconcilekit.envtest.__main__", "arc_controllers.__main__", "arc_controllers.listener.__main__"}


def all_modules(*packages: ModuleType) -> list[str]:
    names: list[str] = []
    for package in packages:
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            if info.name not in SKIP and not info.name.endswith(".__main__"):
                names.append(info.name)
    return sorted(names)


MODULES = all_modules(reconcilekit, arc_controllers)


@pytest.mark.parametrize("name", MODULES)
def test_all_is_true(name: str) -> None:
    """Where a module has ``__all__``, it names only what exists, nothing private, each once."""
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        return
    assert len(set(exported)) == len(exported)
    assert [n for n in exported if n.startswith("_")] == []
    assert [n for n in exported if not hasattr(module, n)] == []


@pytest.mark.parametrize(
    ("package", "modules"),
    [
        ("reconcilekit.workqueue", ["delaying", "priority", "queue", "rate_limiter", "rate_limiting", "clock"]),
        ("reconcilekit.handler", ["enqueue", "enqueue_owner", "enqueue_mapped", "eventhandler"]),
        ("reconcilekit.source", ["source"]),
        ("reconcilekit.testing", ["eventually", "fake_client", "faults"]),
    ],
)
def test_package_faces_export_what_their_modules_do(package: str, modules: list[str]) -> None:
    """Each package's ``__init__`` re-exports every public name of its public modules."""
    face = set(importlib.import_module(package).__all__)
    for module in modules:
        missing = set(importlib.import_module(f"{package}.{module}").__all__) - face
        assert missing == set(), f"{package} lacks {missing}"


def private_imports_across_packages(*roots: str) -> list[tuple[str, str]]:
    """(importer, imported) pairs where ``imported`` is private to a package ``importer`` is outside of."""
    graph = grimp.build_graph(*roots)
    offenders = []
    for imported in sorted(graph.modules):
        parts = imported.split(".")
        private_at = next(
            (i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__")), None
        )
        if private_at is None:
            continue
        owner = ".".join(parts[:private_at])
        for importer in sorted(graph.find_modules_that_directly_import(imported)):
            if importer != owner and not importer.startswith(owner + "."):
                offenders.append((importer, imported))
    return offenders


def test_private_modules_stay_in_their_package() -> None:
    """A module whose name starts with an underscore is imported only from inside its package."""
    assert private_imports_across_packages("reconcilekit", "arc_controllers") == []


def test_protected_contract_names_every_private_reconcilekit_module() -> None:
    """The import-linter contract keeping arc_controllers off reconcilekit internals lists each private module.

    import-linter cannot match "any module whose name starts with an underscore", so the contract
    names them one by one; this keeps that list from going stale when a private module is added.
    """
    config = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    contract = next(
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["name"] == "arc_controllers uses no reconcilekit internals"
    )
    graph = grimp.build_graph("reconcilekit")
    outermost_private = set()
    for module in graph.modules:
        parts = module.split(".")
        private_at = next(
            (i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__")), None
        )
        if private_at is not None:
            outermost_private.add(".".join(parts[: private_at + 1]))
    assert outermost_private == set(contract["protected_modules"])
