"""Privacy guarantees as value objects, with conversions to (epsilon, delta) and composition.

Every guarantee carries its neighbouring relation (``relation``, see ``privacy.relation``):
add/remove or replace-one. Compositions of one relation keep it; a composition that mixes them is
stated under replace-one, each add/remove part converted by group privacy
(``Guarantee.to_replace_one``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .conversions import (check_count, check_delta, check_positive, gdp_epsilon, pure_to_gdp, pure_to_rdp,
                          rdp_to_approx)
from .accountant import (Accountant, BasicAccountant, GDPAccountant, PLDCompositionAccountant,
                         RDPCurveAccountant)
from .pld import PLDAccountant
from .rdp import ORDERS, SAMPLINGS, subsampled_gaussian_rdp
from .relation import Relation, as_relation

REPLACE_ONE, ADD_REMOVE = Relation.REPLACE_ONE, Relation.ADD_REMOVE
SAME_CLASS = Relation.REPLACE_ONE_SAME_CLASS


class Guarantee:
    """Base class: every guarantee can state the (epsilon, delta)-DP it implies, under its
    neighbouring ``relation`` (a ``Relation``; replace-one unless stated).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import GDP, PureDP
    >>> PureDP(1.0).to_approx(1e-5).epsilon
    1.0
    >>> round(GDP(1.0).to_approx(1e-5).epsilon, 3)
    4.377
    >>> GDP(1.0).relation.value
    'replace-one'
    """

    relation: Relation
    ROUTES: ClassVar[frozenset[str]] = frozenset()

    def routes(self) -> frozenset[str]:
        """The composition routes this guarantee can take (``accountant``): ``"basic"``,
        ``"gdp"``, ``"rdp"``, ``"pld"``; by default the class's ``ROUTES``."""
        return self.ROUTES

    def known_orders(self) -> np.ndarray | None:
        """The only orders its RDP curve is known at, or None when it is known at every order."""
        return None

    def _set_relation(self) -> None:
        object.__setattr__(self, "relation", as_relation(self.relation))

    def to_replace_one(self) -> "Guarantee":
        """The guarantee under replace-one neighbours: itself, or for add/remove the group
        privacy of the two records a replacement removes and adds."""
        if self.relation is REPLACE_ONE:
            return self
        if self.relation is SAME_CLASS:
            raise ValueError(f"{self.describe()} protects only replacements within a class; it "
                             f"implies nothing for replace-one neighbours (a record may change class)")
        return self._group_of_two()

    def _group_of_two(self) -> "Guarantee":
        raise NotImplementedError

    def to_approx(self, delta: float) -> "ApproxDP":
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def as_dict(self) -> dict:
        """The guarantee's numbers, with ``"notion"`` naming its class (see ``guarantee_from_dict``)."""
        raise NotImplementedError


@dataclass(frozen=True)
class PureDP(Guarantee):
    """epsilon-differential privacy.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import PureDP
    >>> g = PureDP(0.5)
    >>> g.describe(), g.as_dict()
    ('0.5-DP (replace-one)', {'notion': 'pure', 'epsilon': 0.5, 'delta': 0.0, 'relation': 'replace-one'})
    """

    epsilon: float
    relation: Relation = REPLACE_ONE
    ROUTES: ClassVar[frozenset[str]] = frozenset({"basic", "gdp", "rdp", "pld"})

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        self._set_relation()

    def _group_of_two(self) -> "PureDP":
        return PureDP(2.0 * self.epsilon, REPLACE_ONE)

    def to_approx(self, delta: float = 0.0) -> "ApproxDP":
        return ApproxDP(self.epsilon, 0.0, self.relation)

    def to_gdp(self) -> "GDP":
        """The mu-GDP implied by epsilon-DP (``pure_to_gdp``)."""
        return GDP(pure_to_gdp(self.epsilon), self.relation)

    def to_rdp(self, orders: np.ndarray = ORDERS) -> "RDP":
        return RDP(orders, pure_to_rdp(self.epsilon, orders), self.relation)

    def add_to_pld(self, accountant: PLDAccountant, count: int) -> None:
        """Compose ``count`` runs into ``accountant`` (dominated by randomised response)."""
        accountant.compose_pure(self.epsilon, count)

    def describe(self) -> str:
        return f"{self.epsilon:.6g}-DP ({self.relation.value})"

    def as_dict(self) -> dict:
        return {"notion": "pure", "epsilon": self.epsilon, "delta": 0.0,
                "relation": self.relation.value}


