"""DRAM layouts of I/O tensors: how a user's array becomes the bytes a binary expects, and back.

A layout is the axis letters of the tensor (``NCHW``, ``NC``, ``NLC``...: plain row-major), with
an optional channel-blocking suffix ``c<L>`` (``NCHWc16``): axis 1 is split into ``ceil(C/L)``
blocks of ``L`` lanes and the lane axis moves innermost, ``(N, C/L, H, W, L)`` -- one DMA vector
is then one contiguous ``L``-lane row. Channels past ``C`` are filled with the zero point.
Multi-byte elements are little-endian.
"""

from __future__ import annotations

import numpy as np

from compiler.isa.program import IOTensor, parse_layout
from costmodel.errors import UserError

NUMPY_DTYPES = {"int8": "i1", "uint8": "u1", "int16": "<i2", "int32": "<i4", "float32": "<f4"}


def dram_shape(t: IOTensor) -> tuple[int, ...]:
    """Shape of the tensor as laid out in DRAM."""
    lanes = parse_layout(t.layout, len(t.shape))
    if lanes is None:
        return t.shape
    n, c, *rest = t.shape
    return (n, -(-c // lanes), *rest, lanes)


def nbytes(t: IOTensor) -> int:
    return int(np.prod(dram_shape(t))) * np.dtype(NUMPY_DTYPES[t.dtype]).itemsize


def pack(array: np.ndarray, t: IOTensor) -> bytes:
    """The DRAM bytes of ``array`` (logical shape ``t.shape``) in ``t.layout``."""
    a = np.asarray(array)
    if a.shape != t.shape:
        raise UserError(f"input {t.name!r}: shape {a.shape}, the binary expects {t.shape}")
    dtype = np.dtype(NUMPY_DTYPES[t.dtype])
    if dtype.kind in "iu":
        if a.dtype.kind not in "iub":
            raise UserError(f"input {t.name!r}: {a.dtype} values, the binary expects {t.dtype} "
                            f"(quantize first: q = round(x / {t.scale}) + {t.zero_point})")
        info = np.iinfo(dtype)
        if a.size and (a.min() < info.min or a.max() > info.max):
            raise UserError(f"input {t.name!r}: values outside the {t.dtype} range [{info.min}, {info.max}]")
    a = a.astype(dtype)
    lanes = parse_layout(t.layout, len(t.shape))
    if lanes is not None:
        n, c, *rest = t.shape
        blocks = -(-c // lanes)
        padded = np.full((n, blocks * lanes, *rest), t.zero_point, dtype=a.dtype)
        padded[:, :c] = a
        a = np.moveaxis(padded.reshape(n, blocks, lanes, *rest), 2, -1)
    return np.ascontiguousarray(a).tobytes()


def unpack(data: bytes, t: IOTensor) -> np.ndarray:
    """The logical array (shape ``t.shape``) stored as ``data`` in ``t.layout``."""
    if len(data) != nbytes(t):
        raise UserError(f"tensor {t.name!r}: {len(data)} bytes, layout {t.layout} of {t.shape} needs {nbytes(t)}")
    a = np.frombuffer(data, dtype=NUMPY_DTYPES[t.dtype]).reshape(dram_shape(t))
    if parse_layout(t.layout, len(t.shape)) is not None:
        n, c, *rest = t.shape
        a = np.moveaxis(a, -1, 2).reshape(n, -1, *rest)[:, :c]
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("="))
