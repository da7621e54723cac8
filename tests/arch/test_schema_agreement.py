"""`dse schema hw` (the JSON Schema editors complete and check with) against the loader: a config the
loader accepts passes the schema, and the schema refuses what the loader refuses, except the rules
between fields no JSON Schema can say (listed). The reference is the jsonschema package."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from costmodel.arch import HWCONFIGS, HwConfig, architecture_from_dict, load_config_data
from costmodel.errors import UserError
from tests.schema_validator import validator_of


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    return validator_of(HwConfig)


def _loads(data: Any) -> bool:
    try:
        architecture_from_dict(copy.deepcopy(data))
    except UserError:
        return False
    return True


def _tiny() -> dict[str, Any]:
    data, _, _ = load_config_data("tiny")  # DRAM, buffer (sram, 2x2 fan-out), rf (regfile)
    return data


def _level(i: int, key: str, value: Any) -> Callable[[dict], None]:
    return lambda d: d["levels"][i].__setitem__(key, value)


def _top(key: str, value: Any) -> Callable[[dict], None]:
    return lambda d: d.__setitem__(key, value)


def _drop_capacity(d: dict) -> None:
    del d["levels"][1]["capacity"]


def _constraint(**fields: Any) -> Callable[[dict], None]:
    return lambda d: d.__setitem__("constraints", [{"level": "rf", **fields}])


VARIANTS: dict[str, tuple[Callable[[dict], None], bool]] = {
    # name: (edit of tiny.yaml, the loader accepts it)
    "capacity as a string of words": (_level(2, "capacity", "16"), True),
    "capacity 16.0": (_level(2, "capacity", 16.0), True),
    "capacity in kib, lower case": (_level(1, "capacity", "4 kib"), True),
    "capacity 2 kwords": (_level(1, "capacity", "2 kwords"), True),
    "capacity 16.5 words": (_level(2, "capacity", 16.5), False),
    "capacity 'lots'": (_level(2, "capacity", "lots"), False),
    "capacity '-4 KiB'": (_level(1, "capacity", "-4 KiB"), False),
    "capacity 4 GHz": (_level(1, "capacity", "4 GHz"), False),
    "capacity 0": (_level(2, "capacity", 0), False),
    "capacity 2**60 words": (_level(2, "capacity", 2**60), False),
    "sram without capacity": (_drop_capacity, False),
    "regfile capacity null": (_level(2, "capacity", None), False),
    "DRAM capacity null": (_level(0, "capacity", None), True),
    "DRAM holding two roles": (_level(0, "holds", ["I", "W"]), False),
    "a role held twice": (_level(2, "holds", ["I", "I"]), False),
    "blank level name": (_level(2, "name", " "), False),
    "blank config name": (_top("name", "  "), False),
    "clock 5e8 Hz": (_top("clock", 5e8), True),
    "clock '200 mhz'": (_top("clock", "200 mhz"), True),
    "clock -5": (_top("clock", -5), False),
    "clock 'fast'": (_top("clock", "fast"), False),
    "clock '5e8' without a unit": (_top("clock", "5e8"), False),
    "clock 1e16 Hz": (_top("clock", 1e16), False),
    "double buffered and ideal overlap": (_level(1, "ideal_overlap", True), False),
    "ideal overlap alone": (lambda d: d["levels"][1].update(double_buffered=False, ideal_overlap=True), True),
    "constraint order": (_constraint(order=["C", "K"]), True),
    "constraint order with a dim twice": (_constraint(order=["C", "C"]), False),
    "unknown field": (_level(1, "colour", "red"), False),
    "a level named like a breakdown key": (_level(2, "name", "mac"), False),
    "DRAM not first": (lambda d: d["levels"].reverse(), False),
    "a second DRAM": (_level(1, "kind", "dram"), False),
    "capacity '4\\x85KiB' (no \\s of Python's)": (_level(1, "capacity", "4\x85KiB"), False),
}

# rules between fields (or values JSON Schema reads otherwise) that only the loader checks
LOADER_ONLY: dict[str, Callable[[dict], None]] = {
    "word_bits 8.0 (JSON Schema's integer includes 8.0)": _level(2, "word_bits", 8.0),
    "vdd outside the node's range": lambda d: d["technology"].__setitem__("vdd", 3.0),
    "mac.count not the product of the fan-outs": lambda d: d["mac"].__setitem__("count", 7),
    "systolic level not a level's name": _top("systolic", {"dataflow": "WS", "level": "nope"}),
    "a tensor kept and bypassed": _constraint(keep=["W"], bypass=["W"]),
    "a size string of 0": _level(1, "capacity", "0 KiB"),
    "a size string past 2**53 words": _level(1, "capacity", "1e30 GiB"),
    "a clock string below 1 Hz": _top("clock", "0.5 Hz"),
    "two levels of one name": _level(2, "name", "buffer"),
}


@pytest.mark.parametrize("path", sorted(HWCONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_configs_pass_the_schema(validator, path):
    data, _, _ = load_config_data(path)
    assert _loads(data)
    assert not list(validator.iter_errors(data))


@pytest.mark.parametrize("name", VARIANTS)
def test_schema_and_loader_agree(validator, name):
    edit, accepted = VARIANTS[name]
    data = _tiny()
    edit(data)
    assert _loads(data) is accepted, "the loader's verdict changed: fix the list"
    errors = list(validator.iter_errors(data))
    assert (not errors) is accepted, [e.message for e in errors]


@pytest.mark.parametrize("name", LOADER_ONLY)
def test_rules_only_the_loader_checks(validator, name):
    data = _tiny()
    LOADER_ONLY[name](data)
    assert not _loads(data)
    assert not list(validator.iter_errors(data))  # documented in docs/hwconfig.md
