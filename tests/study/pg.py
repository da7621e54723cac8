"""A PostgreSQL URL for the distributed-sweep tests.

``$ACCEL_DSE_TEST_PG`` (``.ci/run`` starts a server and sets it); otherwise a throwaway cluster in
a temporary folder on a free loopback port, if PostgreSQL's binaries are installed (``initdb`` runs
as the ``postgres`` user when we are root: the server refuses root). Without either the test skips,
except in CI (``CI=true``), where a missing database is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ENV = "ACCEL_DSE_TEST_PG"


def reachable(url: str) -> str | None:
    """None if ``url`` accepts a connection, else the reason."""
    import psycopg2

    try:
        psycopg2.connect(url, connect_timeout=5).close()
    except psycopg2.Error as exc:
        return str(exc).strip().splitlines()[0]
    return None


def _bindir() -> Path | None:
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True, check=False).stdout.strip()
        if out and (Path(out) / "initdb").exists():
            return Path(out)
    cands = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    return cands[-1].parent if cands else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def temporary_cluster() -> Iterator[str | None]:
    """Start a private PostgreSQL on 127.0.0.1 (trust auth, user ``dse``); yields its URL or None."""
    bindir = _bindir()
    if bindir is None:
        yield None
        return
    tmp = Path(tempfile.mkdtemp(prefix="dse-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = tmp / "data", _free_port()

    def run(*cmd: str) -> bool:
        return subprocess.run([*as_user, *cmd], capture_output=True, check=False, timeout=60).returncode == 0

    started = (run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "dse")
               and run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(tmp / "log"), "-w", "-o",
                       f"-c listen_addresses=127.0.0.1 -p {port} -k {tmp}", "start"))
    try:
        yield f"postgresql://dse@127.0.0.1:{port}/postgres" if started else None
    finally:
        if started:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    url = os.environ.get(ENV)
    if url:
        why = reachable(url)
        if why is None:
            yield url
            return
        reason = f"${ENV}={url} is not reachable ({why})"
    else:
        with temporary_cluster() as url:
            if url is not None and reachable(url) is None:
                yield url
                return
        reason = f"no PostgreSQL: ${ENV} is not set and no local server could be started"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI: {reason}")
    pytest.skip(reason)
