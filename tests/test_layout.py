"""The test trees' layout: what lets ``pytest`` at the repository root collect both suites at once."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_directory_is_a_package() -> None:
    """Each directory of tests/ and envtest/ with Python files has an ``__init__.py``.

    tests/ and envtest/ share test-file basenames (``test_ephemeralrunner.py``, ...). pytest's
    default import mode names a module after its path from the first directory upwards
    without ``__init__.py``; with every directory a package the names are
    ``tests.arc_controllers.controllers.test_ephemeralrunner`` and
    ``envtest.arc_controllers.test_ephemeralrunner``, not both ``test_ephemeralrunner``.
    Helpers are imported package-relative (``from .conftest import FakeActions``).
    """
    missing = sorted(
        str(directory.relative_to(ROOT))
        for tree in ("tests", "envtest")
        for directory in [ROOT / tree, *(ROOT / tree).rglob("*")]
        if directory.is_dir() and any(directory.glob("*.py")) and not (directory / "__init__.py").exists()
    )
    assert missing == []


def test_test_helpers_are_imported_package_relative() -> None:
    """No test module imports a sibling helper by its bare name (``from conftest import ...``).

    A bare name only resolves when pytest happens to put that directory on ``sys.path``;
    at the repository root it does not, and collection fails.
    """
    bare = []
    for tree in ("tests", "envtest"):
        for path in (ROOT / tree).rglob("*.py"):
            siblings = {p.stem for p in path.parent.glob("*.py")}
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and node.level == 0
                    else []
                )
                bare += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split(".")[0] in siblings]
    assert bare == []
