"""Invariants of the access counts on full-size layers and the shipped configs, where the
walker is too slow: 2,000 random valid mappings per config of a ResNet-50 3x3 layer and a
strided MobileNet-style depthwise layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import costmodel
from costmodel import problem as P
from costmodel.analysis import access_counts
from costmodel.arch import load_architecture
from costmodel.random_mappings import random_mappings

HW = sorted((Path(costmodel.__file__).resolve().parent.parent / "hwconfigs").glob("*.yaml"))
LAYERS = {"resnet50_3x3": P.conv2d(64, 64, 56, 56, kernel=3, padding=1),
          "dw_stride2": P.depthwise_conv2d(32, 112, 112, kernel=3, stride=2, padding=1)}


@pytest.mark.parametrize("layer", sorted(LAYERS))
@pytest.mark.parametrize("path", HW, ids=[p.stem for p in HW])
def test_invariants(path, layer):
    arch = load_architecture(path)
    prob = LAYERS[layer]
    batch = random_mappings(prob, arch, 2000, seed=11)
    ex = access_counts(prob, arch, batch)
    tl = access_counts(prob, arch, batch, model="timeloop")
    I, W, O = 0, 1, 2
    # exact sets reuse and merge at least as much as Timeloop's approximations
    for f in ("fills", "reads", "hops"):
        assert (getattr(ex, f)[:, :, :O] <= getattr(tl, f)[:, :, :O]).all(), f
    assert (ex.updates <= tl.updates).all()
    for acc in (ex, tl):
        for f in ("fills", "reads", "updates", "hops"):
            assert (getattr(acc, f) >= 0).all(), f
        # each weight leaves DRAM at least once; every output arrives in DRAM at least once
        assert (acc.reads[:, 0, W] >= prob.tensor_elements("W")).all()
        assert (acc.updates[:, 0, O] >= prob.tensor_elements("O")).all()
        # the innermost keeper of I and W serves each MAC, merged at most by the fan-outs below it
        fans = [lv.fanout_x * lv.fanout_y for lv in arch.levels]
        for t in (I, W):
            for li in range(len(arch.levels)):
                last = batch.keep[:, li, t] & ~batch.keep[:, li + 1:, t].any(axis=1)
                served = acc.reads[last, li, t]
                assert (served * int(np.prod(fans[li:])) >= prob.macs).all() and (served <= prob.macs).all()
        # a kept input tile is filled at least once per instance
        inst = np.cumprod((batch.spatial_x * batch.spatial_y).prod(axis=2), axis=1)
        for li in range(1, len(arch.levels)):
            kept = batch.keep[:, li, I]
            assert (acc.fills[kept, li, I] >= acc.tile_words[kept, li, I] * inst[kept, li - 1]).all()
