"""Every zoo model: importer totals == forward-hook totals (exactly), and ONNX Runtime == torch.

Each model is exported once per session with the legacy (TorchScript) exporter, which is about
10x faster here; the small models are also exported with the dynamo exporter and checked the same
way, so both exporters' graphs are covered.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from compiler.frontend import import_onnx
from dse import workloads
from tests.zoo.hook_count import count

SMALL = ("keyword_spotting", "action_segmentation", "speech_encoder", "eye_segmentation")
CASES = [(n, False) for n in workloads.names()] + [(n, True) for n in SMALL]
IDS = [f"{n}-{'dynamo' if d else 'legacy'}" for n, d in CASES]


class _Memo(dict):
    """A dict that computes a missing value once with ``make(key)``."""

    def __init__(self, make: Callable[[Any], Any]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: Any) -> Any:
        self[key] = self.make(key)
        return self[key]


@pytest.fixture(scope="session")
def zoo_exports(tmp_path_factory: pytest.TempPathFactory) -> _Memo:
    """(model, dynamo) -> its ONNX file, exported on first use and reused for the session."""
    folder = tmp_path_factory.mktemp("zoo")

    def make(key: tuple[str, bool]) -> Path:
        name, dynamo = key
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return workloads.export(name, folder / f"{name}-{dynamo}.onnx", dynamo=dynamo)

    return _Memo(make)


@pytest.fixture(scope="session")
def built() -> _Memo:
    """name -> (model, example inputs), built once (seed 0, the same weights ``export`` uses)."""
    return _Memo(workloads.build)


@pytest.mark.parametrize(("name", "dynamo"), CASES, ids=IDS)
def test_totals_equal_hook_count(name: str, dynamo: bool, zoo_exports, built) -> None:
    model, inputs = built[name]
    reference = count(model, inputs)
    workload = import_onnx(zoo_exports[name, dynamo])
    assert workload.total_macs == sum(x.macs for x in reference)
    assert workload.total_params == sum(x.params for x in reference)
    # Layer by layer too (as multisets of (MACs, params), since the two sides name layers differently).
    imported = Counter((layer.macs, layer.params) for layer in workload.mac_layers())
    hooked = Counter((x.macs, x.params) for x in reference if x.kind != "LayerNorm")
    assert imported == hooked


@pytest.mark.parametrize(("name", "dynamo"), CASES, ids=IDS)
def test_onnxruntime_matches_torch(name: str, dynamo: bool, zoo_exports, built) -> None:
    import onnxruntime as ort

    model, inputs = built[name]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1      # the CI box has 2 cores shared by several jobs
    session = ort.InferenceSession(str(zoo_exports[name, dynamo]), options, providers=["CPUExecutionProvider"])
    # the graph's inputs carry the catalog's names (what `dse zoo list` shows and --input takes)
    assert [i.name for i in session.get_inputs()] == list(workloads.info(name).inputs)
    feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs, strict=True)}
    got = session.run(None, feeds)
    with torch.no_grad():
        want = model(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = w.numpy()
        assert g.shape == w.shape
        scale = float(np.abs(w).max())
        assert scale > 1e-3, "output is (near) zero: the comparison would prove nothing"
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-5 * scale)


DOCS = Path(__file__).resolve().parents[2] / "docs" / "zoo.md"


def test_docs_table_is_the_measured_one(zoo_exports) -> None:
    """docs/zoo.md's MACs / params / MAC-layer counts are those of the imported graphs."""
    documented = {}
    table = DOCS.read_text().split("<!-- zoo-table:begin -->")[1].split("<!-- zoo-table:end -->")[0]
    for line in table.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            documented[cells[0].strip("`")] = tuple(int(c.replace(",", "")) for c in cells[4:7])
    assert list(documented) == workloads.names()
    for name in workloads.names():
        workload = import_onnx(zoo_exports[name, False])
        assert documented[name] == (workload.total_macs, workload.total_params, len(workload.mac_layers())), name
