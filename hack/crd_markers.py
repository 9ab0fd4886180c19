"""Print the schema markers of a folder of CRDs as TSV: kind, path, key, JSON value.

Every schema key but the structure (``properties``, ``items``, ``additionalProperties``)
and the prose (``description``): ``type``, ``format``, ``default``, ``required`` (as
written), ``x-kubernetes-*``, limits. Paths are written as in
``arc-crd-field-paths-2026-06.tsv`` (``.spec.template``, ``[]`` items, ``{}`` map values).
``tests/arc_controllers/api/test_crd_rules.py`` compares ours with upstream's through it.

Usage: python hack/crd_markers.py DIR > markers.tsv   (DIR holds actions.github.com_*.yaml)

Python only: a developer tool.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

_STRUCTURE = frozenset({"properties", "items", "additionalProperties", "description"})


def markers(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, str, str]]:
    """(path, key, JSON value) of every marker in ``schema`` and below it, depth first."""
    for key in sorted(schema):
        if key not in _STRUCTURE:
            yield path or ".", key, json.dumps(schema[key], sort_keys=True, separators=(",", ":"))
    for name, sub in sorted((schema.get("properties") or {}).items()):
        yield from markers(sub, f"{path}.{name}")
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(schema.get(key), dict):
            yield from markers(schema[key], path + suffix)


def crd_markers(text: str) -> Iterator[tuple[str, str, str, str]]:
    """(kind, path, key, value) of one CRD file's first version."""
    crd = yaml.safe_load(text)
    kind = crd["spec"]["names"]["kind"]
    for path, key, value in markers(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]):
        yield kind, path, key, value


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    for file in sorted(Path(argv[0]).glob("actions.github.com_*.yaml")):
        for row in crd_markers(file.read_text("utf-8")):
            print("\t".join(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
