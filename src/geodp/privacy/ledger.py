"""A crash-safe, process-safe record of the privacy budget spent on one data set.

The ledger is an SQLite database in WAL mode with ``synchronous=FULL``: a committed reservation
survives a crash or SIGKILL of the writer, and a torn write never corrupts it. Every
reservation runs inside ``BEGIN IMMEDIATE``, which takes SQLite's write lock on the file, so
concurrent processes are serialised and cannot jointly overspend.

Each entry keeps the guarantee it was released under (pure, approximate, GDP, zCDP, an RDP curve
or a subsampled Gaussian), not only an (epsilon, delta) pair. Spent budget is the tightest valid
composition of every entry, finished or not (``guarantees.compose``: RDP, GDP, privacy loss
distributions and basic composition, the smallest epsilon at the ledger's total delta); a
reservation whose release never completed still counts. Twenty 0.5-GDP releases thus cost
sqrt(20) * 0.5-GDP, not twenty times its (epsilon, delta). Ledgers written before guarantees
were stored are migrated in place: their entries are read as (epsilon, delta)-DP.

Every entry keeps its neighbouring relation. The spent budget is stated under the entries'
common relation; when they mix add/remove and replace-one it is stated under replace-one, each
add/remove entry converted by group privacy (``Guarantee.to_replace_one``). Entries written
before relations were stored are read as add/remove and converted to replace-one, which bounds
them under replace-one whichever relation they were released under (sampling without replacement
was always replace-one and is read as such).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from .guarantees import (ApproxDP, Guarantee, PureDP, common_relation, compose, guarantee_from_dict,
                         one_relation)
from ..parameters import ParameterError, ParameterTypeError
from .relation import Relation


class BudgetExceededError(RuntimeError):
    """A reservation would take the spent budget past the ledger's total."""


