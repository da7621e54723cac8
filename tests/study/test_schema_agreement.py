"""`dse schema study` against the study loader (the jsonschema package as the reference): a file the
loader accepts passes the schema; the schema refuses the mistakes it can state (a knob named like a
metric or a table column, a constraint given twice, a list as a choice)."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from costmodel.errors import UserError
from dse.study.schema import StudySpec, load_study
from tests.schema_validator import validator_of
from tests.study.helpers import small_study


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    return validator_of(StudySpec)


def _knob(name: str, spec: dict) -> dict:
    return {"knobs": {"rows": {"path": "levels.buffer.fanout.y", "choices": [2, 4]}, name: spec}}


VARIANTS = {
    # name: (fields over small_study's, the loader accepts it)
    "as written": ({}, True),
    "a unicode knob name": (_knob("größe", {"path": "levels.rf.capacity", "choices": [8, 16]}), True),
    "a knob named feasible": (_knob("feasible", {"path": "levels.rf.capacity", "choices": [8, 16]}), False),
    "a knob named like a metric": (_knob("area_mm2", {"path": "levels.rf.capacity", "choices": [8, 16]}), False),
    "a dotted knob name": (_knob("a.b", {"path": "levels.rf.capacity", "choices": [8, 16]}), False),
    "a constraint twice": ({"constraints": ["area_mm2 <= 1", "area_mm2 <= 1"]}, False),
    "a list as a choice": (_knob("holds", {"path": "levels.rf.holds", "choices": [["I", "W"], ["I", "W", "O"]]}),
                           False),
    "boolean choices": (_knob("mc", {"path": "levels.buffer.multicast", "choices": [True, False]}), True),
    "null, an unset optional field": (_knob("bw", {"path": "levels.buffer.read_bw", "choices": [None, 4]}), True),
    "a choice twice": (_knob("rf", {"path": "levels.rf.capacity", "choices": [8, 16, 8.0]}), False),
    "a knob named like a keyword": (_knob("lambda", {"path": "levels.rf.capacity", "choices": [8, 16]}), False),
    "an empty study name": ({"name": ""}, False),
    "a study name with a space": ({"name": "my study"}, False),
    "a unicode study name": ({"name": "größe-v1.2"}, True),
    "a workload named like a keyword": ({"workloads": [{"name": "class", "layers": [{"kind": "matmul", "m": 8,
                                                                                     "k": 8, "n": 8}]}]}, False),
    "a dashed workload name": ({"workloads": [{"name": "k-ws", "layers": [{"kind": "matmul", "m": 8, "k": 8,
                                                                           "n": 8}]}]}, False),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_schema_and_loader_agree(tmp_path, validator, name):
    fields, accepted = VARIANTS[name]
    path = small_study(tmp_path, **fields)
    data = yaml.safe_load(path.read_text())
    try:
        load_study(path)
        loads = True
    except UserError:
        loads = False
    assert loads is accepted, "the loader's verdict changed: fix the list"
    errors = list(validator.iter_errors(data))
    assert (not errors) is accepted, [e.message for e in errors]
