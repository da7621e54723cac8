"""The arrays a user gives `dse simulate --input` and `dse compile --calibration`: one .npy array,
anything else a one-line error that names the flag and the file (numpy said "pickled data" of a
text file, and returned an archive object for an .npz)."""

from __future__ import annotations

import numpy as np
import pytest

from costmodel.errors import UserError
from dse.cli.arrays import read_npy
from dse.cli.compile_cmd import _calibration


def _npy_bytes() -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.zeros(3))
    return buf.getvalue()


def _header_only(shape: tuple[int, ...]) -> bytes:
    """A valid .npy header claiming ``shape`` of float64, with no data."""
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return buf.getvalue()


def test_a_npy_array_reads_back(tmp_path):
    a = np.arange(12, dtype=np.int8).reshape(3, 4)
    np.save(tmp_path / "a.npy", a)
    got = read_npy(str(tmp_path / "a.npy"), "--input x")
    assert got.dtype == a.dtype and np.array_equal(got, a)


@pytest.mark.parametrize("write, message", [
    (lambda p: p.write_text("1 2 3\n"), r"is not a \.npy file; expected one array saved with numpy\.save"),
    (lambda p: np.savez(p.open("wb"), x=np.zeros(3)), r"is an \.npz archive \(several arrays\)"),
    (lambda p: np.save(p.open("wb"), np.array([{"a": 1}], dtype=object)), r"is not a readable \.npy array \(.*pickle"),
    (lambda p: p.write_bytes(b"\x93NUMPY\x01\x00garbage"), r"is not a readable \.npy array"),
    (lambda p: p.write_bytes(_npy_bytes().replace(b"'shape': (3,)", b"'shape': #3, ")), r"is not a readable \.npy array"),
    (lambda p: p.write_bytes(_header_only((10**12,))), r"is not a readable \.npy array \(Unable to allocate"),
    (lambda p: None, r"cannot read .*\(No such file or directory\)"),
])
def test_anything_else_is_an_error_naming_the_flag_and_file(tmp_path, write, message):
    path = tmp_path / "in.npy"
    write(path)
    with pytest.raises(UserError, match=rf"^--input x: .*{message}") as err:
        read_npy(str(path), "--input x")
    assert str(path) in str(err.value)


def test_calibration_names_its_input(tmp_path):
    (tmp_path / "c.txt").write_text("0.5\n")
    with pytest.raises(UserError, match=r"^--calibration x: .*c\.txt is not a \.npy file"):
        _calibration([f"x={tmp_path / 'c.txt'}"])
