"""Optional capabilities of a manifold, and how mechanisms ask for them.

A manifold implements a small required core (``Manifold``'s abstract methods). Everything else
is an optional capability: the base class declares it with ``@optional``, so that a manifold
which does not provide it raises ``MissingCapability`` naming itself and the method, and
``has(manifold, name)`` is False. Mechanisms and estimators call ``require(manifold, names, by=)``
before any budget is reserved, never ``isinstance`` on a manifold class.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

#: Capabilities that the base class derives from others (``dist`` is |Log_p q|): present when
#: overridden or when every capability they are derived from is present.
DERIVED = {"dist": ("log",), "log_or_nan": ("log",), "mean_log_and_value": ("log",),
           "mean_exp_adjoints": ("exp_adjoints",), "mean_residual_adjoints": ("exp_adjoints", "log")}


class MissingCapability(NotImplementedError):
    """A manifold lacks an optional capability that a mechanism or estimator needs."""


def optional(method: Callable) -> Callable:
    """Declare ``method`` (a function, or a property's getter) as an optional capability: the
    base class's version raises ``MissingCapability`` naming the manifold and the method."""
    @functools.wraps(method)
    def missing(self, *args: Any, **kwargs: Any) -> Any:
        raise MissingCapability(f"{self!r} provides no '{method.__name__}' (an optional capability "
                                f"of geodp's manifolds, see docs/extending.md)")
    missing.optional_capability = True
    return missing


def _declared(cls: type, name: str) -> Any:
    attr = getattr(cls, name, None)
    return attr.fget if isinstance(attr, property) else attr


def has(manifold: Any, name: str) -> bool:
    """Whether ``manifold`` provides the capability ``name`` (a method or property).

    A manifold whose capabilities depend on its instance (``Product``: those of every factor)
    defines ``provides(name) -> bool``, consulted after the class defines the method.
    """
    from .base import Manifold

    attr = _declared(type(manifold), name)
    if attr is None or getattr(attr, "optional_capability", False):
        return False
    if name in DERIVED and attr is _declared(Manifold, name):
        return all(has(manifold, dep) for dep in DERIVED[name])
    provides = getattr(manifold, "provides", None)
    return provides is None or bool(provides(name))


def require(manifold: Any, names: tuple[str, ...] | list[str], *, by: str) -> None:
    """Raise ``MissingCapability`` unless ``manifold`` provides every capability in ``names``;
    the message says who needs them (``by``, e.g. "the Riemannian Laplace mechanism")."""
    missing = [n for n in names if not has(manifold, n)]
    if missing:
        raise MissingCapability(f"{by} needs {', '.join(repr(n) for n in missing)} of the manifold, "
                                f"which {manifold!r} does not provide")