@dataclass(frozen=True)
class ApproxDP(Guarantee):
    """(epsilon, delta)-differential privacy.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import ApproxDP
    >>> ApproxDP(1.0, 1e-6).describe()
    '(1, 1e-06)-DP (replace-one)'
    """

    epsilon: float
    delta: float
    relation: Relation = REPLACE_ONE
    ROUTES: ClassVar[frozenset[str]] = frozenset({"basic"})

    def __post_init__(self):
        self._set_relation()
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

    def _group_of_two(self) -> "ApproxDP":
        """Group privacy for two records: (2 epsilon, (1 + e^epsilon) delta)-DP."""
        return ApproxDP(2.0 * self.epsilon, min((1.0 + math.exp(self.epsilon)) * self.delta,
                                                math.nextafter(1.0, 0.0)), REPLACE_ONE)

    def describe(self) -> str:
        return f"({self.epsilon:.6g}, {self.delta:.3g})-DP ({self.relation.value})"

    def as_dict(self) -> dict:
        return {"notion": "approx", "epsilon": self.epsilon, "delta": self.delta,
                "relation": self.relation.value}


@dataclass(frozen=True)
class GDP(Guarantee):
    """mu-Gaussian differential privacy (Dong, Roth & Su 2022).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import GDP
    >>> round(GDP(0.5).to_approx(1e-5).epsilon, 3)
    1.993
    """

    mu: float
    relation: Relation = REPLACE_ONE
    ROUTES: ClassVar[frozenset[str]] = frozenset({"gdp", "rdp", "pld"})

    def __post_init__(self):
        object.__setattr__(self, "mu", check_positive("mu", self.mu))
        self._set_relation()

    def _group_of_two(self) -> "GDP":
        """A group of k records under mu-GDP is k mu-GDP (Dong, Roth & Su 2022, Theorem 2.14)."""
        return GDP(2.0 * self.mu, REPLACE_ONE)

    def to_approx(self, delta: float) -> ApproxDP:
        return ApproxDP(gdp_epsilon(self.mu, delta), delta, self.relation)

    def to_gdp(self) -> "GDP":
        return self

    def add_to_pld(self, accountant: PLDAccountant, count: int) -> None:
        """Compose ``count`` runs into ``accountant``: the Gaussian with sigma = 1/mu."""
        accountant.compose_gaussian(1.0 / self.mu, count)

    def to_rdp(self, orders: np.ndarray = ORDERS) -> "RDP":
        """mu-GDP implies (alpha, alpha mu^2 / 2)-RDP (the Gaussian mechanism's curve)."""
        return RDP(orders, 0.5 * np.asarray(orders) * self.mu**2, self.relation)

    def describe(self) -> str:
        return f"{self.mu:.6g}-GDP ({self.relation.value})"

    def as_dict(self) -> dict:
        return {"notion": "gdp", "mu": self.mu, "relation": self.relation.value}


@dataclass(frozen=True)
class ZCDP(Guarantee):
    """rho-zero-concentrated DP (Bun & Steinke 2016): (alpha, rho alpha)-RDP for every alpha.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import ZCDP
    >>> round(ZCDP(0.125).to_approx(1e-5).epsilon, 3)
    2.166
    """

    rho: float
    relation: Relation = REPLACE_ONE
    ROUTES: ClassVar[frozenset[str]] = frozenset({"rdp"})

    def __post_init__(self):
        object.__setattr__(self, "rho", check_positive("rho", self.rho))
        self._set_relation()

    def _group_of_two(self) -> "ZCDP":
        """A group of k records under rho-zCDP is k^2 rho-zCDP (Bun & Steinke 2016, Prop. 1.9)."""
        return ZCDP(4.0 * self.rho, REPLACE_ONE)

    def to_rdp(self, orders: np.ndarray = ORDERS) -> "RDP":
        return RDP(orders, self.rho * np.asarray(orders), self.relation)

    def to_approx(self, delta: float) -> ApproxDP:
        return self.to_rdp().to_approx(delta)

    def describe(self) -> str:
        return f"{self.rho:.6g}-zCDP ({self.relation.value})"

    def as_dict(self) -> dict:
        return {"notion": "zcdp", "rho": self.rho, "relation": self.relation.value}


