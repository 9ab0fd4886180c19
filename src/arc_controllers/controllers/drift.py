"""Semantic equality for the runner controllers' drift checks: nil, absent and empty are the same.

A persisted object loses empty lists and maps on the round trip through the API server
(Go's ``omitempty``), so comparing it strictly with a freshly built one reports drift
forever. Every drift check of the runner controllers goes through `semantic_equal`, the
types package's port of ``equality.Semantic.DeepEqual``.

Python only: a re-export, so the controllers name one place for their equality.
"""

from __future__ import annotations

from arc_controllers.api.v1alpha1.equality import semantic_equal

__all__ = ["semantic_equal"]
