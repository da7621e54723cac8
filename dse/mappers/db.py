"""The mapping database: search results persist in SQLite, so a repeated query is answered at once.

Key: a SHA-256 over the layer's shape (its einsum: dims, tensors, bit widths; not its name), the
config's fingerprint, the objective, the mapper, its seed and options, and the constraints. Default
file: ``$ACCEL_DSE_CACHE/mappings.sqlite`` (``~/.cache/accel-dse`` when unset); any path can be given.
Only the parent process writes (workers return results), so there is no write contention.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from costmodel.errors import UserError

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.problem import Problem
    from dse.mappers.result import MapperResult

SCHEMA = """CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY, created REAL, layer TEXT, hw TEXT, objective TEXT, mapper TEXT, result TEXT)"""


def default_path() -> Path:
    root = os.environ.get("ACCEL_DSE_CACHE") or str(Path.home() / ".cache" / "accel-dse")
    return Path(root) / "mappings.sqlite"


def result_key(problem: Problem, arch: Architecture, objective: Any, mapper: str, seed: int,
               options: dict[str, Any], constraints: Any) -> str:
    shape = {k: v for k, v in problem.to_dict().items() if k not in ("params",)}
    blob = json.dumps({"problem": shape, "hw": arch.fingerprint(), "objective": objective.to_dict(),
                       "mapper": mapper, "seed": seed, "options": options, "constraints": constraints},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class MappingDB:
    """A small SQLite store of MapperResults (see the module docstring)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, timeout=30)
            self.conn.execute(SCHEMA)
            self.conn.commit()
        except (OSError, sqlite3.Error) as exc:
            raise UserError(f"{self.path}: cannot open the mapping database ({exc})") from None

    def get(self, key: str, arch: Architecture) -> MapperResult | None:
        from dse.mappers.result import MapperResult

        row = self.conn.execute("SELECT result FROM results WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        res = MapperResult.from_dict(json.loads(row[0]), arch)
        res.from_cache = True
        return res

    def put(self, key: str, problem: Problem, arch: Architecture, result: MapperResult) -> None:
        self.conn.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?)",
                          (key, time.time(), problem.describe(), arch.name, result.objective.name, result.mapper,
                           json.dumps(result.to_dict(arch))))
        self.conn.commit()

    def __len__(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def close(self) -> None:
        self.conn.close()