@dataclass(frozen=True)
class RDP(Guarantee):
    """Rényi DP: (alpha, epsilon(alpha))-RDP for every alpha in ``orders``.

    A single (alpha, eps) pair is ``RDP([alpha], [eps])``.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import RDP
    >>> g = RDP([2.0, 8.0], [0.1, 0.5])
    >>> round(g.to_approx(1e-5).epsilon, 3)
    1.714
    """

    orders: np.ndarray = field(compare=False)
    epsilons: np.ndarray = field(compare=False)
    relation: Relation = REPLACE_ONE
    ROUTES: ClassVar[frozenset[str]] = frozenset({"rdp"})

    def __post_init__(self):
        self._set_relation()
        orders = np.atleast_1d(np.asarray(self.orders, dtype=float))
        eps = np.atleast_1d(np.asarray(self.epsilons, dtype=float))
        if orders.shape != eps.shape or orders.ndim != 1:
            raise ValueError("orders and epsilons must be 1-D arrays of the same length")
        if np.any(orders <= 1) or np.any(~np.isfinite(eps)) or np.any(eps < 0):
            raise ValueError("RDP needs orders > 1 and finite non-negative epsilons")
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "epsilons", eps)

    def to_rdp(self, orders: np.ndarray | None = None) -> "RDP":
        """This curve at ``orders`` (which must be among its own orders; all of them by default)."""
        if orders is None:
            return self
        orders = np.asarray(orders, dtype=float)
        pos = {float(a): i for i, a in enumerate(self.orders)}
        missing = [a for a in orders.tolist() if a not in pos]
        if missing:
            raise ValueError(f"this RDP curve is not known at orders {missing[:5]}")
        return RDP(orders, self.epsilons[[pos[a] for a in orders.tolist()]], self.relation)

    def known_orders(self) -> np.ndarray:
        return self.orders

    def _group_of_two(self) -> "RDP":
        known = set(self.orders.tolist())
        alphas = np.array([a for a in self.orders.tolist() if 2 * a in known and 2 * a - 1 in known])
        if not len(alphas):
            raise ValueError("this add/remove RDP curve cannot be stated for replace-one neighbours: "
                             "group privacy needs it at orders 2 alpha and 2 alpha - 1")
        return group_of_two_rdp(lambda a: self.to_rdp(a).epsilons, alphas)

    def to_approx(self, delta: float) -> ApproxDP:
        return ApproxDP(rdp_to_approx(self.orders, self.epsilons, delta)[0], delta, self.relation)

    def describe(self) -> str:
        if len(self.orders) == 1:
            return f"({self.orders[0]:.6g}, {self.epsilons[0]:.6g})-RDP ({self.relation.value})"
        return f"RDP curve on {len(self.orders)} orders ({self.relation.value})"

    def as_dict(self) -> dict:
        return {"notion": "rdp", "orders": self.orders.tolist(), "epsilons": self.epsilons.tolist(),
                "relation": self.relation.value}


def group_of_two_rdp(curve, orders: np.ndarray) -> RDP:
    """The replace-one RDP curve at ``orders`` of a mechanism whose add/remove curve is ``curve``
    (a function of an array of orders).

    Replacing a record is removing it (D -> D'') and adding another (D'' -> D'). Mironov's weak
    triangle inequality (Rényi DP, 2017, Proposition 11 with p = q = 2) gives
    D_a(P || Q) <= (a - 1/2)/(a - 1) D_2a(P || R) + D_(2a-1)(R || Q), hence
    eps'(a) = (a - 1/2)/(a - 1) eps(2a) + eps(2a - 1).
    """
    a = np.asarray(orders, dtype=float)
    return RDP(a, (a - 0.5) / (a - 1.0) * np.asarray(curve(2.0 * a)) + np.asarray(curve(2.0 * a - 1.0)),
               REPLACE_ONE)


