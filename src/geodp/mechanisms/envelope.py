"""Exact sampling from a log-concave density on an interval by rejection from a tangent envelope.

For a concave log-density h on [lo, hi), the tangents of h at a few abscissae bound it from
above; their lower envelope is piecewise linear, so exp(envelope) is a piecewise-exponential
density that can be sampled by inversion. A proposal r is accepted with probability
exp(h(r) - envelope(r)). With abscissae spread over a few standard deviations around the mode
the acceptance rate exceeds 0.9 (Gilks & Wild 1992 use the same hull adaptively).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Array = np.ndarray


@dataclass
class TangentEnvelope:
    """Piecewise-exponential upper bound exp(a_i + g_i (r - x_i)) on segments [z_i, z_{i+1}]."""

    x: Array
    h: Array
    g: Array
    z: Array
    log_mass: Array

    def value(self, r: Array) -> Array:
        idx = np.clip(np.searchsorted(self.z, r, side="right") - 1, 0, len(self.x) - 1)
        return self.h[idx] + self.g[idx] * (r - self.x[idx])

    def sample(self, size: int, rng: np.random.Generator) -> Array:
        p = np.exp(self.log_mass - np.max(self.log_mass))
        seg = rng.choice(len(p), size=size, p=p / p.sum())
        u = rng.random(size)
        g = self.g[seg]
        width = self.z[seg + 1] - self.z[seg]
        gl = g * width
        small = np.abs(gl) < 1e-10
        safe_g = np.where(small, 1.0, g)
        # inverse CDF of exp(g t) on [0, width]: log1p(u expm1(g width)) / g
        with np.errstate(over="ignore"):
            t = np.where(small, u * width, np.log1p(u * np.expm1(gl)) / safe_g)
        return self.z[seg] + np.clip(t, 0.0, width)


def _log_segment_mass(h0: Array, g: Array, left: Array, right: Array) -> Array:
    """log int_left^right exp(h0 + g t) dt with t measured from left (h0 = value at left)."""
    width = right - left
    gl = g * width
    out = np.empty_like(h0)
    small = np.abs(gl) < 1e-10
    with np.errstate(divide="ignore"):
        out[small] = h0[small] + np.log(width[small])
    pos = ~small & (gl > 0)
    out[pos] = h0[pos] + gl[pos] + np.log(-np.expm1(-gl[pos])) - np.log(g[pos])
    neg = ~small & (gl < 0)
    out[neg] = h0[neg] + np.log(-np.expm1(gl[neg])) - np.log(-g[neg])
    return out


def tangent_envelope(h: Callable[[Array], Array], dh: Callable[[Array], Array], xs: Array,
                     lo: float, hi: float) -> TangentEnvelope:
    """Envelope of a concave h on [lo, hi] from its tangents at the abscissae xs (inside (lo, hi))."""
    xs = np.unique(np.asarray(xs, dtype=float))
    hx, gx = h(xs), dh(xs)
    if not np.isfinite(hi) and gx[-1] >= 0:
        raise ValueError("the log-density must decrease at the last abscissa on an infinite range")
    # intersections of consecutive tangents
    dg = gx[:-1] - gx[1:]
    same = np.abs(dg) < 1e-300
    zi = np.where(same, 0.5 * (xs[:-1] + xs[1:]),
                  (hx[1:] - hx[:-1] - xs[1:] * gx[1:] + xs[:-1] * gx[:-1]) / np.where(same, 1.0, dg))
    zi = np.clip(zi, xs[:-1], xs[1:])
    z = np.concatenate([[lo], zi, [hi]])
    upper = np.where(np.isfinite(z[1:]), z[1:], z[:-1])
    h_left = hx + gx * (z[:-1] - xs)
    log_mass = np.where(
        np.isfinite(z[1:]),
        _log_segment_mass(h_left, gx, z[:-1], upper),
        h_left - np.log(np.where(gx < 0, -gx, 1.0)),
    )
    return TangentEnvelope(xs, hx, gx, z, log_mass)


def rejection_sample(h: Callable[[Array], Array], envelope: TangentEnvelope, size: int,
                     rng: np.random.Generator, max_rounds: int = 10_000) -> tuple[Array, float]:
    """``size`` exact draws from the density exp(h); returns them and the acceptance rate."""
    out = np.empty(size)
    filled, proposed, accepted = 0, 0, 0
    for _ in range(max_rounds):
        if filled >= size:
            break
        m = int(1.2 * (size - filled)) + 16
        r = envelope.sample(m, rng)
        proposed += m
        keep = np.log(rng.random(m)) <= h(r) - envelope.value(r)
        accepted += int(keep.sum())
        acc = r[keep][: size - filled]
        out[filled: filled + len(acc)] = acc
        filled += len(acc)
    if filled < size:
        raise RuntimeError("rejection sampler did not finish; acceptance rate too low")
    return out, accepted / max(proposed, 1)


def accumulate(propose: Callable[[int], Array], n: int, rate: float, min_rate: float,
               max_batch: int) -> tuple[Array, float]:
    """Call ``propose(batch)`` (which returns the accepted draws of ``batch`` proposals) until
    ``n`` draws are accepted, sizing batches by the acceptance rate observed so far, counting the
    first guess ``rate`` as one acceptance in 1/rate proposals (so a batch without acceptances
    lowers the estimate gradually, never below ``min_rate``). ``propose`` may also return
    (accepted draws, proposals examined) when it stops early. Returns the n draws and the
    acceptance rate."""
    out, got, proposed = [], 0, 0
    while got < n:
        guess = max((got + 1) / (proposed + 1 / rate), min_rate)
        batch = int(min(max((n - got) / guess * 1.2, 256), max_batch))
        result = propose(batch)
        accepted, examined = result if isinstance(result, tuple) else (result, batch)
        out.append(accepted)
        got += len(accepted)
        proposed += examined
    return np.concatenate(out)[:n], got / proposed
