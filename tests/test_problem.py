"""Problem constructors against hand-worked shapes and MAC counts."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costmodel.errors import UserError
from costmodel.problem import (
    Problem,
    conv1d,
    conv2d,
    conv_transpose2d,
    depthwise_conv2d,
    fully_connected,
    matmul,
)


def test_conv2d_resnet_stem():
    # 224x224x3, 7x7/2, pad 3, 64 filters: P = (224 + 6 - 7)//2 + 1 = 112
    p = conv2d(3, 64, 224, 224, kernel=7, stride=2, padding=3)
    assert p.sizes == {"N": 1, "G": 1, "K": 64, "C": 3, "P": 112, "Q": 112, "R": 7, "S": 7}
    assert p.macs == 64 * 3 * 112 * 112 * 7 * 7 == 118_013_952
    # the input window touched: (112-1)*2 + (7-1) + 1 = 229 (the padded 230 minus the unused last row)
    assert p.tensor_shape("I") == (1, 1, 3, 229, 229)
    assert p.tensor_elements("W") == 64 * 3 * 49


def test_depthwise_and_dilation():
    p = depthwise_conv2d(32, 56, 56, kernel=3, padding=2, dilation=2)
    assert p.sizes["G"] == 32 and p.sizes["C"] == 1 and p.sizes["K"] == 1
    assert p.sizes["P"] == 56  # 56 + 4 - 2*2 - 1 + 1
    assert p.macs == 32 * 56 * 56 * 9
    assert p.tensor_shape("I")[3] == 55 * 1 + 2 * 2 + 1


def test_conv1d_and_transposed():
    p = conv1d(128, 96, 668, kernel=25, padding=12)
    assert p.sizes["Q"] == 668 and p.sizes["S"] == 25 and p.sizes["P"] == 1
    t = conv_transpose2d(64, 32, 14, 14, kernel=2, stride=2)
    assert t.macs == 64 * 32 * 14 * 14 * 4
    assert t.tensor_shape("O") == (1, 1, 32, 28, 28)


def test_matmul_and_fc():
    qk = matmul(m=128, k=64, n=128, batch=8)
    assert qk.macs == 8 * 128 * 64 * 128
    assert qk.tensor_shape("W") == (8, 64, 128)
    fc = fully_connected(512, 1000)
    assert fc.macs == 512_000 and fc.tensor_elements("W") == 512_000


def test_identity_ignores_how_it_was_built():
    a = conv2d(16, 16, 8, 8, padding=1)
    b = conv2d(16, 16, 10, 10, padding=0)  # same output 8x8 and same touched input window
    assert a == b and hash(a) == hash(b)
    assert a != conv2d(16, 32, 8, 8, padding=1)


@given(
    c=st.integers(1, 64), k=st.integers(1, 64), h=st.integers(1, 40), r=st.integers(1, 5),
    stride=st.integers(1, 3), pad=st.integers(0, 3), groups=st.sampled_from([1, 2, 4]),
)
def test_round_trip_json(c, k, h, r, stride, pad, groups):
    if h + 2 * pad < r:
        with pytest.raises(UserError):
            conv2d(c * groups, k * groups, h, h, kernel=r, stride=stride, padding=pad, groups=groups)
        return
    p = conv2d(c * groups, k * groups, h, h, kernel=r, stride=stride, padding=pad, groups=groups)
    q = Problem.from_dict(json.loads(json.dumps(p.to_dict())))
    assert q == p and q.params == p.params
    assert Problem.from_dict({"kind": "conv2d", **dict(p.params)}) == p
    # MACs equal the direct count of the loop nest
    assert p.macs == groups * k * c * p.sizes["P"] * p.sizes["Q"] * r * r


def test_bad_input_is_a_user_error():
    with pytest.raises(UserError, match="groups"):
        conv2d(10, 16, 8, 8, groups=4)
    with pytest.raises(UserError, match="kind"):
        Problem.from_dict({"kind": "nope"})


def test_numpy_arguments_give_the_plain_layer():
    """Its JSON and database signature are those of the layer built with Python ints (an np.int64
    psum_bits gave another signature, hence a second search; np ints did not serialize)."""
    import numpy as np

    from dse.mapdb import layer_signature

    plain = matmul(16, 16, 24)
    for other in (matmul(np.int64(16), 16, 24), matmul(16, 16, 24, psum_bits=np.int64(32)),
                  conv2d(np.int32(3), 8, 10, 10, kernel=(np.int64(3), 3))):
        doc = json.dumps(other.to_dict())
        assert type(other.psum_bits) is int
        if other.kind == "matmul":
            assert other == plain and layer_signature(other) == layer_signature(plain)
            assert doc == json.dumps(plain.to_dict())
    assert conv2d(np.int32(3), 8, 10, 10, kernel=(np.int64(3), 3)).to_dict() == conv2d(3, 8, 10, 10, kernel=3).to_dict()
