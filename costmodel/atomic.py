"""Atomic file output: write to a temp file in the target's folder, then rename over the target.

A crash, a kill or an exception never leaves a partial or corrupt output file: either the old
file (or none) or the complete new one is there. Every writer of user-facing files uses this.

A symlink is followed (the file it names is replaced, not the link), and a target that exists but
is not a regular file (``/dev/null``, ``/dev/stdout``, a FIFO) is written in place, once the content
is complete: renaming over it would replace a device node with a file.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from costmodel.errors import UserError, causes


def _umask() -> int:
    """The process's umask, read where Linux shows it (setting it to read it back would change it,
    for a moment, for every thread of the process); elsewhere by setting and restoring it."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _new_file_mode() -> int:
    """What open() would give a new file now (mkstemp's own is 0600)."""
    return 0o666 & ~_umask()


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temp file in ``path``'s folder (created if missing), with a new file's usual mode; a
    path that cannot be written -> UserError (a user's mistake, not a crash)."""
    try:
        if path.parent.exists() and not path.parent.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, f"{path.parent} is a file, not a folder")
        for folder in (path.parent, *path.parent.parents):  # (mkdir had said only "File exists")
            if folder.is_symlink() and not folder.exists():
                raise FileNotFoundError(errno.ENOENT, f"{folder} is a link to {os.readlink(folder)}, which does "
                                                      "not exist")
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a folder")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise UserError(f"{path}: cannot write ({exc.strerror or exc})") from None
    os.fchmod(fd, _new_file_mode())
    return fd, tmp


def check_writable(path: str | Path) -> None:
    """Fails now, not after a long computation, if ``path`` cannot be written (UserError). Leaves no
    trace: the folders it had to create for the probe are removed again."""
    path = _target(path)
    if is_special(path):  # (written in place: see the module docstring)
        if not os.access(path, os.W_OK):
            raise UserError(f"{path}: cannot write (permission denied)")
        return
    missing = [p for p in path.parents if not p.exists()]
    try:
        fd, tmp = _temp_beside(path)
        os.close(fd)
        os.unlink(tmp)
    finally:
        for folder in missing:  # innermost first
            with contextlib.suppress(OSError):
                folder.rmdir()


def same_file(a: str | Path, b: str | Path) -> bool:
    """``a`` exists and ``b`` names the same file (another spelling of the path included)."""
    return Path(a).exists() and _resolved(a) == _resolved(b)


def _resolved(path: str | Path) -> str:
    """``path`` with its links followed; a symlink loop as it stands (reading it fails later, as it should)."""
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError):
        return os.path.abspath(path)


def refuse_overwriting(out: str | Path, *inputs: str | Path | None) -> None:
    """An output path that names one of the command's inputs (or another of its outputs, such as a
    database the command creates) would destroy it: UserError."""
    for src in inputs:
        if src is not None and _resolved(src) == _resolved(out):
            raise UserError(f"{out}: is also an input of this command; choose another output path")


