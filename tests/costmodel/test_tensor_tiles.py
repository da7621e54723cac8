"""tensor_tiles: a tensor's tile words at a stack of levels equal the sizes of its index sets."""

from __future__ import annotations

import itertools

import numpy as np

from costmodel import problem as P
from costmodel.arch import load_architecture
from costmodel.random_mappings import random_mappings
from costmodel.tiles import Geometry, shape_of, tensor_tiles, window_table


def _tile_size(axes, ext: np.ndarray) -> int:
    """Elements of a tile whose dims run over 0..ext-1, by enumerating each axis's values."""
    size = 1
    for ax in axes:
        values = {sum(c * v for (c, _), v in zip(ax.terms, vs))
                  for vs in itertools.product(*(range(ext[e]) for _, e in ax.terms))}
        size *= len(values)
    return size


def test_tensor_tiles_against_sets():
    prob = P.conv2d(4, 6, 11, 11, kernel=3, stride=2, dilation=2, padding=1)
    arch = load_architecture("eyeriss_like")
    shape = shape_of(prob)
    batch = random_mappings(prob, arch, 20, seed=3)
    geo = Geometry.of(batch, shape)
    ext = geo.suffix[0::3]  # every level, and the MACs
    for axes in shape.axes:
        tiles = tensor_tiles(axes, shape.sizes, ext)
        assert np.array_equal(tiles.words, tiles.multi * tiles.single)
        for k, ax in enumerate(ax for ax in axes if not ax.single):
            tab = window_table(ax, shape.sizes)
            assert np.array_equal(tab.row(ext[2]), tiles.rows[k][2])
        for lv, i in itertools.product(range(len(ext)), range(len(batch))):
            assert tiles.words[lv, i] == _tile_size(axes, ext[lv, :, i])
