"""A mapping database that is damaged, another tool's, or holds rows that do not decode: one line, or a miss."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from costmodel.errors import UserError
from costmodel.problem import matmul
from dse.mapdb import MappingDB, SearchKey, Stored, layer_signature
from tests.network.helpers import REPO

PROBLEM = matmul(8, 16, 12)
KEY = SearchKey(layer_signature(PROBLEM), "f" * 16, '{"name":"edp"}', '{"mapper":"fast","seed":0}')
ROW = Stored({"levels": []}, {"energy_pj": 1.0}, 10, 0.5)


def _valid(path: Path) -> Path:
    with MappingDB(path) as db:
        db.put(KEY, PROBLEM, ROW)
    return path


def _sql(path: Path, statement: str) -> None:
    con = sqlite3.connect(path)
    con.execute(statement)
    con.commit()
    con.close()


def _corrupt(path: Path) -> Path:
    """A valid file with everything after its first page (header and schema) replaced by noise."""
    _valid(path)
    with path.open("r+b") as fh:
        fh.seek(4096)
        fh.write(random.Random(0).randbytes(path.stat().st_size - 4096))
    return path


def _foreign(path: Path) -> Path:
    _sql(path, "CREATE TABLE mappings(x)")
    return path


def _other_application(path: Path) -> Path:
    _sql(path, "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
    return path


@pytest.mark.parametrize("make, reason", [(_corrupt, "malformed"), (_foreign, "columns x"),
                                          (_other_application, "it holds the tables notes, not 'mappings'")])
def test_damaged_or_foreign_file_is_one_user_error(tmp_path: Path, make, reason: str) -> None:
    """... and the file is left as it was: another application's SQLite file had a 'mappings' table
    added to it (and its journal switched to WAL)."""
    path = make(tmp_path / "m.sqlite")
    before = path.read_bytes()
    with pytest.raises(UserError) as err, MappingDB(path) as db:
        db.get(KEY)
    text = str(err.value)
    assert text.startswith(f"{path}: not a mapping database of this tool, or damaged") and reason in text
    assert "delete it or pass another --db" in text and "\n" not in text
    assert path.read_bytes() == before


@pytest.mark.parametrize("column, value", [("metrics", "'not json'"), ("mapping", "'[1, 2]'"),
                                           ("mappings_evaluated", "'many'")])
def test_row_that_does_not_decode_is_a_miss_and_is_overwritten(tmp_path: Path, column: str, value: str) -> None:
    path = _valid(tmp_path / "m.sqlite")
    _sql(path, f"UPDATE mappings SET {column} = {value}")
    with MappingDB(path) as db:
        with pytest.warns(UserWarning, match=rf"^{path}: a stored answer does not decode \(.+\); searching it again"):
            assert db.get(KEY) is None
        db.put(KEY, PROBLEM, ROW)
        assert db.get(KEY) == ROW and len(db) == 1


def test_cli_names_the_db_file_and_exits_2(tmp_path: Path) -> None:
    path = _corrupt(tmp_path / "m.sqlite")
    before = path.read_bytes()
    proc = subprocess.run([sys.executable, "-c", "from dse.cli import main; main()", "best-mapping", "--hw", "tiny",
                           "--layer", "examples/layers/small_matmul.yaml", "--db", str(path)],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.stderr.splitlines() == [proc.stderr.strip()] and f"error: {path}: not a mapping database" in proc.stderr
    assert path.read_bytes() == before  # the user's file is left for them to inspect or delete


def test_a_folder_still_cannot_be_opened(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"cannot open the mapping database"):
        MappingDB(tmp_path)


@pytest.mark.parametrize("mapping", ['{"levels": [{"level": "nope"}]}', '{"levels": []}'])
def test_a_stored_mapping_that_no_longer_fits_is_searched_again(tmp_path: Path, mapping: str) -> None:
    """A row that decodes but whose mapping does not fit the layer (an edited or damaged file) stopped
    `dse map` with an error; it is a miss now: a warning, a new search, and the row replaced."""
    from dse.api import load_hw
    from dse.network import best_mapping, map_model
    from tests.network.helpers import FAST, workload

    tiny, path = load_hw("tiny"), tmp_path / "m.sqlite"
    fresh = map_model(workload(), tiny, db=path, workers=1, progress=False, **FAST)
    _sql(path, f"UPDATE mappings SET mapping = '{mapping}'")
    with pytest.warns(UserWarning, match=rf"{path}: the mapping stored for layer \w+ is not valid .*; searching it again"):
        again = map_model(workload(), tiny, db=path, workers=1, progress=False, **FAST)
    assert again.searched == fresh.searched == 2 and again.from_db == 0
    assert [x.mapping for x in again.layers] == [x.mapping for x in fresh.layers]
    assert map_model(workload(), tiny, db=path, workers=1, progress=False, **FAST).from_db == 2  # rows replaced
    _sql(path, f"UPDATE mappings SET mapping = '{mapping}'")
    with pytest.warns(UserWarning, match="searching it again"):
        one = best_mapping(workload().layers()[0].problem, tiny, db=path, **FAST)
    assert one.mapping == fresh.layers[0].mapping and not one.from_db


def test_best_mapping_prints_the_warning_as_a_line(tmp_path: Path) -> None:
    """As `dse map` does (it printed Python's two-line `file:line: UserWarning` form)."""
    path = tmp_path / "m.sqlite"
    cmd = [sys.executable, "-c", "from dse.cli import main; main()", "best-mapping", "--hw", "tiny", "--layer",
           "examples/layers/small_matmul.yaml", "--db", str(path), "--max-evaluations", "200"]
    assert subprocess.run(cmd, capture_output=True, cwd=REPO, timeout=120, check=False).returncode == 0
    _sql(path, """UPDATE mappings SET mapping = '{"levels": []}'""")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert proc.returncode == 0 and "UserWarning" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"warning: {path}: the mapping stored for layer "), proc.stderr


def test_a_database_that_cannot_be_written_costs_the_cache_only(tmp_path: Path) -> None:
    """A full disk or a lock held past the timeout had raised a UserError, which a sweep took for an
    invalid design (pruned for good); the answer is used and not kept, with a warning. (A write
    refused by SQLite stands in for them.)"""
    with MappingDB(tmp_path / "m.sqlite") as db:
        db._con.execute("PRAGMA query_only = 1")
        with pytest.warns(UserWarning, match=r"cannot keep a search's answer in the mapping database; it is used"):
            db.put(KEY, PROBLEM, ROW)
        assert db.get(KEY) is None


def test_a_database_in_a_folder_that_cannot_be_written_is_read(tmp_path: Path) -> None:
    """A shared, read-only cache: SQLite's WAL mode needs its -wal and -shm files beside the file,
    so opening it failed ("unable to open database file", exit 2) though every answer was stored.
    It is read as immutable: stored answers served, a new one used but not kept (warnings)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    path = _valid(folder / "m.sqlite")
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode:
        pytest.skip("chattr +i is not available here (not root, or the file system has no such attribute)")
    try:
        with pytest.warns(UserWarning, match=rf"^{path}: its folder cannot be written \(.+\); its stored answers are "
                          "used, new ones are not kept$"):
            db = MappingDB(path)
        with db:
            assert db.get(KEY) == ROW
            other = SearchKey(KEY.layer_signature, "e" * 16, KEY.objective, KEY.mapper)
            with pytest.warns(UserWarning, match="it is used, not kept"):
                db.put(other, PROBLEM, ROW)
            assert db.get(other) is None
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=False)
    assert sorted(p.name for p in folder.iterdir()) == ["m.sqlite"]
