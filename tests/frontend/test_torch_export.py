"""Small torch models through both exporters (dynamo and TorchScript), then import.

Expected MACs and parameters are worked out by hand from the module definitions (comments). BN
layers get random running statistics so that the exporters' own BN folding leaves a real bias.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from compiler.frontend import export_onnx, import_onnx

torch.set_num_threads(1)


class ConvNet(nn.Module):
    """1x3x8x8 in."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.gd = nn.Conv2d(8, 4, 3, padding=2, dilation=2, groups=2)
        self.up = nn.ConvTranspose2d(4, 2, 2, stride=2)
        self.fc = nn.Linear(2, 5)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)
            self.bn.bias.uniform_(-1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.c1(x)))
        x = nn.functional.relu6(self.dw(x))
        x = self.up(self.gd(x))
        x = nn.functional.max_pool2d(x, 2)
        return self.fc(x.mean((2, 3)))


# c1: K8 C3 3x3 on an 4x4 output (8 -> (8+2-3)//2+1 = 4): 8*3*9*16 = 3456; params 216 + 8 (folded BN)
# dw: 8 groups of 1x1 channels, 3x3, 4x4 output: 8*9*16 = 1152; params 72 + 8
# gd: groups 2, K4 C8 (4 in per group), 3x3 dil 2 pad 2 keeps 4x4: 4*4*9*16 = 2304; params 4*4*9 + 4 = 148
# up: ConvTranspose C4 -> K2, 2x2 s2 on 4x4 input: 4*2*4*16 = 512; params 4*2*2*2 + 2 = 34
# fc: 2 -> 5: 10; params 15
CONVNET_MACS = {"conv": [3456, 1152, 2304], "convT": 512, "fc": 10}
CONVNET_TOTAL_MACS = 3456 + 1152 + 2304 + 512 + 10
CONVNET_PARAMS = 224 + 80 + 148 + 34 + 15


class SeqNet(nn.Module):
    """1x6x16 in: attention (2 heads of 8), conv1d, LSTM, bidirectional GRU."""

    def __init__(self) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.qkv = nn.Linear(16, 48)
        self.conv = nn.Conv1d(16, 8, 3, padding=1)
        self.lstm = nn.LSTM(8, 6)
        self.gru = nn.GRU(6, 3, bidirectional=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.ln(x)).reshape(1, 6, 3, 2, 8).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) / 8**0.5, -1)
        o = (a @ v).transpose(1, 2).reshape(1, 6, 16)
        y = self.conv(o.transpose(1, 2))  # [1, 8, 6]
        z, _ = self.lstm(y.permute(2, 0, 1))  # [T=6, batch=1, 8] -> [6, 1, 6]
        g, _ = self.gru(z)
        return g


# qkv: rows 6, 16 -> 48: 4608                      params 768 + 48
# QK^T: batch 2 heads, 6x8 @ 8x6: 2*6*6*8 = 576     PV: 2*6*8*6 = 576
# conv1d: K8 C16 k3 length 6: 8*16*3*6 = 2304        params 384 + 8
# LSTM(8 -> 6), T=6: x_gates 6*8*24 = 1152, h_gates 6*6*24 = 864   params 4*6*(8+6) + 2*24 = 384
# GRU(6 -> 3, bidirectional), T=6: x_gates 2*6*6*9 = 648, h_gates 2*6*3*9 = 324   params 2*(9*6 + 9*3 + 18) = 198
SEQNET_MATMULS = sorted([4608, 576, 576, 2304, 1152, 864, 648, 324])
SEQNET_PARAMS = 32 + 816 + 392 + 384 + 198  # LayerNorm 16 + 16 first


@pytest.fixture(scope="module", params=[True, False], ids=["dynamo", "torchscript"])
def exported(request, tmp_path_factory):
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("export")
    paths = {}
    for name, model, x in (("convnet", ConvNet(), torch.randn(1, 3, 8, 8)),
                           ("seqnet", SeqNet(), torch.randn(1, 6, 16))):
        paths[name] = export_onnx(model, (x,), folder / f"{name}.onnx", dynamo=request.param)
    return paths


