"""A storage level for hand-built architectures: every field explicit, so each test states only what it varies."""

from __future__ import annotations

from types import SimpleNamespace as NS


def level(name: str, **kw: object) -> NS:
    base = {"name": name, "holds": ("I", "W", "O"), "capacity_words": None, "fanout_x": 1, "fanout_y": 1,
            "multicast": True, "spatial_reduction": True, "double_buffered": True, "ideal_overlap": False,
            "read_bw": None, "write_bw": None, "read_pj": 0.0, "write_pj": 0.0, "hop_pj": 0.0, "leak_mw": 0.0,
            "instances": 1}
    lv = NS(**{**base, **kw})
    lv.fanout = lv.fanout_x * lv.fanout_y  # as costmodel.arch.Level's property
    return lv
