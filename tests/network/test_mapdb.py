"""The mapping database: keys that must (not) match, and several processes writing at once."""

from __future__ import annotations

import subprocess
import sys

from costmodel.problem import Problem, conv2d, matmul
from dse import mapdb
from dse.mapdb import MappingDB, SearchKey, Stored, layer_signature
from tests.network.helpers import REPO

ROW = Stored({"levels": []}, {"energy_pj": 1.0}, 10, 0.5)


def test_signature_ignores_constructor_params_only() -> None:
    a = conv2d(4, 8, 8, 8, 3)
    same = Problem.from_dict({k: v for k, v in a.to_dict().items() if k != "params"})
    assert same.params != a.params and layer_signature(same) == layer_signature(a)
    assert layer_signature(conv2d(4, 8, 8, 8, 3, stride=2)) != layer_signature(a)
    assert layer_signature(matmul(8, 16, 12)) != layer_signature(matmul(8, 12, 16))


def test_hit_miss_and_model_version(tmp_path, monkeypatch) -> None:
    p = matmul(8, 16, 12)
    key = SearchKey(layer_signature(p), "f" * 16, '{"name":"edp"}', '{"mapper":"fast","seed":0}')
    with MappingDB(tmp_path / "db.sqlite") as db:
        assert db.get(key) is None
        db.put(key, p, ROW)
        assert db.get(key) == ROW
        assert db.get(SearchKey(key.layer_signature, "e" * 16, key.objective, key.mapper)) is None
        monkeypatch.setattr(mapdb, "model_version", lambda: "changed-model")
        assert db.get(key) is None  # a changed cost model never serves the old answer


def test_journal_is_wal(tmp_path) -> None:
    with MappingDB(tmp_path / "db.sqlite") as db:
        assert db._con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


_WRITER = """
import sys
from costmodel.problem import matmul
from dse.mapdb import MappingDB, SearchKey, Stored, layer_signature
db = MappingDB(sys.argv[1])
for i in range(40):
    p = matmul(8, 16, 1 + i)
    db.put(SearchKey(layer_signature(p), sys.argv[2], "edp", "fast"), p, Stored({"i": i}, {}, i, 0.0))
"""


def test_several_processes_write_at_once(tmp_path) -> None:
    path = tmp_path / "db.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag], cwd=REPO) for tag in ("a" * 16, "b" * 16)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with MappingDB(path) as db:
        assert len(db) == 80