def check_output_file(path: Any, name: str, *inputs: str | Path | None) -> Path:
    """An API call's output file ``path`` (argument ``name``), checked before any work as the CLI
    checks its options: a path (TypeError otherwise), not ending in '/' (pathlib would drop it and
    write a file where a folder was meant), writable, and none of the call's ``inputs`` (a report
    written over the study journal it read had destroyed every trial)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a file path (str or os.PathLike), got {path!r:.60}")
    text = os.fspath(path)
    if not str(text).strip():
        raise UserError(f"{name}: empty; expected a file path")
    if str(text).endswith(("/", os.sep)):
        raise UserError(f"{name}: {text!r} ends with '/', a folder; expected a file path")
    check_writable(text)
    refuse_overwriting(text, *inputs)
    return Path(text)


def is_special(path: str | Path) -> bool:
    """``path`` (links followed) exists and is not a regular file or a folder (a device, a FIFO, a
    socket), or names a process's open file (``/dev/stdout``, ``/proc/self/fd/1``: even when that is
    a regular file, replacing it would cut the process off from what it writes)."""
    path = Path(path)
    if str(path).startswith(("/dev/", "/proc/")):
        return path.exists()
    try:
        mode = path.stat().st_mode
    except (OSError, RuntimeError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def _in_place(path: Path, mode: str, **kwargs: Any) -> Iterator[IO[Any]]:
    """The block writes into memory; the whole content then goes to ``path`` in one write."""
    buf: IO[Any] = io.BytesIO() if "b" in mode else io.StringIO()
    yield buf
    try:
        fd = _own_descriptor(path)
        if fd is None:
            with open(path, mode, **kwargs) as fh:
                fh.write(buf.getvalue())
            return
        data = buf.getvalue()
        data = data if isinstance(data, bytes) else data.encode(kwargs.get("encoding") or "utf-8")
        for stream in (sys.stdout, sys.stderr):  # (what the process printed first stays first)
            with contextlib.suppress(Exception):
                stream.flush()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise UserError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _own_descriptor(path: Path) -> int | None:
    """The descriptor ``/dev/stdout``, ``/dev/fd/N`` or ``/proc/self/fd/N`` names: written through,
    not reopened (a reopened file starts at 0 and is truncated, under what the process wrote)."""
    text = str(path)
    for prefix in ("/dev/fd/", "/proc/self/fd/", f"/proc/{os.getpid()}/fd/"):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return int(text[len(prefix):])
    return {"/dev/stdout": 1, "/dev/stderr": 2}.get(text)


def _target(path: str | Path) -> Path:
    """The file a write to ``path`` replaces: a symlink's target, not the link (a special file is
    opened by the name given: see :func:`is_special`). ``-`` is refused: a command that means
    stdout by it handles it before (``dse map --json -``), and a file named ``-`` would surprise."""
    if str(path) == "-":
        raise UserError("-: not a file name for this output; give a path (standard output is /dev/stdout)")
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() and not is_special(path) else path


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """``open(path, mode)`` whose content appears at ``path`` only when the block succeeds."""
    path = _target(path)
    if is_special(path):
        with _in_place(path, mode, **kwargs) as fh:
            yield fh
        return
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        _raise_if_full(exc, path)
        raise


_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})
"""Errors of a write that the place, not the program, causes: a full disk, a quota, a read-only mount."""


def place_error(exc: BaseException) -> OSError | None:
    """The write error in ``exc`` or the exceptions it was raised from that the place caused (see
    ``_FULL``), or None. Why the chain: a library may raise its own error while handling one (optuna
    answers a journal write that failed for want of space with ``AssertionError: Should not reach``)."""
    return next((e for e in causes(exc) if isinstance(e, OSError) and e.errno in _FULL), None)


def _raise_if_full(exc: BaseException, path: Path) -> None:
    """A write that failed for want of space (or a read-only mount) is one line naming the file, as
    a folder that cannot be written is; it had been a traceback once the temp file was open."""
    err = place_error(exc)
    if err is not None:
        raise UserError(f"{path}: cannot write ({err.strerror or err})") from None


def atomic_write_all(files: dict[Path, bytes]) -> None:
    """Files that belong together (a binary and its sidecars): all are written to temp files first,
    then renamed into place one after the other, so an interrupted command leaves the old set or the
    new one (the renames take microseconds), not one new file beside old ones."""
    targets = {_target(path): data for path, data in files.items()}
    special = {target for target in targets if is_special(target)}
    temps: list[tuple[str, Path]] = []
    try:
        for target, data in targets.items():
            if target in special:
                continue  # (written in place, before any rename: a failure there leaves the old set)
            fd, tmp = _temp_beside(target)
            temps.append((tmp, target))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        for target in special:
            atomic_write_bytes(target, targets[target])
        for tmp, target in temps:
            os.replace(tmp, target)
    except BaseException as exc:
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)
        _raise_if_full(exc, temps[-1][1] if temps else next(iter(targets)))
        raise


def atomic_write_text(path: str | Path, text: str) -> Path:
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return Path(path)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)
