"""Neighbouring relations: which pairs of data sets a guarantee speaks of.

A guarantee bounds how much one release can tell two *neighbouring* data sets apart, and it
means nothing without saying which data sets are neighbours (dp-accounting's
``NeighboringRelation`` makes the same choice explicit):

- ``ADD_REMOVE``: D' is D with one record added or removed. The size n of the data set is
  itself protected, so a mechanism may not divide by the data's own n. Poisson subsampling
  (DP-RSGD with ``sampling="poisson"``) is analysed under this relation.
- ``REPLACE_ONE``: D' is D with one record replaced by another; n is public. The Fréchet-mean,
  K-norm gradient, geodesic-regression, full-batch and sampling-without-replacement DP-RGD
  guarantees are of this kind.

- ``REPLACE_ONE_SAME_CLASS``: D' is D with one record replaced by another *of the same class*;
  n, every class's size and the set of classes are public, only the points are protected.
  ``PrivateMDM`` with ``class_sizes="public"`` releases class means under it. It is weaker than
  replace-one (fewer pairs are neighbours), so it is never converted into another relation and
  never composed with guarantees of another relation (``common_relation`` refuses the mix):
  stating such a mix under this relation would silently weaken the other releases' meaning.

Group privacy converts the first into the second: replacing a record is removing it and adding
another, so an add/remove guarantee holds for replace-one at the price of a group of two
(``Guarantee.to_replace_one``). The converse does not hold (a replace-one mechanism may divide by
n), so mixed compositions are stated under replace-one.
"""

from __future__ import annotations

from enum import Enum


class Relation(str, Enum):
    """Which data sets are neighbours; the value is its spelling in JSON and on the CLI."""

    ADD_REMOVE = "add-remove"
    REPLACE_ONE = "replace-one"
    REPLACE_ONE_SAME_CLASS = "replace-one-same-class"

    @property
    def meaning(self) -> str:
        """The relation in words, for a release's statement."""
        if self is Relation.ADD_REMOVE:
            return "neighbouring data sets differ by adding or removing one record"
        if self is Relation.REPLACE_ONE_SAME_CLASS:
            return ("neighbouring data sets differ by replacing one record by another of the same "
                    "class (n, the labels' class sizes and the set of classes are public; a record "
                    "moving between classes is NOT protected)")
        return "neighbouring data sets differ by replacing one record (their size n is public)"


def as_relation(value: "Relation | str") -> Relation:
    """``value`` as a ``Relation``, or a ValueError naming the two spellings."""
    try:
        return Relation(value)
    except ValueError:
        raise ValueError(f"relation must be one of {[r.value for r in Relation]}, "
                         f"got {value!r}") from None
