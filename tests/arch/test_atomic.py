"""costmodel.atomic: a written file appears whole or not at all, with the mode open() would give it
under the umask in force when it is written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from costmodel.atomic import atomic_write_text
from costmodel.errors import UserError


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_mode_follows_the_umask_of_the_moment(tmp_path: Path, mask: int) -> None:
    old = os.umask(mask)
    try:
        out = atomic_write_text(tmp_path / "sub" / "f.txt", "x\n")
    finally:
        os.umask(old)
    assert out.read_text() == "x\n" and stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask
    assert sorted(p.name for p in out.parent.iterdir()) == ["f.txt"]  # no temp file left


def test_unwritable_place_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    with pytest.raises(UserError, match="cannot write"):
        atomic_write_text(tmp_path / "afile" / "f.txt", "x")
    with pytest.raises(UserError, match=r"cannot write \(is a folder\)"):
        atomic_write_text(tmp_path, "x")
