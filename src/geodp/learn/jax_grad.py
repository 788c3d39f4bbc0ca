"""Per-sample gradients of losses written in JAX (the ``jax`` extra, imported when called)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def jax_per_sample_grad(loss: Callable) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``per_sample_grad`` for ``dp_rsgd`` from loss(w, record) -> scalar, written with jax.numpy:
    jax.vmap(jax.grad(loss)) over the records of a batch, returned as NumPy arrays. These are
    Euclidean gradients: pass ``euclidean_grad=True`` to ``dp_rsgd``.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.learn import jax_per_sample_grad
    >>> grad = jax_per_sample_grad(lambda w, z: (w @ z) ** 2)   # doctest: +SKIP
    """
    try:
        import jax
    except ImportError as exc:
        raise ImportError("JAX losses need the jax extra: pip install 'geodp[jax]'") from exc
    batched = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0)))

    def per_sample_grad(w: np.ndarray, batch: np.ndarray) -> np.ndarray:
        return np.asarray(batched(w, batch), dtype=float)

    return per_sample_grad
