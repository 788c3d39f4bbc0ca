"""The object every private release returns, split into what may be published and what may not."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..privacy import BudgetLedger, Guarantee

DIAGNOSTICS_NOTE = ("NOT PRIVATE: computed from the data without noise (records clipped, iterations, "
                    "sampler acceptance, R-hat, losses); for the data curator only, never publish")


@dataclass(frozen=True)
class Release:
    """A private output with the guarantee it carries and how it was produced.

    ``value`` is a point, or a dict of named parts (a regression's footpoint and shooting
    vector). ``guarantee`` states the privacy notion, its numbers and its neighbouring relation
    (``guarantee.relation``); ``theorem`` names the result it rests on. ``exact_sampler`` is
    False when the noise came from MCMC: the guarantee then holds for the mechanism's target law,
    and the chain's output only approximates that law.

    ``public`` is what may be published: the value, the guarantee and the public parameters
    (``parameters``: settings and bounds fixed before seeing the data, such as n under
    replace-one neighbours, the clipping norm or the noise multiplier). ``diagnostics`` holds
    statistics computed from the data without protection (records clipped, iterations, sampler
    acceptance, R-hat, loss traces): they are not covered by the guarantee and are for the data
    curator only.
    """

    value: np.ndarray | dict[str, np.ndarray]
    guarantee: Guarantee
    sensitivity: float
    scale: float
    mechanism: str
    exact_sampler: bool
    diagnostics: dict[str, Any] = field(default_factory=dict)
    equivalent: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    theorem: str = ""

    def __repr__(self) -> str:
        if isinstance(self.value, dict):
            shape = ", ".join(f"{k} {np.shape(v)}" for k, v in self.value.items())
        else:
            shape = f"value shape {np.shape(self.value)}"
        return (f"Release({self.mechanism}, {self.guarantee.describe()}, {shape}, "
                f"sensitivity {self.sensitivity:.4g}, scale {self.scale:.4g}, "
                f"exact_sampler={self.exact_sampler})")

    @property
    def statement(self) -> str:
        """The guarantee in words: notion, relation, and whether the sampler is exact."""
        claim = f"{self.guarantee.describe()}: {self.guarantee.relation.meaning}"
        if self.exact_sampler:
            return f"{claim}; exact sampler"
        return (f"{claim}, for the mechanism's target law; the sampler is MCMC, so the released "
                f"value is only approximately from that law (approximate guarantee)")

    @property
    def public(self) -> dict[str, Any]:
        """What may be published: value, guarantee (with relation and sampler) and public
        parameters, as JSON-ready values."""
        value = ({k: np.asarray(v).tolist() for k, v in self.value.items()}
                 if isinstance(self.value, dict) else np.asarray(self.value).tolist())
        return {"value": value, "guarantee": self.guarantee.describe(),
                "relation": self.guarantee.relation.value, "statement": self.statement,
                "exact_sampler": self.exact_sampler, "theorem": self.theorem,
                "guarantee_parameters": self.guarantee.as_dict(), "mechanism": self.mechanism,
                "sensitivity": self.sensitivity, "scale": self.scale,
                "parameters": dict(self.parameters), "equivalent_guarantees": dict(self.equivalent)}

    def as_dict(self, diagnostics: bool = False) -> dict[str, Any]:
        """``public``; with ``diagnostics=True`` also the non-private diagnostics, under a key that
        says so."""
        out = self.public
        if diagnostics:
            out["diagnostics_not_private"] = {"note": DIAGNOSTICS_NOTE, **self.diagnostics}
        return out


def reserved(ledger: BudgetLedger | None, guarantee: Guarantee, label: str) -> AbstractContextManager:
    """The ledger's reservation of ``guarantee`` as a context manager, taken before any randomness
    is drawn: marked done when the block completes, kept when it raises (noise may have been drawn,
    so the failure itself is an output). Without a ledger, a no-op."""
    return nullcontext() if ledger is None else ledger.reserve(guarantee, label=label)
