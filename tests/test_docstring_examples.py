"""The examples in docstrings run and print what they say (every module of geodp; a module whose
examples need an optional extra is skipped when the extra is missing)."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import geodp

# modules whose examples call an optional dependency, and the module that dependency provides
NEEDS = {"geodp.estimators": "sklearn", "geodp.chunked": "dask", "geodp.learn.jax_grad": "jax"}
# every public module documents its names with at least one example
PUBLIC = ["geodp.manifolds.base", "geodp.mechanisms.laplace", "geodp.privacy.guarantees",
          "geodp.statistics.frechet", "geodp.learn.frechet", "geodp.estimators", "geodp.datasets",
          "geodp.audit", "geodp.chunked"]
MODULES = sorted(m.name for m in pkgutil.walk_packages(geodp.__path__, "geodp.")
                 if not m.name.startswith("geodp.experiments") and m.name != "geodp.cli")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    extra = NEEDS.get(name)
    if extra and importlib.util.find_spec(extra) is None:
        pytest.skip(f"{name}'s examples need {extra}")
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if name in PUBLIC:
        assert result.attempted > 0


def test_every_public_function_and_class_has_an_example():
    """Each name in a public module's ``__all__`` (exceptions and warnings aside) has an
    Examples section in its docstring."""
    missing = []
    for module in ["geodp.manifolds", "geodp.mechanisms", "geodp.privacy", "geodp.statistics",
                   "geodp.learn", "geodp.estimators", "geodp.datasets", "geodp.audit", "geodp.chunked"]:
        mod = importlib.import_module(module)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not callable(obj) or (isinstance(obj, type) and issubclass(obj, BaseException)):
                continue
            if "Examples\n" not in (obj.__doc__ or ""):
                missing.append(f"{module}.{name}")
    assert not missing, f"no Examples section: {missing}"
