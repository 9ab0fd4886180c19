"""The public surface of both packages: truthful ``__all__`` lists and private modules kept private."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
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


# The front door: reconcilekit/__init__.py (controller-runtime's alias.go).

FRONT_DOOR = dict(reconcilekit._EXPORTS)

ON_THEIR_MODULE = {
    "reconcilekit.reconcile": set(),
    "reconcilekit.builder": {"KindLike"},  # an annotation helper, not a thing one builds with
    "reconcilekit.manager": {"ControllerManager", "HealthCheck", "LeaderElectionLostError", "LeaderElectionRunnable"},
    "reconcilekit.config": set(),
    "reconcilekit.client": {  # the REST machinery, subresource roles and the other patch kinds
        "DEFAULT_TIMEOUT",
        "GroupVersionResource",
        "ObjectList",
        "RESTMapper",
        "RESTMapping",
        "RequestCounts",
        "RequestKey",
        "RestClient",
        "StatusClient",
        "SubResourceClient",
        "SubResourceClientConstructor",
        "SubResourceRestClient",
        "TypedClient",
        "WatchEvent",
        "WatchEventType",
        "WithWatch",
        "Writer",
        "apply",
        "json_patch",
        "json_patch_from",
        "merge",
        "object_key_from_object",
        "raw_patch",
        "strategic_merge_from",
    },
    "reconcilekit.retry": {"Backoff", "DEFAULT_BACKOFF", "jitter", "on_error"},
    "reconcilekit.controllerutil": {  # owner-reference inspection and removal, the equality the helpers use
        "AlreadyOwnedError",
        "MutateFn",
        "has_controller_reference",
        "has_owner_reference",
        "remove_controller_reference",
        "remove_owner_reference",
        "semantic_equal",
    },
    "reconcilekit.errors": {  # the rarer statuses: reconcilers mostly meet 404, 409 and "already exists"
        "BadRequestError",
        "ForbiddenError",
        "ForbiddenRule",
        "GoneError",
        "InternalError",
        "InvalidError",
        "KNOWN_REASONS",
        "MethodNotAllowedError",
        "NoKindMatchError",
        "ReconcileKitError",
        "ServerTimeoutError",
        "TooManyRequestsError",
        "TransportError",
        "UnauthorizedError",
        "forbidden_rule",
        "from_status",
        "is_bad_request",
        "is_forbidden",
        "is_gone",
        "is_internal_error",
        "is_invalid",
        "is_resource_expired",
        "is_server_timeout",
        "is_timeout",
        "is_too_many_requests",
        "is_unauthorized",
        "status_reason",
    },
    # Funcs is also handler.Funcs; the combinators read better as predicate.and_(...)
    "reconcilekit.predicate": {"Funcs", "and_", "label_selector_predicate", "new_predicate_funcs", "not_", "or_"},
    "reconcilekit.handler": {"Funcs", "MapFunc", "RequestQueue", "request_for"},  # Funcs is also predicate.Funcs
    "reconcilekit.healthz": {"CONTENT_TYPE", "Checker", "add_health_routes"},  # the manager serves the routes
}
"""Public names of the front door's modules left there on purpose, with why."""


def test_front_door_all_is_what_it_exports() -> None:
    """``reconcilekit.__all__`` is sorted, unique and exactly the names taken from the listed modules."""
    names = [name for names in FRONT_DOOR.values() for name in names]
    assert len(names) == len(set(names))
    assert sorted(reconcilekit.__all__, key=lambda n: (not n.isupper(), n)) == reconcilekit.__all__
    assert set(reconcilekit.__all__) == set(names)


@pytest.mark.parametrize(("module", "names"), sorted(FRONT_DOOR.items()))
def test_front_door_names_are_their_modules_objects(module: str, names: tuple[str, ...]) -> None:
    """Each top-level name is the very object its public module exports."""
    source = importlib.import_module(module)
    for name in names:
        assert name in source.__all__
        assert getattr(reconcilekit, name) is getattr(source, name)


@pytest.mark.parametrize("module", sorted(FRONT_DOOR))
def test_front_door_leaves_out_only_what_it_means_to(module: str) -> None:
    """Every public name of a front-door module is at the top or left out on purpose (``ON_THEIR_MODULE``)."""
    public = set(importlib.import_module(module).__all__)
    at_top = set(FRONT_DOOR[module])
    assert public - at_top - ON_THEIR_MODULE[module] == set()
    assert ON_THEIR_MODULE[module] <= public - at_top  # the list of exceptions stays true
    assert set(ON_THEIR_MODULE) == set(FRONT_DOOR)


def test_front_door_type_checking_imports_match_the_runtime_table() -> None:
    """The ``if TYPE_CHECKING:`` imports mypy reads name the same module for each name as ``_EXPORTS``."""
    tree = ast.parse(Path(reconcilekit.__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    imported = {
        alias.name: node.module for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    assert imported == reconcilekit._MODULE_OF


def _attribute_docstring(module: ModuleType, name: str) -> str | None:
    """The string literal right after ``name = ...`` in ``module``'s source, following re-exports."""
    tree = ast.parse(inspect.getsource(module))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            assert node.module is not None
            return _attribute_docstring(importlib.import_module(node.module), name)
    for statement, following in zip(tree.body, tree.body[1:]):
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
                return str(following.value.value)
            return None
    return None


@pytest.mark.parametrize("name", reconcilekit.__all__)
def test_every_front_door_name_is_documented(name: str) -> None:
    """Classes and functions carry their own docstring; constants and aliases an attribute docstring."""
    value = getattr(reconcilekit, name)
    if inspect.isclass(value) or inspect.isfunction(value):
        doc = value.__dict__.get("__doc__") if inspect.isclass(value) else value.__doc__
    else:
        doc = _attribute_docstring(importlib.import_module(reconcilekit._MODULE_OF[name]), name)
    assert (doc or "").strip(), f"reconcilekit.{name} has no docstring"


def test_importing_reconcilekit_loads_nothing_else() -> None:
    """``import reconcilekit`` loads no submodule and no dependency; a name loads on first use."""
    probe = (
        "import sys, reconcilekit\n"
        "before = sorted(m for m in sys.modules if m.startswith(('reconcilekit.', 'aiohttp', 'kubernetes_asyncio')))\n"
        "reconcilekit.Request\n"
        "print(before, 'reconcilekit.reconcile' in sys.modules, 'reconcilekit.manager' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "True", "False"]


def test_unknown_top_level_name_is_an_attribute_error() -> None:
    """A name not at the front door raises ``AttributeError`` naming it, as for any module."""
    with pytest.raises(AttributeError, match="'WithWatch'"):
        _ = reconcilekit.WithWatch  # type: ignore[attr-defined]
    assert "Request" in dir(reconcilekit)


def test_no_reconcilekit_module_imports_the_front_door() -> None:
    """Inside the library, modules import from public modules, never from ``reconcilekit`` itself."""
    graph = grimp.build_graph("reconcilekit")
    assert graph.find_modules_that_directly_import("reconcilekit") == set()
