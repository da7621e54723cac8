"""Tiny configs for checking the mappers against plain enumeration (not modelled on any chip)."""

from costmodel.arch import architecture_from_dict


def _level(name, kind, holds, capacity=None, fanout=None, **kw):
    out = {"name": name, "kind": kind, "holds": holds, "word_bits": 8, **kw}
    if capacity is not None:
        out["capacity"] = capacity
    if fanout is not None:
        out["fanout"] = dict(zip("xy", fanout))
    return out


def two_level(systolic: bool = False, padding=None, **pe):
    """DRAM -> a 2x1 mesh of PEs with an 8-word register file each (2 MACs); ``padding``: the
    ``mapspace.padding`` block, if any."""
    data = {
        "name": "two_level" + ("_ws" if systolic else ""), "clock": "500 MHz",
        "technology": {"node_nm": 45}, "mac": {"datatype": "int8"},
        "levels": [
            _level("DRAM", "dram", ["I", "W", "O"], read_bw=2, write_bw=2, fanout=(2, 1)),
            _level("rf", "regfile", ["I", "W", "O"], capacity=8, double_buffered=False, **pe),
        ],
    }
    if systolic:
        data["systolic"] = {"dataflow": "WS", "level": "DRAM"}
    if padding is not None:
        data["name"] += "_pad"
        data["mapspace"] = {"padding": padding}
    return architecture_from_dict(data)


def wide(padding=None):
    """DRAM (unlimited bandwidth) -> a 16x1 mesh of PEs with a 16-word register file each."""
    data = {
        "name": "wide16", "clock": "500 MHz", "technology": {"node_nm": 45}, "mac": {"datatype": "int8"},
        "levels": [
            _level("DRAM", "dram", ["I", "W", "O"], fanout=(16, 1)),
            _level("rf", "regfile", ["I", "W", "O"], capacity=16),
        ],
    }
    if padding is not None:
        data["mapspace"] = {"padding": padding}
    return architecture_from_dict(data)


def three_level():
    """DRAM -> 32-word buffer -> 2x1 PEs whose register file keeps only W and O (4 words)."""
    return architecture_from_dict({
        "name": "three_level", "clock": "500 MHz", "technology": {"node_nm": 45}, "mac": {"datatype": "int8"},
        "levels": [
            _level("DRAM", "dram", ["I", "W", "O"], read_bw=4, write_bw=4),
            _level("buf", "sram", ["I", "W", "O"], capacity=32, read_bw=2, write_bw=2, fanout=(2, 1),
                   multicast=True, spatial_reduction=True),
            _level("rf", "regfile", ["W", "O"], capacity=4),
        ],
    })


def scalar():
    """DRAM -> one PE with an 8-word register file: every fan-out is 1 (no spatial array)."""
    return architecture_from_dict({
        "name": "scalar", "clock": "500 MHz", "technology": {"node_nm": 45}, "mac": {"datatype": "int8"},
        "levels": [
            _level("DRAM", "dram", ["I", "W", "O"], read_bw=2, write_bw=2),
            _level("rf", "regfile", ["I", "W", "O"], capacity=8, double_buffered=False),
        ],
    })