@dataclass(frozen=True)
class SubsampledGaussian(Guarantee):
    """The guarantee of ``steps`` runs of the Gaussian mechanism with sigma = noise_multiplier *
    sensitivity, each on a random subsample (rate ``sample_rate``; 1 = full batch).

    It keeps the mechanism, not a conversion of it, so that it composes tightly: exact RDP at
    every order (``subsampled_gaussian_rdp``) and, for Poisson sampling, a privacy loss
    distribution; ``to_approx`` reports the smaller epsilon of the two (both are upper bounds).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import SubsampledGaussian
    >>> g = SubsampledGaussian(1.1, sample_rate=0.01, steps=1000)
    >>> round(g.to_approx(1e-5).epsilon, 2), g.relation.value
    (1.52, 'add-remove')
    """

    noise_multiplier: float
    sample_rate: float = 1.0
    steps: int = 1
    sampling: str = "poisson"
    relation: Relation | None = None

    def __post_init__(self):
        object.__setattr__(self, "noise_multiplier",
                           check_positive("noise_multiplier", self.noise_multiplier))
        q = float(self.sample_rate)
        if not 0 < q <= 1:
            raise ValueError(f"sample_rate must lie in (0, 1], got {self.sample_rate}")
        object.__setattr__(self, "sample_rate", q)
        object.__setattr__(self, "steps", check_count("steps", self.steps, 1))
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {SAMPLINGS}, got {self.sampling!r}")
        analysed = self.sampling_relation()
        if self.relation is None:
            object.__setattr__(self, "relation", analysed or REPLACE_ONE)
        self._set_relation()
        if analysed is not None and self.relation is not analysed:
            raise ValueError(f"{self.sampling.replace('_', ' ')} sampling at rate {q:g} is analysed "
                             f"for {analysed.value} neighbours, not {self.relation.value}")

    def sampling_relation(self) -> Relation | None:
        """The relation the subsampled accounting is proved for (None for a full batch, where
        the noise multiplier is relative to the chosen relation's sensitivity)."""
        if self.sample_rate == 1.0:
            return None
        return ADD_REMOVE if self.sampling == "poisson" else REPLACE_ONE

    def _group_of_two(self) -> Guarantee:
        """Full batch: the sum's sensitivity doubles, i.e. the noise multiplier halves (exact).
        Poisson: the weak triangle inequality on the exact RDP curve (``group_of_two_rdp``)."""
        if self.sample_rate == 1.0:
            return SubsampledGaussian(self.noise_multiplier / 2.0, 1.0, self.steps, self.sampling,
                                      REPLACE_ONE)
        return group_of_two_rdp(lambda a: self.steps * subsampled_gaussian_rdp(
            self.noise_multiplier, self.sample_rate, self.sampling, a), ORDERS)

    @property
    def has_pld(self) -> bool:
        return self.sampling == "poisson"

    def routes(self) -> frozenset[str]:
        """RDP always; GDP for a full batch; PLD for Poisson sampling."""
        return frozenset({"rdp"} | ({"gdp"} if self.sample_rate == 1.0 else set())
                         | ({"pld"} if self.has_pld else set()))

    def add_to_pld(self, accountant: PLDAccountant, count: int) -> None:
        """Compose ``count`` runs of all the steps into ``accountant``."""
        accountant.compose_gaussian(self.noise_multiplier, count * self.steps, self.sample_rate)

    def to_rdp(self, orders: np.ndarray = ORDERS) -> RDP:
        curve = subsampled_gaussian_rdp(self.noise_multiplier, self.sample_rate, self.sampling,
                                        orders)
        return RDP(orders, self.steps * curve, self.relation)

    def to_gdp(self) -> GDP:
        """Full batch only: T Gaussian steps of noise multiplier z are sqrt(T)/z-GDP."""
        if self.sample_rate != 1.0:
            raise ValueError("a subsampled Gaussian has no exact GDP equivalent")
        return GDP(math.sqrt(self.steps) / self.noise_multiplier, self.relation)

    def to_approx(self, delta: float) -> ApproxDP:
        check_delta(delta)
        if self.sample_rate == 1.0:
            return self.to_gdp().to_approx(delta)
        eps = self.to_rdp().to_approx(delta).epsilon
        if self.has_pld:
            eps = min(eps, PLDAccountant().compose_gaussian(
                self.noise_multiplier, self.steps, self.sample_rate).epsilon(delta))
        return ApproxDP(eps, delta, self.relation)

    def describe(self) -> str:
        batch = ("full batch" if self.sample_rate == 1.0 else
                 f"{self.sampling.replace('_', ' ')} sampling at rate {self.sample_rate:.4g}")
        return (f"{self.steps} Gaussian step(s), noise multiplier {self.noise_multiplier:.6g}, "
                f"{batch} ({self.relation.value})")

    def as_dict(self) -> dict:
        return {"notion": "subsampled_gaussian", "noise_multiplier": self.noise_multiplier,
                "sample_rate": self.sample_rate, "steps": self.steps, "sampling": self.sampling,
                "relation": self.relation.value}