def test_export_writes_one_file_only(exported):
    folder = exported["convnet"].parent
    assert sorted(p.name for p in folder.iterdir()) == ["convnet.onnx", "seqnet.onnx"]


def _assert_no_local_paths(path) -> None:
    """Neither the checkout's folder nor torch's installation folder appears in the file's bytes."""
    raw = path.read_bytes()
    for folder in {__file__.rsplit("/tests/", 1)[0], torch.__file__.rsplit("/torch/", 1)[0]}:
        assert folder.encode() not in raw, (path.name, folder)


def test_export_holds_no_paths_of_this_machine(exported):
    """The dynamo exporter's per-node stack traces name the checkout and the venv, so a model
    exported from two checkouts differed byte for byte (and all compiled from it): they are
    dropped; the other node metadata (name scopes) stays."""
    import onnx

    for path in exported.values():
        _assert_no_local_paths(path)
        keys = {p.key for n in onnx.load(str(path)).graph.node for p in n.metadata_props}
        assert "pkg.torch.onnx.stack_trace" not in keys
        if keys:  # (the TorchScript exporter writes no node metadata)
            assert "pkg.torch.onnx.name_scopes" in keys, keys


def test_convnet_macs_and_params(exported):
    wl = import_onnx(exported["convnet"])
    macs = {x.op_type: [] for x in wl.mac_layers()}
    for x in wl.mac_layers():
        macs[x.op_type].append(x.macs)
    assert macs["Conv"] == CONVNET_MACS["conv"]
    assert macs["ConvTranspose"] == [CONVNET_MACS["convT"]]
    assert sum(macs.get("Gemm", macs.get("MatMul", []))) == CONVNET_MACS["fc"]
    assert wl.total_macs == CONVNET_TOTAL_MACS
    assert wl.total_params == CONVNET_PARAMS
    posts = [x.post_ops for x in wl.mac_layers() if x.op_type == "Conv"]
    assert posts == [["Relu"], ["Relu6"], []]
    dw = wl.mac_layers()[1]
    assert dw.attrs["depthwise"] and dw.problem.sizes["G"] == 8
    assert all(t.bits == 32 for x in wl.mac_layers() for t in x.problem.tensors)


def test_seqnet_attention_conv1d_and_recurrent_layers(exported):
    wl = import_onnx(exported["seqnet"])
    assert sorted(x.macs for x in wl.mac_layers()) == SEQNET_MATMULS
    assert wl.total_params == SEQNET_PARAMS
    batched = [x for x in wl.mac_layers() if x.op_type == "MatMul" and x.problem.sizes["B"] == 2]
    assert len(batched) == 2  # QK^T and PV: one batch entry per head
    assert [x.problem.kind for x in wl.mac_layers() if x.op_type == "Conv"] == ["conv1d"]
    h_gates = {x.op_type: x for x in wl.mac_layers() if x.name.endswith("/h_gates")}
    assert h_gates["LSTM"].attrs["recurrent"] and h_gates["LSTM"].attrs["steps"] == 6
    step = h_gates["GRU"].attrs["step_problem"]
    assert step.macs * 6 == h_gates["GRU"].macs  # one step (2 directions x 1 row x 3 -> 9) times T
    kinds = {x.name.rsplit("/", 1)[-1]: x.kind for x in wl.layers() if x.op_type == "LSTM"}
    assert kinds == {"x_gates": "mac", "h_gates": "mac", "cell": "vector"}
    assert wl.layer(next(x.name for x in wl.layers() if x.op_type == "LSTM" and x.kind == "vector")).vector_ops \
        == 6 * 6 * (4 * 3 + 4 + 3 + 2)  # T6 x H6 x (gate adds with 2 biases, 4 activations, c and h updates)


