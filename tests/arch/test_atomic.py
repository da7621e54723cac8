"""costmodel.atomic: a written file appears whole or not at all, with the mode open() would give it
under the umask in force when it is written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from costmodel.atomic import atomic_write_all, atomic_write_text, check_writable, refuse_overwriting
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


def test_a_symlink_is_followed_not_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    """A FIFO (like /dev/stdout or a device) stays what it is and gets the whole content; renaming a
    file over it replaced it (and, as root, `--json /dev/full` replaced the device node)."""
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    check_writable(fifo)
    atomic_write_text(fifo, "x" * 100_000)
    reader.join(timeout=30)
    assert got == ["x" * 100_000] and stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes needs root (as CI runs)")
def test_a_device_is_written_in_place(tmp_path: Path) -> None:
    """Device nodes of our own (never /dev's: a regression would replace them): null takes the
    content, full refuses it with one UserError; both stay devices."""
    null, full = tmp_path / "null", tmp_path / "full"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    check_writable(null)
    atomic_write_text(null, "x")
    with pytest.raises(UserError, match=f"{full}: cannot write"):
        atomic_write_text(full, "x")
    assert all(stat.S_ISCHR(p.stat().st_mode) for p in (null, full))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "null"]


def test_an_output_may_not_be_an_input_even_before_it_exists(tmp_path: Path) -> None:
    """`dse map --db X --json X` with X new: the database the command creates would be replaced."""
    with pytest.raises(UserError, match="is also an input of this command"):
        refuse_overwriting(tmp_path / "same.sqlite", tmp_path / "." / "same.sqlite")
    refuse_overwriting(tmp_path / "a.json", tmp_path / "b.sqlite", None)


def test_files_that_belong_together_are_replaced_together(tmp_path: Path) -> None:
    """`dse compile` writes the binary and its sidecars as one set: when one cannot be written, none
    of the old files is replaced and no temp file is left."""
    (tmp_path / "m.axb").write_bytes(b"old")
    (tmp_path / "afile").write_text("")
    with pytest.raises(UserError, match="cannot write"):
        atomic_write_all({tmp_path / "m.axb": b"new", tmp_path / "afile" / "m.map.json": b"{}"})
    assert (tmp_path / "m.axb").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "m.axb"]
    atomic_write_all({tmp_path / "m.axb": b"new", tmp_path / "m.map.json": b"{}"})
    assert (tmp_path / "m.axb").read_bytes() == b"new" and (tmp_path / "m.map.json").read_bytes() == b"{}"


def test_a_process_file_is_written_in_place(tmp_path: Path) -> None:
    """`--json /dev/stdout` with stdout a pipe (or a file the shell redirected to): /proc/self/fd/N
    is a link to it; following it to a path and renaming there failed (a pipe) or replaced the
    shell's file (cutting the process off from it). It is written through the descriptor."""
    r, w = os.pipe()
    try:
        atomic_write_text(f"/proc/self/fd/{w}", "through the pipe")
        assert os.read(r, 100) == b"through the pipe"
    finally:
        os.close(r)
        os.close(w)
    out = tmp_path / "redirected.txt"
    with open(out, "w") as fh:
        fh.write("before\n")
        fh.flush()
        atomic_write_text(f"/proc/self/fd/{fh.fileno()}", "json\n")
        fh.write("after\n")
    assert out.read_text() == "before\njson\nafter\n"  # (through the descriptor: nothing overwritten)


def test_an_input_that_is_a_symlink_loop_is_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    refuse_overwriting(tmp_path / "out.txt", tmp_path / "a")  # (reading it fails later, with its own message)


def test_a_dash_is_not_a_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`-o -` wrote a file named '-' where a user expects stdout (as `dse map --json -` means)."""
    monkeypatch.chdir(tmp_path)
    for write in (check_writable, lambda p: atomic_write_text(p, "x"), lambda p: atomic_write_all({Path(p): b"x"})):
        with pytest.raises(UserError, match="standard output is /dev/stdout"):
            write("-")
    assert not (tmp_path / "-").exists()


def test_a_full_disk_is_one_line_and_leaves_the_old_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC in the write (or the rename) had been a traceback; it names the file, as an unwritable
    place does, and leaves neither temp files nor a half-written output."""
    import errno

    from costmodel.atomic import atomic_open

    out = tmp_path / "out.json"
    out.write_text("old")
    with pytest.raises(UserError, match=rf"^{out}: cannot write \(No space left on device\)$"), \
            atomic_open(out) as fh:
        fh.write("new")
        raise OSError(errno.ENOSPC, "No space left on device")
    real = os.replace

    def full(src, dst):
        if Path(dst).name == "b.bin":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(UserError, match=r"b\.bin: cannot write \(No space left on device\)"):
        atomic_write_all({tmp_path / "b.bin": b"x"})
    with pytest.raises(OSError, match="Permission"), atomic_open(tmp_path / "c.txt") as fh:  # (others stay)
        raise PermissionError(errno.EACCES, "Permission denied")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"] and out.read_text() == "old"


def test_a_link_to_a_missing_folder_is_named(tmp_path: Path) -> None:
    (tmp_path / "outdir").symlink_to(tmp_path / "gone")
    for call in (lambda: check_writable(tmp_path / "outdir" / "x.json"),
                 lambda: atomic_write_text(tmp_path / "outdir" / "sub" / "x.json", "{}")):
        with pytest.raises(UserError, match=r"outdir is a link to .*gone, which does not exist"):
            call()
    assert not (tmp_path / "gone").exists()