_NOTIONS = {"pure": PureDP, "approx": ApproxDP, "gdp": GDP, "zcdp": ZCDP, "rdp": RDP,
            "subsampled_gaussian": SubsampledGaussian}


def guarantee_from_dict(d: dict) -> Guarantee:
    """The guarantee ``as_dict`` describes (a dict without ``relation``: the class's default).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import GDP, guarantee_from_dict
    >>> guarantee_from_dict(GDP(0.5).as_dict()) == GDP(0.5)
    True
    """
    d = dict(d)
    cls = _NOTIONS.get(d.pop("notion", None))
    if cls is None:
        raise ValueError(f"unknown guarantee {d!r}")
    if cls is PureDP:
        d.pop("delta", None)
    return cls(**d)


def common_relation(guarantees: list[Guarantee]) -> Relation:
    """The relation a composition of ``guarantees`` is stated under: theirs when they share it,
    else replace-one (which every add/remove guarantee implies by group privacy).

    Raises
    ------
    ValueError
        When replace-one-same-class guarantees are mixed with others: no sound conversion states
        the mix under one relation without weakening the others' meaning (``privacy.relation``).
    """
    relations = {g.relation for g in guarantees}
    if len(relations) == 1:
        return relations.pop()
    if SAME_CLASS in relations:
        raise ValueError(
            "cannot compose replace-one-same-class guarantees (class sizes declared public) with "
            f"guarantees under {sorted(r.value for r in relations - {SAME_CLASS})}: keep such "
            "releases on a ledger of their own")
    return REPLACE_ONE


def one_relation(guarantees: list[Guarantee]) -> tuple[list[Guarantee], Relation]:
    """The guarantees under their ``common_relation``, and that relation: unchanged when they
    share one, else each add/remove part converted (``to_replace_one``)."""
    relation = common_relation(guarantees)
    if all(g.relation is relation for g in guarantees):
        return list(guarantees), relation
    return [g.to_replace_one() for g in guarantees], relation


def _accountant(cls: type[Accountant], guarantees: list[Guarantee]) -> Accountant:
    """An accountant of class ``cls`` with ``guarantees`` composed, under their common relation
    (``one_relation``)."""
    parts, relation = one_relation(guarantees)
    return cls(relation).compose_all(parts)


def compose_pure(guarantees: list[PureDP]) -> PureDP:
    """Basic composition: epsilons add (``BasicAccountant``).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import PureDP, compose_pure
    >>> compose_pure([PureDP(0.25), PureDP(0.5)]).epsilon
    0.75
    """
    acc = _accountant(BasicAccountant, guarantees)
    return PureDP(acc.epsilon(0.0), acc.relation)


