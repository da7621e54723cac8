"""Whether a process of this host is gone: shared by the sweep's resume (a trial's dead worker) and the
search workers (their dead parent)."""

from __future__ import annotations

import os


def process_gone(pid: int, *, foreign: bool = False) -> bool:
    """No such process on this host, or a zombie (exited, not yet reaped by its parent: it still
    answers signal 0). ``foreign``: the answer for a process of another user, which signal 0 may
    not probe (for a process this user started, the pid has been reused: gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return foreign
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:  # "pid (comm) S ...": the state after the name
            return f.read().rpartition(b")")[2].split()[0] == b"Z"
    except (OSError, IndexError):  # (no /proc: not Linux)
        return False