class _Broken(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("this model cannot be traced")


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
def test_failed_export_leaves_no_file(tmp_path, dynamo):
    from costmodel.errors import UserError

    with pytest.raises(UserError, match="exporter failed on _Broken"):
        export_onnx(_Broken(), (torch.zeros(1),), tmp_path / "b.onnx", dynamo=dynamo)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
def test_an_interrupted_export_is_an_interrupt_not_a_failure(tmp_path, monkeypatch, dynamo):
    """torch.onnx wraps what stops torch.export in its own error ("Failed to export the model with
    torch.export"): a `kill` (SIGTERM, raised as KeyboardInterrupt by the CLI) during an export had
    read as "the dynamo exporter failed", exit 2, instead of the interrupt (exit 143 / 130)."""
    def export(*_args, **_kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Failed to export the model with torch.export.") from exc

    monkeypatch.setattr(torch.onnx, "export", export)
    with pytest.raises(KeyboardInterrupt):
        export_onnx(nn.Linear(2, 2), (torch.zeros(1, 2),), tmp_path / "b.onnx", dynamo=dynamo)
    assert list(tmp_path.iterdir()) == []


def test_dynamo_refuses_old_opsets(tmp_path):
    from costmodel.errors import UserError

    with pytest.raises(UserError, match="opset >= 18"):
        export_onnx(nn.Linear(2, 2), (torch.zeros(1, 2),), tmp_path / "l.onnx", opset=17)
    assert list(tmp_path.iterdir()) == []


class _MhaBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2, batch_first=True)
        self.ff = nn.Linear(16, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, _ = self.mha(x, x, x, need_weights=False)
        return nn.functional.gelu(self.ff(x + a))


# seq 6, dim 16, 2 heads of 8: in-proj 6*16*48 = 4608; QK^T 2*6*6*8 = 576; PV 576;
# out-proj 6*16*16 = 1536; ff 6*16*32 = 3072
MHA_MACS = 4608 + 576 + 576 + 1536 + 3072


def _legacy_dynamic(tmp_path, axes):
    import warnings

    path = tmp_path / "mha.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_MhaBlock().eval(), (torch.randn(1, 6, 16),), str(path), dynamo=False,
                          input_names=["x"], dynamic_axes={"x": axes})
    return path


def test_symbolic_batch_is_fixed_to_one_through_shape_plumbing(tmp_path):
    # the TorchScript exporter computes every reshape target with Shape/Gather/Concat at run time
    path = _legacy_dynamic(tmp_path, {0: "batch"})
    with pytest.warns(UserWarning, match=r"x\[0\]=batch"):
        wl = import_onnx(path)
    assert wl.total_macs == MHA_MACS
    assert sorted(x.problem.sizes["B"] for x in wl.mac_layers()) == [1, 1, 1, 2, 2]
    assert wl.mac_layers()[-1].post_ops == ["Gelu"]


def test_symbolic_sequence_baked_into_constants_is_reported(tmp_path):
    from costmodel.errors import UserError

    path = _legacy_dynamic(tmp_path, {0: "batch", 1: "seq"})
    with pytest.warns(UserWarning, match=r"x\[1\]=seq"), pytest.raises(UserError, match=r"reshapes .* x\[1\]=seq"):
        import_onnx(path)
    assert import_onnx(path, input_shapes={"x": (1, 6, 16)}).total_macs == MHA_MACS


class _Branchy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda x: torch.relu(x) + 1, lambda x: x - 1, (x,))


def test_stack_traces_are_dropped_inside_subgraphs_too(tmp_path):
    """torch.cond exports as an If node whose branch graphs carry their own stack traces."""
    path = export_onnx(_Branchy(), (torch.randn(2, 3),), tmp_path / "branchy.onnx")
    _assert_no_local_paths(path)
    import onnx

    assert any(n.op_type == "If" for n in onnx.load(str(path)).graph.node)
