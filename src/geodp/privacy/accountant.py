"""One accountant interface over the composition routes of ``guarantees``.

An ``Accountant`` composes guarantees along one route and reports (epsilon, delta), in the manner
of dp-accounting's ``PrivacyAccountant``: ``supports``, ``compose``, ``epsilon``, ``delta``. The
route is named by ``Accountant.route``; a guarantee states the routes it can take
(``Guarantee.routes``), so ``supports`` asks the guarantee rather than testing its type:

- ``"basic"``: stated as (epsilon, delta)-DP without a delta to choose (``to_approx()``);
- ``"gdp"``: stated as mu-GDP (``to_gdp()``);
- ``"rdp"``: stated as an RDP curve (``to_rdp(orders)``, known at ``known_orders()``);
- ``"pld"``: added to a ``PLDAccountant`` as privacy loss distributions (``add_to_pld``).

Every part composed by one accountant must share its neighbouring ``relation``; a part of
another relation is refused (state it for replace-one first: ``Guarantee.to_replace_one``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from .conversions import check_count, gdp_delta, gdp_epsilon, rdp_to_approx
from .pld import PLDAccountant
from .rdp import ORDERS
from .relation import Relation, as_relation

if TYPE_CHECKING:
    from .guarantees import Guarantee


class Accountant(ABC):
    """Composes guarantees along one route, under one neighbouring relation.

    Parameters
    ----------
    relation : Relation or str, optional
        The neighbouring relation of every part; by default that of the first part composed.

    Notes
    -----
    An accountant with nothing composed is (0, 0)-DP.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import GDP, GDPAccountant
    >>> acc = GDPAccountant().compose(GDP(0.5), count=4)
    >>> round(acc.epsilon(1e-5), 3), acc.supports(GDP(1.0))
    (4.377, True)
    """

    route: ClassVar[str]

    def __init__(self, relation: Relation | str | None = None):
        self.relation = None if relation is None else as_relation(relation)
        self.parts = 0

    def supports(self, guarantee: "Guarantee") -> bool:
        """Whether ``guarantee`` can be composed along this accountant's route."""
        return self.route in guarantee.routes()

    def compose(self, guarantee: "Guarantee", count: int = 1) -> "Accountant":
        """Compose ``count`` runs of ``guarantee``; returns self (chainable).

        Raises
        ------
        ValueError
            If the route does not take ``guarantee``, or its relation is not the accountant's.
        """
        if not self.supports(guarantee):
            raise ValueError(f"{type(self).__name__} cannot compose {guarantee.describe()}: it "
                             f"takes the routes {sorted(guarantee.routes())}, not {self.route!r}")
        count = check_count("count", count)
        self._check_relation(guarantee)
        if count:
            self._compose(guarantee, count)
            self.parts += count
        return self

    def compose_all(self, guarantees: list["Guarantee"]) -> "Accountant":
        """Compose each of ``guarantees`` once; returns self."""
        for g in guarantees:
            self.compose(g)
        return self

    def _check_relation(self, guarantee: "Guarantee") -> None:
        if self.relation is None:
            self.relation = guarantee.relation
        elif guarantee.relation is not self.relation:
            raise ValueError(f"{guarantee.describe()} is not under this accountant's "
                             f"{self.relation.value} relation: compose guarantee.to_replace_one() "
                             f"under replace-one instead")

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon (an upper bound) such that the composition is (epsilon, delta)-DP."""
        return self._epsilon(delta) if self.parts else 0.0

    def delta(self, epsilon: float) -> float:
        """Smallest delta (an upper bound) such that the composition is (epsilon, delta)-DP."""
        return self._delta(epsilon) if self.parts else 0.0

    @abstractmethod
    def _compose(self, guarantee: "Guarantee", count: int) -> None:
        """Record ``count`` runs of a supported ``guarantee`` of the accountant's relation."""

    @abstractmethod
    def _epsilon(self, delta: float) -> float:
        """``epsilon`` once something is composed."""

    @abstractmethod
    def _delta(self, epsilon: float) -> float:
        """``delta`` once something is composed."""


class BasicAccountant(Accountant):
    """Basic composition of pure and (epsilon, delta) guarantees: epsilons and deltas add.

    ``epsilon(delta)`` raises a ValueError when ``delta`` is below the summed delta, and
    ``delta(epsilon)`` when ``epsilon`` is below the summed epsilon: basic composition states
    one point only.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import BasicAccountant, PureDP
    >>> BasicAccountant().compose(PureDP(0.1), count=10).epsilon(0.0)
    1.0
    """

    route = "basic"

    def __init__(self, relation: Relation | str | None = None):
        super().__init__(relation)
        self._epsilons: list[float] = []
        self._deltas: list[float] = []

    def _compose(self, guarantee: "Guarantee", count: int) -> None:
        approx = guarantee.to_approx()
        self._epsilons.append(count * approx.epsilon)
        self._deltas.append(count * approx.delta)

    @property
    def total(self) -> tuple[float, float]:
        """The summed (epsilon, delta)."""
        return math.fsum(self._epsilons), math.fsum(self._deltas)

    def _epsilon(self, delta: float) -> float:
        epsilon, spent = self.total
        if delta < spent:
            raise ValueError(f"the parts already spend delta {spent:g} > {delta:g}")
        return epsilon

    def _delta(self, epsilon: float) -> float:
        total, delta = self.total
        if epsilon < total:
            raise ValueError(f"basic composition states no delta below epsilon {total:g}")
        return delta


