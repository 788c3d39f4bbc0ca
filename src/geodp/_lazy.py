"""Package attributes loaded on first use (PEP 562), so that importing a package (and
``geodp --help``) does not pull in NumPy and SciPy before anything is used."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any


def lazy_attributes(package: str, namespace: dict[str, Any], origins: dict[str, str],
                    submodules: Iterable[str] = ()) -> tuple[Callable[[str], Any],
                                                             Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package or module ``package`` (whose globals are
    ``namespace``).

    ``origins`` maps a public name to the module (``".base"``, relative to a package, or absolute)
    that defines it; in a package, any other name that is a submodule (``submodules`` lists those
    ``dir`` shows) is imported and returned. Each value is stored in ``namespace`` on first use, so later lookups are plain."""

    def __getattr__(name: str) -> Any:
        if name in origins:
            value = getattr(importlib.import_module(origins[name], package), name)
        elif "__path__" not in namespace or name.startswith("__"):  # a module, or a dunder probe
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        else:
            try:
                value = importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(origins) | set(submodules))

    return __getattr__, __dir__
