"""The object every private release returns."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..privacy import BudgetLedger, Guarantee


@dataclass(frozen=True)
class Release:
    """A private output with the guarantee it carries and how it was produced.

    ``value`` is a point, or a dict of named parts (a regression's footpoint and shooting
    vector). ``exact_sampler`` is False when the noise came from MCMC: the draw is then only approximately
    from the mechanism's law, and the stated guarantee holds only up to that approximation.

    The guarantee covers ``value`` alone. ``diagnostics`` mixes public settings with statistics
    computed from the data without protection (records clipped, iterations, sampler acceptance,
    R-hat): they are for the data curator, not for publication.
    """

    value: np.ndarray | dict[str, np.ndarray]
    guarantee: Guarantee
    sensitivity: float
    scale: float
    mechanism: str
    exact_sampler: bool
    diagnostics: dict[str, Any] = field(default_factory=dict)
    equivalent: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        if isinstance(self.value, dict):
            shape = ", ".join(f"{k} {np.shape(v)}" for k, v in self.value.items())
        else:
            shape = f"value shape {np.shape(self.value)}"
        return (f"Release({self.mechanism}, {self.guarantee.describe()}, {shape}, "
                f"sensitivity {self.sensitivity:.4g}, scale {self.scale:.4g}, "
                f"exact_sampler={self.exact_sampler})")

    def as_dict(self) -> dict[str, Any]:
        value = ({k: np.asarray(v).tolist() for k, v in self.value.items()}
                 if isinstance(self.value, dict) else np.asarray(self.value).tolist())
        return {"value": value, "guarantee": self.guarantee.describe(),
                "guarantee_parameters": self.guarantee.as_dict(),
                "sensitivity": self.sensitivity, "scale": self.scale, "mechanism": self.mechanism,
                "exact_sampler": self.exact_sampler, "equivalent_guarantees": self.equivalent,
                "diagnostics": self.diagnostics,
                "diagnostics_note": "not covered by the guarantee: computed from the data for the "
                                    "curator; publish value and guarantee only"}


def reserved(ledger: BudgetLedger | None, guarantee: Guarantee, label: str) -> AbstractContextManager:
    """The ledger's reservation of ``guarantee`` as a context manager, taken before any randomness
    is drawn: marked done when the block completes, kept when it raises (noise may have been drawn,
    so the failure itself is an output). Without a ledger, a no-op."""
    return nullcontext() if ledger is None else ledger.reserve(guarantee, label=label)
