"""Privacy guarantees as value objects, with conversions to (epsilon, delta) and composition."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .conversions import (check_delta, check_positive, gdp_epsilon, pure_to_gdp, pure_to_rdp,
                          rdp_to_approx)
from .rdp import ORDERS


class Guarantee:
    """Base class: every guarantee can state the (epsilon, delta)-DP it implies."""

    def to_approx(self, delta: float) -> "ApproxDP":
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class PureDP(Guarantee):
    """epsilon-differential privacy."""

    epsilon: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))

    def to_approx(self, delta: float = 0.0) -> "ApproxDP":
        return ApproxDP(self.epsilon, 0.0)

    def to_gdp(self) -> "GDP":
        """The mu-GDP implied by epsilon-DP (``pure_to_gdp``)."""
        return GDP(pure_to_gdp(self.epsilon))

    def to_rdp(self, orders: np.ndarray = ORDERS) -> "RDP":
        return RDP(orders, pure_to_rdp(self.epsilon, orders))

    def describe(self) -> str:
        return f"{self.epsilon:.6g}-DP"


@dataclass(frozen=True)
class ApproxDP(Guarantee):
    """(epsilon, delta)-differential privacy."""

    epsilon: float
    delta: float

    def __post_init__(self):
        eps = float(self.epsilon)
        if not (math.isfinite(eps) and eps >= 0):
            raise ValueError(f"epsilon must be finite and non-negative, got {eps}")
        delta = float(self.delta)
        if not 0 <= delta < 1:
            raise ValueError(f"delta must lie in [0, 1), got {delta}")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", delta)

    def to_approx(self, delta: float | None = None) -> "ApproxDP":
        if delta is not None and delta < self.delta:
            raise ValueError(f"an ({self.epsilon}, {self.delta})-DP guarantee cannot be stated at "
                             f"the smaller delta {delta}")
        return self

    def describe(self) -> str:
        return f"({self.epsilon:.6g}, {self.delta:.3g})-DP"


@dataclass(frozen=True)
class GDP(Guarantee):
    """mu-Gaussian differential privacy (Dong, Roth & Su 2022)."""

    mu: float

    def __post_init__(self):
        object.__setattr__(self, "mu", check_positive("mu", self.mu))

    def to_approx(self, delta: float) -> ApproxDP:
        return ApproxDP(gdp_epsilon(self.mu, delta), delta)

    def to_rdp(self, orders: np.ndarray = ORDERS) -> "RDP":
        """mu-GDP implies (alpha, alpha mu^2 / 2)-RDP (the Gaussian mechanism's curve)."""
        return RDP(orders, 0.5 * np.asarray(orders) * self.mu**2)

    def describe(self) -> str:
        return f"{self.mu:.6g}-GDP"


@dataclass(frozen=True)
class ZCDP(Guarantee):
    """rho-zero-concentrated DP (Bun & Steinke 2016): (alpha, rho alpha)-RDP for every alpha."""

    rho: float

    def __post_init__(self):
        object.__setattr__(self, "rho", check_positive("rho", self.rho))

    def to_rdp(self, orders: np.ndarray = ORDERS) -> "RDP":
        return RDP(orders, self.rho * np.asarray(orders))

    def to_approx(self, delta: float) -> ApproxDP:
        return self.to_rdp().to_approx(delta)

    def describe(self) -> str:
        return f"{self.rho:.6g}-zCDP"


@dataclass(frozen=True)
class RDP(Guarantee):
    """Rényi DP: (alpha, epsilon(alpha))-RDP for every alpha in ``orders``.

    A single (alpha, eps) pair is ``RDP([alpha], [eps])``.
    """

    orders: np.ndarray = field(compare=False)
    epsilons: np.ndarray = field(compare=False)

    def __post_init__(self):
        orders = np.atleast_1d(np.asarray(self.orders, dtype=float))
        eps = np.atleast_1d(np.asarray(self.epsilons, dtype=float))
        if orders.shape != eps.shape or orders.ndim != 1:
            raise ValueError("orders and epsilons must be 1-D arrays of the same length")
        if np.any(orders <= 1) or np.any(~np.isfinite(eps)) or np.any(eps < 0):
            raise ValueError("RDP needs orders > 1 and finite non-negative epsilons")
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "epsilons", eps)

    def to_rdp(self, orders: np.ndarray | None = None) -> "RDP":
        return self

    def to_approx(self, delta: float) -> ApproxDP:
        return ApproxDP(rdp_to_approx(self.orders, self.epsilons, delta)[0], delta)

    def describe(self) -> str:
        if len(self.orders) == 1:
            return f"({self.orders[0]:.6g}, {self.epsilons[0]:.6g})-RDP"
        return f"RDP curve on {len(self.orders)} orders"


def compose_pure(guarantees: list[PureDP]) -> PureDP:
    """Basic composition: epsilons add."""
    return PureDP(math.fsum(g.epsilon for g in guarantees))


def compose_gdp(guarantees: list[GDP]) -> GDP:
    """mu-GDP composes as the root sum of squares (Dong, Roth & Su 2022, Cor. 3.3)."""
    return GDP(math.sqrt(math.fsum(g.mu**2 for g in guarantees)))


def compose_rdp(guarantees: list[RDP]) -> RDP:
    """RDP composes by adding curves order by order (Mironov 2017, Prop. 1)."""
    orders = guarantees[0].orders
    for g in guarantees[1:]:
        if g.orders.shape != orders.shape or not np.allclose(g.orders, orders):
            raise ValueError("RDP curves must share their orders to be composed")
    return RDP(orders, np.sum([g.epsilons for g in guarantees], axis=0))


def compose(guarantees: list[Guarantee], delta: float) -> ApproxDP:
    """The tightest (epsilon, delta)-DP implied by composing heterogeneous guarantees.

    ApproxDP parts are composed by basic composition (their deltas are spent first); the rest is
    composed along every valid route and the smallest epsilon is reported:
    (i) all as RDP curves on the common order grid (pure and GDP converted exactly as above);
    (ii) if only pure and GDP parts: as GDP (pure eps -> mu via ``pure_to_gdp``);
    (iii) basic composition of each part stated at an equal share of the remaining delta.
    """
    if not guarantees:
        raise ValueError("nothing to compose")
    approx = [g for g in guarantees if isinstance(g, ApproxDP)]
    rest = [g for g in guarantees if not isinstance(g, ApproxDP)]
    eps0 = math.fsum(g.epsilon for g in approx)
    delta_left = delta - math.fsum(g.delta for g in approx)
    if not rest:
        if delta_left < 0:
            raise ValueError(f"the parts already spend delta {delta - delta_left:g} > {delta:g}")
        return ApproxDP(eps0, delta - delta_left)
    if all(isinstance(g, PureDP) for g in rest):
        return ApproxDP(eps0 + compose_pure(rest).epsilon, max(delta - delta_left, 0.0))
    check_delta(delta_left)
    candidates = [compose_rdp([g.to_rdp() for g in rest]).to_approx(delta_left).epsilon]
    if all(isinstance(g, (PureDP, GDP)) for g in rest):
        gdps = [g.to_gdp() if isinstance(g, PureDP) else g for g in rest]
        candidates.append(compose_gdp(gdps).to_approx(delta_left).epsilon)
    share = delta_left / len(rest)
    candidates.append(math.fsum(g.to_approx(share).epsilon for g in rest))
    return ApproxDP(eps0 + min(candidates), delta)