@dataclass
class Reservation:
    """A committed reservation; mark it done after the release (or use it as a context manager)."""

    ledger: "BudgetLedger"
    entry_id: int
    guarantee: Guarantee
    label: str

    def done(self) -> None:
        self.ledger._mark_done(self.entry_id)

    def __enter__(self) -> "Reservation":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.done()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value REAL NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL,
    epsilon REAL NOT NULL CHECK (epsilon >= 0),
    delta REAL NOT NULL CHECK (delta >= 0),
    status TEXT NOT NULL CHECK (status IN ('reserved', 'done')),
    reserved_at REAL NOT NULL,
    done_at REAL,
    guarantee TEXT
);
"""


class BudgetLedger:
    """Persistent privacy budget (total_epsilon, total_delta) for one data set.

    ``BudgetLedger(path, total_epsilon, total_delta)`` creates the ledger or opens an existing one
    (whose totals must then match); ``BudgetLedger(path)`` opens an existing ledger.

    Examples
    --------
    >>> import numpy as np
    >>> import tempfile, os
    >>> from geodp.privacy import BudgetLedger, GDP
    >>> path = os.path.join(tempfile.mkdtemp(), 'budget.db')
    >>> ledger = BudgetLedger(path, total_epsilon=4.0, total_delta=1e-5)
    >>> with ledger.reserve(GDP(0.5), label='first mean'): pass
    >>> with ledger.reserve(GDP(0.5), label='second mean'): pass
    >>> eps, delta = ledger.spent()
    >>> round(eps, 3), delta, len(ledger.history())
    (2.943, 1e-05, 2)
    """

    def __init__(self, path: str | Path, total_epsilon: float | None = None,
                 total_delta: float = 0.0, timeout: float = 60.0):
        self.path = Path(path)
        if total_epsilon is None and not self.path.exists():
            raise FileNotFoundError(f"no ledger at {self.path}; create it with a total_epsilon")
        if total_epsilon is not None:
            self._validate_totals(total_epsilon, total_delta)
        if not self.path.parent.is_dir():
            raise ValueError(f"cannot create the ledger {self.path}: directory {self.path.parent} "
                             f"does not exist")
        self._check_writable()
        self._check_foreign_file()
        self._timeout = timeout
        with self._transaction() as con:
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    con.execute(stmt)
            columns = {row[1] for row in con.execute("PRAGMA table_info(entries)")}
            if "guarantee" not in columns:
                con.execute("ALTER TABLE entries ADD COLUMN guarantee TEXT")
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                if total_epsilon is None:
                    raise ValueError(f"{self.path} is not an initialised ledger")
                self._validate_totals(total_epsilon, total_delta)
                con.execute("INSERT INTO meta VALUES ('total_epsilon', ?), ('total_delta', ?)",
                            (float(total_epsilon), float(total_delta)))
                meta = {"total_epsilon": float(total_epsilon), "total_delta": float(total_delta)}
            elif total_epsilon is not None and (
                    meta["total_epsilon"] != float(total_epsilon)
                    or meta["total_delta"] != float(total_delta)):
                raise ValueError(
                    f"ledger {self.path} has totals (epsilon={meta['total_epsilon']}, "
                    f"delta={meta['total_delta']}); it cannot be reopened with (epsilon="
                    f"{total_epsilon}, delta={total_delta})")
        self.total_epsilon = meta["total_epsilon"]
        self.total_delta = meta["total_delta"]

    def _check_writable(self) -> None:
        """Refuse a ledger that cannot be written: every release writes its reservation, and
        SQLite writes a journal beside the file, so both the file and its directory must be
        writable."""
        if self.path.exists() and not os.access(self.path, os.W_OK):
            where = f"the file {self.path} is read-only"
        elif not os.access(self.path.parent, os.W_OK):
            where = f"its directory {self.path.parent} is read-only"
        else:
            return
        raise PermissionError(f"the budget ledger {self.path} cannot be written ({where}; SQLite "
                              f"also writes a journal beside it): copy it to a writable "
                              f"directory or change the permissions")

    def _check_foreign_file(self) -> None:
        """Refuse, before writing anything, a file that is not a geodp ledger: not an SQLite
        database, or one of another application (tables but no ledger ``meta``)."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        try:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            finally:
                con.close()
        except sqlite3.OperationalError as exc:
            raise PermissionError(f"the budget ledger {self.path} cannot be opened ({exc}); check "
                                  f"the permissions of the file and of its directory") from None
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{self.path} is not a geodp budget ledger ({exc}); it was left "
                             f"untouched") from None
        if tables and not {"meta", "entries"} <= tables:
            raise ValueError(f"{self.path} is an SQLite database of another application (tables "
                             f"{sorted(tables)[:5]}), not a geodp budget ledger; it was left untouched")

    @staticmethod
    def _validate_totals(eps: float, delta: float) -> None:
        if isinstance(eps, (str, bytes)) or isinstance(delta, (str, bytes)):
            raise ParameterTypeError("{total_epsilon} and {total_delta} must be numbers, not "
                                     "strings", "total_epsilon", "total_delta")
        if not (math.isfinite(eps) and eps > 0):
            raise ParameterError(f"{{total_epsilon}} must be positive and finite, got {eps}",
                                 "total_epsilon")
        if not 0 <= delta < 1:
            raise ParameterError(f"{{total_delta}} must lie in [0, 1), got {delta}", "total_delta")

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
        return con

    class _Tx:
        def __init__(self, con: sqlite3.Connection):
            self.con = con

        def __enter__(self) -> sqlite3.Connection:
            self.con.execute("BEGIN IMMEDIATE")
            return self.con

        def __exit__(self, exc_type, exc, tb) -> None:
            try:
                self.con.execute("ROLLBACK" if exc_type else "COMMIT")
            finally:
                self.con.close()

    def _transaction(self) -> "_Tx":
        return self._Tx(self._connect())

    @staticmethod
    def _guarantees(con: sqlite3.Connection) -> list[Guarantee]:
        rows = con.execute("SELECT epsilon, delta, guarantee FROM entries ORDER BY id").fetchall()
        return [_stored(e, d, g) for e, d, g in rows]

    def relation(self) -> Relation | None:
        """The neighbouring relation the spent budget is stated under (None while empty)."""
        with self._transaction() as con:
            parts = self._guarantees(con)
        return common_relation(parts) if parts else None

    def _tight(self, parts: list[Guarantee]) -> tuple[float, float]:
        return tight_spent(parts, self.total_delta, str(self.path))

    def spent(self) -> tuple[float, float]:
        """(epsilon, delta) spent so far by the tightest valid composition, counting unfinished
        reservations: the sums for pure and approximate entries alone, otherwise epsilon at the
        ledger's total delta."""
        with self._transaction() as con:
            return self._tight(self._guarantees(con))

    def spent_basic(self) -> tuple[float, float]:
        """(epsilon, delta) spent by basic composition, a cross-check of ``spent``: epsilons and
        deltas add, each GDP/RDP/zCDP/subsampled-Gaussian entry stated at an equal share of the
        delta the approximate entries leave."""
        with self._transaction() as con:
            parts = self._guarantees(con)
        parts = one_relation(parts)[0] if parts else parts
        basic = [g for g in parts if isinstance(g, (PureDP, ApproxDP))]
        other = [g for g in parts if not isinstance(g, (PureDP, ApproxDP))]
        eps = math.fsum(g.epsilon for g in basic)
        delta = math.fsum(g.to_approx().delta for g in basic)
        if not other:
            return eps, delta
        share = (self.total_delta - delta) / len(other)
        if share <= 0:
            return math.inf, self.total_delta
        return eps + math.fsum(g.to_approx(share).epsilon for g in other), self.total_delta

    def remaining(self) -> tuple[float, float]:
        eps, delta = self.spent()
        return self.total_epsilon - eps, self.total_delta - delta

    def reserve(self, cost: float | Guarantee, delta: float = 0.0, label: str = "") -> Reservation:
        """Durably reserve a release's cost before it runs, or raise ``BudgetExceededError``.

        ``cost`` is an epsilon (with ``delta``: an (epsilon, delta)-DP release), read as a
        replace-one guarantee, or the release's ``Guarantee`` (an add/remove release must be
        reserved as its ``Guarantee``, whose relation then counts). It is accepted when the tightest composition of every entry, this one
        included, is (total_epsilon, total_delta)-DP.
        """
        g = _as_guarantee(cost, delta)
        with self._transaction() as con:
            parts = self._guarantees(con) + [g]
            try:
                new_eps, new_delta = self._tight(parts)
            except BudgetExceededError as exc:
                raise BudgetExceededError(f"releasing '{label}' under {g.describe()}: {exc}; "
                                          f"nothing was released") from None
            if new_eps > self.total_epsilon or new_delta > self.total_delta:
                raise BudgetExceededError(
                    f"releasing '{label}' under {g.describe()} would spend (epsilon="
                    f"{new_eps:.10g}, delta={new_delta:.10g}) of the total (epsilon="
                    f"{self.total_epsilon:.10g}, delta={self.total_delta:.10g}) recorded in "
                    f"{self.path}; nothing was released")
            alone = g.to_approx(self.total_delta if not isinstance(g, (PureDP, ApproxDP)) else None)
            cur = con.execute(
                "INSERT INTO entries (label, epsilon, delta, status, reserved_at, guarantee) "
                "VALUES (?, ?, ?, 'reserved', ?, ?)",
                (label, alone.epsilon, alone.delta, time.time(), json.dumps(g.as_dict())))
            entry = int(cur.lastrowid)
        return Reservation(self, entry, g, label)

    def _mark_done(self, entry_id: int) -> None:
        with self._transaction() as con:
            con.execute("UPDATE entries SET status='done', done_at=? WHERE id=?",
                        (time.time(), entry_id))

    def history(self) -> list[dict]:
        """Every entry, oldest first; ``epsilon``/``delta`` state each entry alone (GDP, RDP and
        subsampled-Gaussian entries at the ledger's total delta)."""
        with self._transaction() as con:
            cur = con.execute("SELECT id, label, epsilon, delta, status, reserved_at, done_at, "
                              "guarantee FROM entries ORDER BY id")
            cols = [c[0] for c in cur.description]
            rows = [dict(zip(cols, row)) for row in cur.fetchall()]
        for row in rows:
            g = _stored(row["epsilon"], row["delta"], row.pop("guarantee"))
            row["guarantee"] = g.describe()
            row["relation"] = g.relation.value
        return rows

    def integrity_ok(self) -> bool:
        """SQLite's own integrity check of the ledger file."""
        with self._transaction() as con:
            return con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def tight_spent(parts: list[Guarantee], total_delta: float, where: str) -> tuple[float, float]:
    """(epsilon, delta) of the tightest composition of ``parts`` under their common relation (see
    the module docstring): the basic sums when every part is pure or approximate (they are tight
    then), else epsilon at ``total_delta``. Raises ``BudgetExceededError`` (naming ``where``)
    when no composition is possible: relations that cannot be mixed, or no delta to spend."""
    if not parts:
        return 0.0, 0.0
    try:
        parts = one_relation(parts)[0]
    except ValueError as exc:
        raise BudgetExceededError(f"{exc} (ledger {where})") from None
    if all(isinstance(g, (PureDP, ApproxDP)) for g in parts):
        return (math.fsum(g.epsilon for g in parts),
                math.fsum(g.to_approx().delta for g in parts))
    if total_delta == 0:
        raise BudgetExceededError(
            f"ledger {where} has total_delta = 0: only pure epsilon-DP releases fit, "
            f"and it holds {', '.join(sorted({g.describe() for g in parts}))}")
    try:
        return compose(parts, total_delta).epsilon, total_delta
    except ValueError as exc:
        raise BudgetExceededError(f"{exc} (total delta of {where})") from None


