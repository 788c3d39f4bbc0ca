"""A crash-safe, process-safe record of the privacy budget spent on one data set.

The ledger is an SQLite database in WAL mode with ``synchronous=FULL``: a committed reservation
survives a crash or SIGKILL of the writer, and a torn write never corrupts it. Every
reservation runs inside ``BEGIN IMMEDIATE``, which takes SQLite's write lock on the file, so
concurrent processes are serialised and cannot jointly overspend. Spent budget is the basic
composition (sums, computed with ``math.fsum``) of every entry, finished or not: a reservation
whose release never completed still counts.
"""

from __future__ import annotations

import math
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path


class BudgetExceededError(RuntimeError):
    """A reservation would take the spent budget past the ledger's total."""


@dataclass
class Reservation:
    """A committed reservation; mark it done after the release (or use it as a context manager)."""

    ledger: "BudgetLedger"
    entry_id: int
    epsilon: float
    delta: float
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
    done_at REAL
);
"""


class BudgetLedger:
    """Persistent privacy budget (total_epsilon, total_delta) for one data set.

    ``BudgetLedger(path, total_epsilon, total_delta)`` creates the ledger or opens an existing one
    (whose totals must then match); ``BudgetLedger(path)`` opens an existing ledger.
    """

    def __init__(self, path: str | Path, total_epsilon: float | None = None,
                 total_delta: float = 0.0, timeout: float = 60.0):
        self.path = Path(path)
        if total_epsilon is None and not self.path.exists():
            raise FileNotFoundError(f"no ledger at {self.path}; create it with a total_epsilon")
        self._timeout = timeout
        with self._transaction() as con:
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    con.execute(stmt)
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

    @staticmethod
    def _validate_totals(eps: float, delta: float) -> None:
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"total_epsilon must be positive and finite, got {eps}")
        if not 0 <= delta < 1:
            raise ValueError(f"total_delta must lie in [0, 1), got {delta}")

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
    def _sums(con: sqlite3.Connection) -> tuple[float, float]:
        rows = con.execute("SELECT epsilon, delta FROM entries").fetchall()
        return math.fsum(r[0] for r in rows), math.fsum(r[1] for r in rows)

    def spent(self) -> tuple[float, float]:
        """(epsilon, delta) spent so far, counting unfinished reservations."""
        with self._transaction() as con:
            return self._sums(con)

    def remaining(self) -> tuple[float, float]:
        eps, delta = self.spent()
        return self.total_epsilon - eps, self.total_delta - delta

    def reserve(self, epsilon: float, delta: float = 0.0, label: str = "") -> Reservation:
        """Durably reserve (epsilon, delta) before a release, or raise ``BudgetExceededError``."""
        epsilon, delta = float(epsilon), float(delta)
        if not (math.isfinite(epsilon) and epsilon >= 0 and math.isfinite(delta) and delta >= 0):
            raise ValueError(f"cannot reserve epsilon={epsilon}, delta={delta}")
        with self._transaction() as con:
            rows = con.execute("SELECT epsilon, delta FROM entries").fetchall()
            new_eps = math.fsum([r[0] for r in rows] + [epsilon])
            new_delta = math.fsum([r[1] for r in rows] + [delta])
            if new_eps > self.total_epsilon or new_delta > self.total_delta:
                raise BudgetExceededError(
                    f"releasing '{label}' at (epsilon={epsilon:.10g}, delta={delta:.10g}) would "
                    f"spend (epsilon={new_eps:.10g}, delta={new_delta:.10g}) of the total "
                    f"(epsilon={self.total_epsilon:.10g}, delta={self.total_delta:.10g}) recorded "
                    f"in {self.path}; "
                    f"nothing was released")
            cur = con.execute(
                "INSERT INTO entries (label, epsilon, delta, status, reserved_at) "
                "VALUES (?, ?, ?, 'reserved', ?)", (label, epsilon, delta, time.time()))
            entry = int(cur.lastrowid)
        return Reservation(self, entry, epsilon, delta, label)

    def _mark_done(self, entry_id: int) -> None:
        with self._transaction() as con:
            con.execute("UPDATE entries SET status='done', done_at=? WHERE id=?",
                        (time.time(), entry_id))

    def history(self) -> list[dict]:
        """Every entry, oldest first."""
        with self._transaction() as con:
            cur = con.execute("SELECT id, label, epsilon, delta, status, reserved_at, done_at "
                              "FROM entries ORDER BY id")
            cols = [c[0] for c in cur.description]
            return [dict(zip(cols, row)) for row in cur.fetchall()]

    def integrity_ok(self) -> bool:
        """SQLite's own integrity check of the ledger file."""
        with self._transaction() as con:
            return con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
