"""`dse zoo export` to a place it cannot write: one line before torch loads; a zoo model is named after
its zoo name, not the exporter's ``main_graph``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest
import torch
from onnx import TensorProto, helper

from compiler.frontend import export_onnx
from costmodel.errors import UserError
from dse import workloads

DSE = [sys.executable, "-c", "from dse.cli import main; main()"]


def _unwritable(tmp_path: Path) -> dict[str, Path]:
    """Output paths that cannot be written: an existing folder, and a path under a regular file."""
    (tmp_path / "out").mkdir()
    (tmp_path / "file").write_text("x")
    return {"is a folder": tmp_path / "out", "not a folder": tmp_path / "file" / "m.onnx"}


@pytest.mark.parametrize("reason", ["is a folder", "not a folder"])
def test_cli_export_to_an_unwritable_path_is_one_line(tmp_path: Path, reason: str) -> None:
    out = _unwritable(tmp_path)[reason]
    proc = subprocess.run([*DSE, "zoo", "export", "keyword_spotting", "-o", str(out)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"error: {out}: cannot write (")
    assert reason in proc.stderr and sorted(p.name for p in tmp_path.iterdir()) == ["file", "out"]
    assert not any((tmp_path / "out").iterdir())


def test_export_onnx_checks_the_path_first(tmp_path: Path) -> None:
    out = _unwritable(tmp_path)["is a folder"]
    with pytest.raises(UserError, match=rf"^{out}: cannot write \(is a folder\)$"):
        export_onnx(torch.nn.Linear(4, 2), (torch.randn(1, 4),), out, dynamo=False)


def test_export_into_new_folders_leaves_only_the_file(tmp_path: Path) -> None:
    out = export_onnx(torch.nn.Linear(4, 2), (torch.randn(1, 4),), tmp_path / "a" / "b" / "m.onnx", dynamo=False)
    assert [p.relative_to(tmp_path).as_posix() for p in sorted(tmp_path.rglob("*"))] == ["a", "a/b", "a/b/m.onnx"]
    onnx.checker.check_model(onnx.load(out))


def test_failed_export_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        Path(args[2]).write_bytes(b"partial")
        raise RuntimeError("unsupported operator")

    monkeypatch.setattr(torch.onnx, "export", fail)
    with pytest.raises(UserError, match="TorchScript exporter failed on Linear: unsupported operator"):
        export_onnx(torch.nn.Linear(4, 2), (torch.randn(1, 4),), tmp_path / "m.onnx", dynamo=False)
    assert list(tmp_path.iterdir()) == []


def test_loaded_zoo_model_is_named_after_the_zoo_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def export(name: str, path: Path, **kwargs: object) -> Path:  # a stand-in: no torch export needed
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "main_graph", [x], [y])
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
        return path

    monkeypatch.setenv("ACCEL_DSE_CACHE", str(tmp_path))
    monkeypatch.setattr(workloads, "export", export)
    assert workloads.load("keyword_spotting").name == "keyword_spotting"