class MemoryLedger:
    """An in-memory budget record with ``BudgetLedger``'s interface (``reserve``, ``spent``,
    ``remaining``, ``history``, ``relation``), for one process and one session: nothing survives
    the process. ``MemoryLedger()`` has an unlimited budget and only records (the shared default
    accountant of ``geodp.estimators``); with ``total_epsilon`` (and ``total_delta``) it refuses,
    like ``BudgetLedger``, a reservation that would take the tightest composition past them.

    Copies (``copy.copy``, ``copy.deepcopy``, hence scikit-learn's ``clone`` of an estimator
    holding it) are the ledger itself: a copy would record spending the original never sees.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import MemoryLedger, PureDP
    >>> ledger = MemoryLedger(total_epsilon=1.0)
    >>> with ledger.reserve(PureDP(0.4)): pass
    >>> ledger.spent(), ledger.remaining()
    ((0.4, 0.0), (0.6, 0.0))
    """

    def __copy__(self) -> "MemoryLedger":
        return self

    def __deepcopy__(self, memo: dict) -> "MemoryLedger":
        return self

    def __init__(self, total_epsilon: float = math.inf, total_delta: float = 0.0):
        unlimited = total_epsilon == math.inf
        if not unlimited:
            BudgetLedger._validate_totals(total_epsilon, total_delta)
        elif not 0 <= total_delta < 1:
            raise ParameterError(f"{{total_delta}} must lie in [0, 1), got {total_delta}",
                                 "total_delta")
        self.total_epsilon, self.total_delta = float(total_epsilon), float(total_delta)
        self._entries: list[tuple[Guarantee, str]] = []

    def reserve(self, cost: float | Guarantee, delta: float = 0.0, label: str = "") -> "_MemoryReservation":
        """Record a release's cost before it runs, or raise ``BudgetExceededError`` (a limited
        ledger past its totals, or relations that cannot be composed)."""
        g = _as_guarantee(cost, delta)
        parts = [e[0] for e in self._entries] + [g]
        try:
            one_relation(parts)
        except ValueError as exc:
            raise BudgetExceededError(f"releasing '{label}': {exc}; nothing was released") from None
        if self.total_epsilon < math.inf:
            eps, dlt = tight_spent(parts, self.total_delta, "in memory")
            if eps > self.total_epsilon or dlt > self.total_delta:
                raise BudgetExceededError(
                    f"releasing '{label}' under {g.describe()} would spend (epsilon={eps:.10g}, "
                    f"delta={dlt:.10g}) of the total (epsilon={self.total_epsilon:.10g}, "
                    f"delta={self.total_delta:.10g}); nothing was released")
        self._entries.append((g, label))
        return _MemoryReservation()

    def spent(self, delta: float | None = None) -> tuple[float, float]:
        """(epsilon, delta) spent so far (``tight_spent``), GDP/RDP entries stated at ``delta``
        (default: the ledger's total delta)."""
        return tight_spent([e[0] for e in self._entries],
                           self.total_delta if delta is None else delta, "in memory")

    def remaining(self) -> tuple[float, float]:
        eps, delta = self.spent()
        return self.total_epsilon - eps, self.total_delta - delta

    def relation(self) -> Relation | None:
        """The neighbouring relation the spent budget is stated under (None while empty)."""
        return common_relation([e[0] for e in self._entries]) if self._entries else None

    def history(self) -> list[dict]:
        """Every entry, oldest first: label, guarantee and relation."""
        return [{"label": label, "guarantee": g.describe(), "relation": g.relation.value}
                for g, label in self._entries]


