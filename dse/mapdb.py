"""The mapping database: best mappings found, persisted in SQLite so a repeated query is instant.

A row is keyed by everything that decides the answer: the layer's shape (canonical JSON of
``Problem.to_dict()`` without the constructor ``params``, which are not part of identity), the
config fingerprint, the objective, the mapper and its options (seed included), and
:func:`model_version` -- a hash of the cost model's and the search's source and data files and of
the numpy and numba versions, so a changed model never serves a stale mapping. Stored: the mapping
(JSON), its metrics and the search's record (mappings evaluated, seconds).

Several processes may read and write at once: WAL journal mode, a 30 s busy timeout, and one
``INSERT OR REPLACE`` per result (a row is complete or absent). Location: ``db=`` / ``--db PATH``,
else ``$ACCEL_DSE_CACHE/mappings.sqlite``, else ``~/.cache/accel-dse/mappings.sqlite``. A file that
is damaged or not this tool's database is a UserError naming it; a row that does not decode is a miss.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import re
import sqlite3
import time
import urllib.parse
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from costmodel.errors import UserError

if TYPE_CHECKING:
    from costmodel.problem import Problem

SCHEMA_VERSION = 1
_MODEL_PACKAGES = ("costmodel", "dse/mappers", "dse/mapspace")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS mappings (
    key TEXT PRIMARY KEY,
    layer_signature TEXT NOT NULL,
    config_fingerprint TEXT NOT NULL,
    objective TEXT NOT NULL,
    mapper TEXT NOT NULL,
    model_version TEXT NOT NULL,
    problem TEXT NOT NULL,
    mapping TEXT NOT NULL,
    metrics TEXT NOT NULL,
    mappings_evaluated INTEGER NOT NULL,
    search_seconds REAL NOT NULL,
    created REAL NOT NULL
)"""
_COLUMNS = tuple(re.findall(r"^ +(\w+) ", _SCHEMA, re.MULTILINE))  # in order: ``put`` inserts by position
_DAMAGED = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
"""SQLite result codes of a file that is corrupt or not a database (a foreign table is caught by its
columns on open; SQLITE_ERROR is generic and says nothing about the file)."""


