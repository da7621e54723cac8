"""Where a study's trials live: the journal file in the study folder (default), another journal
file, or an optuna RDB URL (``postgresql://user@host:port/db`` for workers on several machines).

``postgresql://`` URLs go to psycopg2 (``postgresql+psycopg2://``): SQLAlchemy 2.1 maps the bare
scheme to psycopg 3, which is not a dependency. A storage that cannot be opened (no server, bad
credentials, an unknown scheme) is the user's mistake: UserError naming the URL, password masked.
"""

from __future__ import annotations

import json
from pathlib import Path

import optuna

from costmodel.atomic import check_writable
from costmodel.errors import UserError

JOURNAL = "study.journal"
LOCK_SUFFIX = ".lock"
"""What optuna's JournalFileSymlinkLock appends to the journal's path for its lock."""
STORAGE_NOTE = "storage.txt"


def _journal_storage(path: Path) -> optuna.storages.BaseStorage:
    """The journal at ``path``, taken absolute: optuna's lock is a symlink to the journal named
    as given, and a relative name (``runs/s/study.journal``) made it a link that resolves against
    its own folder, to nothing; a lock left by a killed worker was then never found stale, and
    every later command spun on it forever."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileSymlinkLock

    path = path.absolute()
    link = Path(f"{path}{LOCK_SUFFIX}")
    if path.exists() and link.is_symlink() and not link.exists():  # such a link, left by a version before this
        link.unlink(missing_ok=True)  # one: it never resolves, so optuna would spin on it for ever
    if path.exists() and path.stat().st_size:
        lock = JournalFileSymlinkLock(str(path))
        lock.acquire()
        try:  # a record cut short by a kill would corrupt the next append: drop it
            data = path.read_bytes()
            if not data.endswith(b"\n"):
                with open(path, "r+b") as fh:
                    fh.truncate(data.rfind(b"\n") + 1)
        finally:
            lock.release()
        _check_records(path, data)
    return JournalStorage(JournalFileBackend(str(path)))


def _journal_snapshot(path: Path) -> optuna.storages.BaseStorage:
    """The journal as it is now, for commands that only read it (dse results, dse report): a copy in a
    temp file, removed with the storage. Why: optuna's file backend opens the journal for appending
    and locks it with a link beside it, which a read-only folder (an archived study) refused."""
    import shutil
    import tempfile
    import weakref

    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read the study journal ({exc.strerror or exc})") from None
    _check_records(path, data[: data.rfind(b"\n") + 1])  # (a record cut short at the end is skipped)
    folder = tempfile.mkdtemp(prefix="dse-journal-")
    copy = Path(folder) / path.name
    copy.write_bytes(data)
    storage = JournalStorage(JournalFileBackend(str(copy)))
    weakref.finalize(storage, shutil.rmtree, folder, ignore_errors=True)
    return storage


def _check_records(path: Path, data: bytes) -> None:
    """Every complete line of ``data`` (the journal's bytes; a last line without its newline is the
    record cut short, dropped above) must be a JSON object with an ``op_code``.

    Why: optuna skips an undecodable last line but fails with a bare JSONDecodeError on one
    followed by others, so a resumed sweep would append behind a damaged line and leave a journal
    no command can read. A damaged line is refused before anything is written. (Lines split at
    newline bytes, as optuna reads them; a record with an op_code but wrong fields is left to optuna.)
    The advice is to cut the file there, not to delete the line: trials are numbered by the order
    of their records, so the records after a deleted one would land on the wrong trials."""
    lines = data.split(b"\n")
    lines.pop()  # (after the last newline: empty, or the record cut short)
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except ValueError as exc:  # (JSONDecodeError and UnicodeDecodeError)
            record, why = None, str(exc).split(":")[0]
        else:
            why = "expected a JSON object with an op_code"
        if not (isinstance(record, dict) and "op_code" in record):
            raise UserError(f"{path}: line {number}: not a study journal record ({why}); the file was edited "
                            f"or damaged: restore it, or keep only its first {number - 1} lines (the trials "
                            "recorded there stay; deleting just that line would shift later records onto "
                            "the wrong trials)")


def masked(url: str) -> str:
    """The URL with its password (if any) replaced by ``***``, for messages."""
    scheme, sep, rest = url.partition("://")
    cred, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in cred:
        return url
    return f"{scheme}://{cred.split(':', 1)[0]}:***@{host}"


def rdb_url(url: str) -> str:
    """An optuna RDB URL with the driver SQLAlchemy should use (psycopg2 for PostgreSQL)."""
    for bare in ("postgresql://", "postgres://"):
        if url.startswith(bare):
            return "postgresql+psycopg2://" + url[len(bare):]
    return url


def is_journal(url: str | None) -> bool:
    return url is None or (url.endswith((".journal", ".log")) and "://" not in url)


def storage_url(out: Path, url: str | None) -> str | None:
    """``url``, else the one study folder ``out`` remembers in ``storage.txt``; None: its journal."""
    if url is None:
        note = out / STORAGE_NOTE
        url = note.read_text().strip() if note.exists() else None
    return url


def storage_file(out: Path, url: str | None) -> Path | None:
    """The file the storage of study folder ``out`` lives in (see :func:`storage_url`): its journal,
    another journal or SQLite file, a bare path as given; None for a database server."""
    url = storage_url(out, url)
    if url is None:
        return out / JOURNAL
    if url and (url.startswith("sqlite:///") or "://" not in url):
        return Path(url.removeprefix("sqlite:///"))
    return None


def open_storage(out: Path, url: str | None, *, read_only: bool = False) -> optuna.storages.BaseStorage:
    """The storage of study folder ``out``: ``url``, else the one remembered in ``storage.txt``,
    else the journal file ``out/study.journal``. ``read_only`` (dse results / report): a journal that
    does not exist is an error, not created, and the folder is not probed for writing."""
    url = storage_url(out, url)
    if is_journal(url):
        path = Path(url) if url else out / JOURNAL
        if read_only and not path.is_file():
            raise UserError(f"{path}: no such study journal (run `dse sweep` first, or pass its --storage)")
        if read_only:
            return _journal_snapshot(path)
        check_writable(path)  # a file in the way or no permission: UserError
        path.parent.mkdir(parents=True, exist_ok=True)
        return _journal_storage(path)
    assert url is not None
    if "://" not in url:  # (SQLAlchemy would say only that it cannot parse it)
        raise UserError(f"storage {url}: expected a journal file (.journal or .log) or a database URL "
                        "(sqlite:///FILE, postgresql://...)")
    try:
        return optuna.storages.get_storage(rdb_url(url))
    except ImportError as exc:
        raise UserError(f"storage {masked(url)}: no database driver for this URL ({exc})") from None
    except Exception as exc:  # noqa: BLE001 -- SQLAlchemy's errors: no server, bad password, bad URL
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"storage {masked(url)}: cannot open the study storage ({first})") from None

