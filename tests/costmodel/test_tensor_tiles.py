"""tile_words: a tensor's tile words at every level equal the sizes of its index sets."""

from __future__ import annotations

import itertools

from costmodel import problem as P
from costmodel.arch import load_architecture
from costmodel.random_mappings import random_mappings
from costmodel.tiles import shape_of, tile_words


def _tile_size(axes, ext: list[int]) -> int:
    """Elements of a tile whose dims run over 0..ext-1, by enumerating each axis's values."""
    size = 1
    for ax in axes:
        values = {sum(c * v for (c, _), v in zip(ax.terms, vs))
                  for vs in itertools.product(*(range(ext[e]) for _, e in ax.terms))}
        size *= len(values)
    return size


def test_tile_words_against_sets():
    prob = P.conv2d(4, 6, 11, 11, kernel=3, stride=2, dilation=2, padding=1)
    arch = load_architecture("eyeriss_like")
    shape = shape_of(prob)
    batch = random_mappings(prob, arch, 20, seed=3)
    words = tile_words(prob, batch.temporal, batch.spatial_x, batch.spatial_y)  # [B, L, T]
    f = (batch.temporal * batch.spatial_x * batch.spatial_y)[:, :, list(shape.active)]  # [B, L, D]
    for i, lv in itertools.product(range(len(batch)), range(1, len(arch.levels))):
        ext = f[i, lv:].prod(axis=0).tolist()  # each dim's extent in a tile at that level
        for ti, axes in enumerate(shape.axes):
            assert words[i, lv, ti] == _tile_size(axes, ext)
    for ti, t in enumerate(prob.tensors):
        assert (words[:, 0, ti] == prob.tensor_elements(t.name)).all()