def _is_damaged(exc: sqlite3.Error) -> bool:
    return (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in _DAMAGED


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


def layer_signature(problem: Problem) -> str:
    """16 hex chars identifying a layer's shape: equal Problems give equal signatures, and only they.
    The dims go in as an ordered list: their order is the problem's loop numbering, which the search
    follows (``canonical`` sorts dict keys, so as a dict two orders of one layer shared a key and a
    warm database answered one with the other's search)."""
    d = problem.to_dict()
    d.pop("params", None)
    d["dims"] = [[name, size] for name, size in problem.dims]
    return hashlib.sha256(canonical(d).encode()).hexdigest()[:16]


@functools.cache
def model_version() -> str:
    """Hash of the source and data files of the cost model and the mappers (changes on any edit),
    and of the numpy and numba versions that compute with them: a database shared between
    environments does not serve one's answers to another with other versions of those (the Python
    version, llvmlite and the CPU are not in it)."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(f"schema {SCHEMA_VERSION}".encode())
    for dist in ("numpy", "numba"):
        h.update(f"{dist} {importlib.metadata.version(dist)}".encode())
    for pkg in _MODEL_PACKAGES:
        for f in sorted((root / pkg).rglob("*")):
            if f.is_file() and f.suffix in (".py", ".csv", ".yaml", ".json") and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def default_path() -> Path:
    base = os.environ.get("ACCEL_DSE_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "accel-dse") / "mappings.sqlite"


@dataclass(frozen=True)
class SearchKey:
    """What decides a search's answer (see the module docstring)."""

    layer_signature: str
    config_fingerprint: str
    objective: str  # canonical JSON of Objective.to_dict()
    mapper: str  # canonical JSON of {name, seed, options}

    @property
    def digest(self) -> str:
        return hashlib.sha256(canonical([self.layer_signature, self.config_fingerprint, self.objective,
                                         self.mapper, model_version()]).encode()).hexdigest()


@dataclass
class Stored:
    mapping: dict[str, Any]
    metrics: dict[str, float]
    mappings_evaluated: int
    search_seconds: float


class MappingDB:
    """A SQLite file of best mappings (safe for concurrent processes)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise UserError(f"{self.path}: cannot open the mapping database ({exc})") from None
        try:
            # another tool's file fails now, not after the search, and before _setup writes to it
            foreign = self._foreign()
            if foreign is None:
                self._setup()
                foreign = self._foreign()
        except sqlite3.Error as exc:
            self._con.close()
            if not (self.path.is_file() and "unable to open" in str(exc)):
                raise self._error(exc, "open") from None
            foreign = self._open_read_only(exc)
        if foreign is not None:
            self._con.close()
            raise self._damaged(foreign)

    def _open_read_only(self, exc: sqlite3.Error) -> str | None:
        """A database whose folder cannot be written (a shared, read-only cache): SQLite's WAL mode
        needs its -wal and -shm files beside it, so the file is opened as immutable instead: its
        answers are served, new ones are not kept. Returns :meth:`_foreign`'s verdict."""
        try:
            self._con = sqlite3.connect(f"file:{urllib.parse.quote(str(self.path.resolve()))}?mode=ro&immutable=1",
                                        uri=True, timeout=30.0, isolation_level=None)
            foreign = self._foreign()
        except sqlite3.Error as again:
            raise self._error(again, "open") from None
        warnings.warn(f"{self.path}: its folder cannot be written ({exc}); its stored answers are used, new ones "
                      "are not kept", UserWarning, stacklevel=3)
        return foreign

    def _foreign(self) -> str | None:
        """Why the file is another tool's database (tables, but not our 'mappings'), or None."""
        tables = [row[0] for row in self._con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        if not tables:
            return None
        if "mappings" not in tables:
            return f"it holds the tables {', '.join(sorted(tables))}, not 'mappings'"
        columns = tuple(row[1] for row in self._con.execute("PRAGMA table_info(mappings)"))
        return None if columns == _COLUMNS else f"its table 'mappings' has columns {', '.join(columns)}"

    def _damaged(self, reason: object) -> UserError:
        """A damaged or foreign file is the user's to replace; say so rather than show sqlite's traceback."""
        return UserError(f"{self.path}: not a mapping database of this tool, or damaged ({reason}); "
                         f"delete it or pass another --db")

    def _error(self, exc: sqlite3.Error, doing: str) -> UserError:
        if _is_damaged(exc):
            return self._damaged(exc)
        return UserError(f"{self.path}: cannot {doing} the mapping database ({exc})")

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self._con.execute(sql, params)
        except sqlite3.Error as exc:
            raise self._error(exc, "use") from None

    def _setup(self) -> None:
        """Switch to WAL and create the table, retrying while another process does the same.

        SQLite answers a concurrent journal-mode switch of a fresh file with SQLITE_BUSY at once,
        without calling the busy handler (it would deadlock), so the timeout alone does not help.
        """
        deadline = time.monotonic() + 30.0
        while True:
            try:
                self._con.execute("PRAGMA journal_mode=WAL")
                self._con.execute("PRAGMA busy_timeout=30000")
                self._con.execute(_SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _passing(self, exc: sqlite3.Error, what: str) -> None:
        """A damaged file is the user's to replace (UserError); anything else (a full disk, a lock
        held past the timeout) costs the cache only, with a warning: it had made a sweep's designs
        invalid (pruned for good) while the search itself was fine."""
        if _is_damaged(exc):
            raise self._damaged(exc) from None
        warnings.warn(f"{self.path}: {what} ({exc})", UserWarning, stacklevel=3)

    def get(self, key: SearchKey) -> Stored | None:
        """The stored answer, or None; a row that does not decode is a miss (``put`` replaces it)."""
        try:
            row = self._con.execute("SELECT mapping, metrics, mappings_evaluated, search_seconds FROM mappings "
                                    "WHERE key = ?", (key.digest,)).fetchone()
        except sqlite3.Error as exc:
            self._passing(exc, "cannot read the mapping database; searching again")
            return None
        if row is None:
            return None
        try:
            stored = Stored(json.loads(row[0]), json.loads(row[1]), int(row[2]), float(row[3]))
            if not (isinstance(stored.mapping, dict) and isinstance(stored.metrics, dict)):
                raise TypeError("expected a mapping and metrics as JSON objects")
        except (TypeError, ValueError) as exc:
            warnings.warn(f"{self.path}: a stored answer does not decode ({str(exc)[:80]}); searching it again",
                          UserWarning, stacklevel=2)
            return None
        return stored

    def put(self, key: SearchKey, problem: Problem, stored: Stored) -> None:
        try:
            self._con.execute(
                "INSERT OR REPLACE INTO mappings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key.digest, key.layer_signature, key.config_fingerprint, key.objective, key.mapper, model_version(),
                 canonical(problem.to_dict()), canonical(stored.mapping), canonical(stored.metrics),
                 stored.mappings_evaluated, stored.search_seconds, time.time()))
        except sqlite3.Error as exc:
            self._passing(exc, "cannot keep a search's answer in the mapping database; it is used, not kept")

    def __len__(self) -> int:
        return int(self._run("SELECT COUNT(*) FROM mappings").fetchone()[0])

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
