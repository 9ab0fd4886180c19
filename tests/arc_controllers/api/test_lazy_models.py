"""`arc_controllers.api.v1alpha1` loads its models on first use; its name map must stay in step with the modules.

The package lists each model's module by hand (importing the modules to learn their names
would load pydantic, which the listener must not). This test is what keeps the two lists equal.
"""

from __future__ import annotations

import importlib

import arc_controllers.api.v1alpha1 as api


def test_every_lazy_name_resolves_to_its_module() -> None:
    for name, module in api._LAZY.items():
        assert getattr(importlib.import_module(f"arc_controllers.api.v1alpha1.{module}"), name) is getattr(api, name)


def test_every_model_a_module_exports_is_in_the_lazy_map() -> None:
    for module in set(api._LAZY.values()) - {"_base"}:
        exported = set(importlib.import_module(f"arc_controllers.api.v1alpha1.{module}").__all__)
        mapped = {name for name, where in api._LAZY.items() if where == module}
        assert exported <= mapped | set(api.__all__) - set(api._LAZY), (module, exported - mapped)