class _MemoryReservation:
    """What ``MemoryLedger.reserve`` returns: a context manager with ``done()``, for the same use
    as ``Reservation`` (an in-memory entry needs no completion mark)."""

    def done(self) -> None:
        return None

    def __enter__(self) -> "_MemoryReservation":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        return None


def _basic(epsilon: float, delta: float) -> Guarantee:
    return PureDP(epsilon) if delta == 0 and epsilon > 0 else ApproxDP(epsilon, delta)


def _stored(epsilon: float, delta: float, text: str | None) -> Guarantee:
    """An entry's guarantee. One stored without a relation (older ledgers) is read as add/remove
    and stated under replace-one, except sampling without replacement, which was always
    replace-one (see the module docstring)."""
    if text is None:
        d = {k: v for k, v in _basic(epsilon, delta).as_dict().items() if k != "relation"}
    else:
        d = json.loads(text)
    if "relation" in d:
        return guarantee_from_dict(d)
    subsampled_wor = (d.get("notion") == "subsampled_gaussian" and d.get("sample_rate", 1.0) < 1.0
                      and d.get("sampling") == "without_replacement")
    if subsampled_wor:
        return guarantee_from_dict(d)
    return guarantee_from_dict({**d, "relation": Relation.ADD_REMOVE.value}).to_replace_one()


def _as_guarantee(cost: float | Guarantee, delta: float) -> Guarantee:
    if isinstance(cost, Guarantee):
        if delta:
            raise ValueError("pass delta only with an epsilon cost, not with a Guarantee")
        return cost
    if isinstance(cost, (bool, str)) or not isinstance(cost, (int, float)):
        raise TypeError(f"cost must be an epsilon or a Guarantee, got {type(cost).__name__}")
    epsilon, delta = float(cost), float(delta)
    if not (math.isfinite(epsilon) and epsilon >= 0 and math.isfinite(delta) and 0 <= delta < 1):
        raise ValueError(f"cannot reserve epsilon={epsilon}, delta={delta}")
    return _basic(epsilon, delta)