class GDPAccountant(Accountant):
    """mu-GDP composition: mu is the root sum of squares (Dong, Roth & Su 2022, Cor. 3.3).

    Takes pure epsilon-DP (via ``pure_to_gdp``), mu-GDP and full-batch Gaussians.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import GDP, GDPAccountant
    >>> round(GDPAccountant().compose(GDP(0.5), count=20).epsilon(1e-5), 3)   # sqrt(20) * 0.5-GDP
    11.48
    """

    route = "gdp"

    def __init__(self, relation: Relation | str | None = None):
        super().__init__(relation)
        self._squares: list[float] = []

    def _compose(self, guarantee: "Guarantee", count: int) -> None:
        self._squares.append(count * guarantee.to_gdp().mu ** 2)

    @property
    def mu(self) -> float:
        """The composition's mu."""
        return math.sqrt(math.fsum(self._squares))

    def _epsilon(self, delta: float) -> float:
        return gdp_epsilon(self.mu, delta)

    def _delta(self, epsilon: float) -> float:
        return gdp_delta(self.mu, epsilon)


class RDPCurveAccountant(Accountant):
    """RDP composition: curves add order by order (Mironov 2017, Prop. 1).

    Curves known only at some orders (``Guarantee.known_orders``) restrict the composition to
    the orders they share (``ORDERS`` when every part is known everywhere); composing one that
    shares none with the earlier ones raises a ValueError.

    Parameters
    ----------
    relation : Relation or str, optional
        As for ``Accountant``.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import RDPCurveAccountant, ZCDP
    >>> round(RDPCurveAccountant().compose(ZCDP(0.01), count=10).epsilon(1e-5), 3)
    1.914
    """

    route = "rdp"

    def __init__(self, relation: Relation | str | None = None):
        super().__init__(relation)
        self._parts: list[tuple["Guarantee", int]] = []
        self._common: set[float] | None = None

    def _compose(self, guarantee: "Guarantee", count: int) -> None:
        known = guarantee.known_orders()
        if known is not None:
            common = set(known.tolist()) if self._common is None else self._common & set(known.tolist())
            if not common:
                raise ValueError("RDP curves must share at least one order to be composed")
            self._common = common
        self._parts.append((guarantee, count))

    @property
    def orders(self) -> np.ndarray:
        """The orders the composed curve is known at."""
        return ORDERS if self._common is None else np.array(sorted(self._common))

    def curve(self) -> np.ndarray:
        """The composed RDP epsilons at ``orders``."""
        orders = self.orders
        if not self._parts:
            return np.zeros_like(orders)
        return np.sum([k * g.to_rdp(orders).epsilons for g, k in self._parts], axis=0)

    def _epsilon(self, delta: float) -> float:
        return rdp_to_approx(self.orders, self.curve(), delta)[0]

    def _delta(self, epsilon: float) -> float:
        """The conversion of ``rdp_to_approx`` solved for delta, at the best order (capped at 1)."""
        a = self.orders
        log_delta = (a - 1.0) * (self.curve() + np.log1p(-1.0 / a) - epsilon) - np.log(a)
        return float(min(1.0, math.exp(float(np.min(log_delta)))))


class PLDCompositionAccountant(Accountant):
    """Composition by privacy loss distributions (``PLDAccountant``): pure epsilon-DP as
    randomised response, mu-GDP as the Gaussian with sigma = 1/mu, Poisson-subsampled Gaussians
    as themselves.

    Equal parts are self-composed in one FFT, however they were composed, in the order they first
    came; the distributions are built when ``epsilon`` or ``delta`` is first asked for.

    Parameters
    ----------
    relation : Relation or str, optional
        As for ``Accountant``.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import PLDCompositionAccountant, PureDP
    >>> round(PLDCompositionAccountant().compose(PureDP(0.1), count=100).epsilon(1e-6), 2)   # basic: 10
    4.77
    """

    route = "pld"

    def __init__(self, relation: Relation | str | None = None):
        super().__init__(relation)
        self._counts: dict["Guarantee", int] = {}
        self._built: PLDAccountant | None = None

    def _compose(self, guarantee: "Guarantee", count: int) -> None:
        self._counts[guarantee] = self._counts.get(guarantee, 0) + count
        self._built = None

    def _accountant(self) -> PLDAccountant:
        if self._built is None:
            self._built = PLDAccountant()
            for g, k in self._counts.items():
                g.add_to_pld(self._built, k)
        return self._built

    def _epsilon(self, delta: float) -> float:
        return self._accountant().epsilon(delta)

    def _delta(self, epsilon: float) -> float:
        return self._accountant().delta(epsilon)


ACCOUNTANTS: tuple[type[Accountant], ...] = (BasicAccountant, GDPAccountant, RDPCurveAccountant,
                                             PLDCompositionAccountant)
