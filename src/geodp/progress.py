"""Progress bars for long work (replicates of a reproduction, MCMC chains, DP-RGD steps).

A bar is a tqdm bar on stderr, so JSON on stdout stays clean. It is shown only when progress is
switched on and stderr is a terminal. The Python API keeps quiet by default; ``showing(True)``
switches bars on for a block of code, and the ``geodp`` command does so unless ``--quiet``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")
_SHOW: ContextVar[bool] = ContextVar("geodp_progress", default=False)


@contextmanager
def showing(show: bool = True) -> Iterator[None]:
    """Switch progress bars on (or off) inside the block."""
    token = _SHOW.set(bool(show))
    try:
        yield
    finally:
        _SHOW.reset(token)


def bar(total: int | None, desc: str, show: bool | None = None):
    """A tqdm bar of ``total`` steps (None: unknown, a counter) labelled ``desc``; ``show``
    overrides the current setting.
    Use as a context manager and call ``update(k)``; a disabled bar costs nothing."""
    from tqdm import tqdm

    on = _SHOW.get() if show is None else show
    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True,
                disable=not (on and sys.stderr.isatty()))


def tracked(items: Iterable[T], desc: str) -> Iterator[T]:
    """Iterate over ``items`` (a sized collection) with a bar counting them."""
    items = list(items)
    with bar(len(items), desc) as meter:
        for item in items:
            yield item
            meter.update(1)