def compose_gdp(guarantees: list[Guarantee]) -> GDP:
    """mu-GDP composes as the root sum of squares (``GDPAccountant``); pure parts and full-batch
    Gaussians are converted.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import GDP, compose_gdp
    >>> round(compose_gdp([GDP(0.3), GDP(0.4)]).mu, 6)   # sqrt(0.3^2 + 0.4^2)
    0.5
    """
    acc = _accountant(GDPAccountant, guarantees)
    return GDP(acc.mu, acc.relation)


def compose_rdp(guarantees: list[Guarantee]) -> RDP:
    """RDP composes by adding curves order by order (``RDPCurveAccountant``).

    Curves known only at some orders (``RDP`` values) restrict the composition to the orders they
    share; every other guarantee is evaluated there.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import RDP, compose_rdp
    >>> compose_rdp([RDP([2.0], [0.1]), RDP([2.0], [0.2])]).epsilons.round(6)
    array([0.3])
    """
    acc = _accountant(RDPCurveAccountant, guarantees)
    return RDP(acc.orders, acc.curve(), acc.relation)


def compose_pld(guarantees: list[Guarantee], delta: float) -> float:
    """Epsilon at ``delta`` of the composition by privacy loss distributions
    (``PLDCompositionAccountant``). The parts must share one relation (``compose`` converts them
    first).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import GDP, PureDP, compose_pld
    >>> round(compose_pld([PureDP(0.5), GDP(0.5)], 1e-6), 2)
    2.7
    """
    return PLDCompositionAccountant().compose_all(guarantees).epsilon(delta)


TIGHT_ACCOUNTANTS: tuple[type[Accountant], ...] = (RDPCurveAccountant, GDPAccountant,
                                                   PLDCompositionAccountant)


def _tight_epsilon(cls: type[Accountant], parts: list[Guarantee], relation: Relation,
                   delta: float) -> float | None:
    """Epsilon at ``delta`` of ``parts`` composed by a ``cls`` accountant, or None when it does not
    take every part (or refuses one, e.g. RDP curves without a common order)."""
    acc = cls(relation)
    if not all(acc.supports(g) for g in parts):
        return None
    try:
        acc.compose_all(parts)
    except ValueError:
        return None
    return acc.epsilon(delta)


def _shares_epsilon(parts: list[Guarantee], delta: float) -> float:
    """Basic composition of each part stated at an equal share of ``delta``."""
    share = delta / len(parts)
    return math.fsum(g.to_approx(share).epsilon for g in parts)


def compose(guarantees: list[Guarantee], delta: float) -> ApproxDP:
    """The tightest (epsilon, delta)-DP implied by composing heterogeneous guarantees, under their
    common relation (replace-one when they mix relations: ``one_relation``).

    The parts only basic composition takes (ApproxDP) are composed first (``BasicAccountant``:
    their deltas are spent first). If the rest is pure, it joins them. Otherwise the rest is composed by every
    accountant of ``TIGHT_ACCOUNTANTS`` that supports all of it (RDP curves; GDP; privacy loss
    distributions) and by basic composition of each part at an equal share of the remaining
    delta, and the smallest epsilon is reported.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import GDP, PureDP, compose
    >>> g = compose([PureDP(0.5), GDP(0.5), GDP(0.5)], delta=1e-6)
    >>> round(g.epsilon, 3), g.delta
    (3.736, 1e-06)
    """
    if not guarantees:
        raise ValueError("nothing to compose")
    guarantees, relation = one_relation(guarantees)
    approx = [g for g in guarantees if g.routes() <= {"basic"}]
    rest = [g for g in guarantees if not g.routes() <= {"basic"}]
    basic = BasicAccountant(relation).compose_all(approx)
    eps0, spent = basic.total
    delta_left = delta - spent
    if not rest:
        return ApproxDP(basic.epsilon(delta), delta - delta_left, relation)
    if all(basic.supports(g) for g in rest):
        return ApproxDP(eps0 + compose_pure(rest).epsilon, max(delta - delta_left, 0.0), relation)
    check_delta(delta_left)
    candidates = [_tight_epsilon(cls, rest, relation, delta_left) for cls in TIGHT_ACCOUNTANTS]
    candidates.append(_shares_epsilon(rest, delta_left))
    return ApproxDP(eps0 + min(c for c in candidates if c is not None), delta, relation)
