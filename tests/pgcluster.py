#!/usr/bin/env python3
"""A throwaway PostgreSQL cluster for the tests: initdb + pg_ctl on a temporary directory.

Why a script of our own: CI runs on a fresh machine as root, which PostgreSQL refuses, and
nothing may be installed by hand.  Debian's ``postgresql-15`` package puts the server binaries
under ``/usr/lib/postgresql/15/bin``; this module finds them, creates a cluster owned by an
unprivileged user (``postgres`` when it exists, else ``nobody``) when running as root, starts it
on a free localhost port with fsync off (test data only), and prints a DSN.

    python tests/pgcluster.py start DIR     # prints the DSN on stdout; DIR must not exist
    python tests/pgcluster.py stop DIR      # stops the server and removes DIR

Beside a started cluster, the two things a fleet puts in front of or behind it:

    python tests/pgcluster.py pooler DIR    # PgBouncer (transaction pooling) before DIR's server
    python tests/pgcluster.py standby DIR   # a hot standby streaming from DIR's server

each printing its DSN; ``stop DIR`` stops them too.  The pooler is Debian's ``pgbouncer`` with
``pool_mode = transaction`` and ``default_pool_size = 2``, so the clients of a test really share
server connections; the standby is ``pg_basebackup -R`` of the primary, started the same way.

``start_cluster``/``stop_cluster`` (and ``start_pooler``/``start_standby``) do the same from
Python (the tests' session fixtures use them when ``ZS_TEST_PG_DSN`` is not set).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

DATABASE = "zett_test"
SUPERUSER = "zs"
PASSWORD_ROLE = "zs_password"  # the only role that must authenticate with a password
POOL_SIZE = 2  # server connections per database and user behind the pooler
READY_WITHIN = 60.0  # seconds a started pooler has to accept connections


def server_bindir() -> Path | None:
    """The newest PostgreSQL server binaries on this machine, or None."""
    if "ZS_PG_BINDIR" in os.environ:
        return Path(os.environ["ZS_PG_BINDIR"])
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _run_as(owner: str | None, argv: list[str]) -> None:
    if owner is not None:
        argv = ["runuser", "-u", owner, "--", *argv]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result.stdout}{result.stderr}")


def _owner() -> str | None:
    """The unprivileged user that owns the cluster when we are root (None: ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) exists")


def start_cluster(directory: Path, *, durable: bool = False) -> str:
    """Create and start a cluster in ``directory`` (must not exist); return its DSN.  It runs
    with fsync, synchronous_commit and full_page_writes off unless ``durable`` (benchmarks
    measure both)."""
    bindir = server_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb) found")
    owner = _owner()
    directory.mkdir(parents=True)
    data, sockets = directory / "data", directory / "sock"
    sockets.mkdir()
    if owner is not None:
        entry = pwd.getpwnam(owner)
        for path in (directory, sockets):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        directory.chmod(0o755)
    _run_as(
        owner,
        [
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            SUPERUSER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        ],
    )
    # One role must give a password (the tests of PGPASSWORD and ~/.pgpass); the rest trust.
    hba = data / "pg_hba.conf"
    hba.write_text(f"host all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
    port = _start_server(bindir, owner, directory, durable=durable)
    _run_as(
        owner,
        [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", SUPERUSER, DATABASE],
    )
    return _dsn(port)


def _start_server(
    bindir: Path, owner: str | None, directory: Path, extra: str = "", *, durable: bool = False
) -> int:
    """Start the server of ``directory/data`` on a free port (recorded in ``directory/port``)."""
    port = _free_port()
    options = f"-p {port} -k {directory / 'sock'} -c listen_addresses=127.0.0.1"
    if not durable:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    options += " -c max_connections=200" + extra
    _run_as(
        owner,
        [
            str(bindir / "pg_ctl"),
            "-D",
            str(directory / "data"),
            "-o",
            options,
            "-l",
            str(directory / "log"),
            "-w",
            "-t",
            "120",
            "start",
        ],
    )
    (directory / "port").write_text(str(port))
    return port


def _dsn(port: int) -> str:
    return f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}"


def _owned_directory(directory: Path, owner: str | None) -> None:
    directory.mkdir(parents=True)
    if owner is not None:
        entry = pwd.getpwnam(owner)
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    directory.chmod(0o755)


def _address(dsn: str) -> tuple[str, int, str]:
    """Host, port and user of a server's DSN (as ``start_cluster`` prints it)."""
    parts = urlsplit(dsn)
    return parts.hostname or "127.0.0.1", parts.port or 5432, parts.username or SUPERUSER


def start_standby(directory: Path, primary: str) -> str:
    """A hot standby of the server at ``primary`` in ``directory`` (must not exist): a base
    backup with ``-R`` (it streams from the primary), started as the primary is; its DSN."""
    bindir = server_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb) found")
    owner = _owner()
    host, port, user = _address(primary)
    _owned_directory(directory, owner)
    _owned_directory(directory / "sock", owner)
    _run_as(
        owner,
        [
            str(bindir / "pg_basebackup"),
            "-h",
            host,
            "-p",
            str(port),
            "-U",
            user,
            "-D",
            str(directory / "data"),
            "-R",
            "-X",
            "stream",
            "--no-sync",
            "--checkpoint=fast",  # else it waits for the next spread checkpoint (~90 s)
        ],
    )
    # the primary keeps the rows a standby query still reads (no recovery conflict cancels it)
    return _dsn(_start_server(bindir, owner, directory, " -c hot_standby_feedback=on"))


def pgbouncer() -> str | None:
    """Debian's ``pgbouncer`` binary (``/usr/sbin`` is not on every PATH), or None."""
    found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")
    return found


def start_pooler(directory: Path, server: str, *, pool_size: int = POOL_SIZE) -> str:
    """PgBouncer in transaction mode before the server at ``server``, in ``directory`` (must
    not exist), on a free loopback port, as the cluster's owner; returns its DSN.
    ``pool_size`` is its ``default_pool_size`` (the benchmarks give a fleet's).

    Every database name is passed through to the server; the superuser is let in without a
    password (``trust``, as the cluster itself trusts loopback).
    """
    binary = pgbouncer()
    if binary is None:
        raise RuntimeError("no pgbouncer binary (apt-get install pgbouncer)")
    owner = _owner()
    host, server_port, user = _address(server)
    _owned_directory(directory, owner)
    port = _free_port()
    users = directory / "users.txt"
    users.write_text(f'"{user}" ""\n')
    config = directory / "pgbouncer.ini"
    config.write_text(
        "[databases]\n"
        f"* = host={host} port={server_port}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        "unix_socket_dir =\n"
        "auth_type = trust\n"
        f"auth_file = {users}\n"
        "pool_mode = transaction\n"
        f"default_pool_size = {pool_size}\n"
        "max_client_conn = 1000\n"
        "server_reset_query =\n"
        f"pidfile = {directory / 'pgbouncer.pid'}\n"
        f"logfile = {directory / 'log'}\n"
    )
    _run_as(owner, [binary, "-d", "-q", str(config)])
    (directory / "port").write_text(str(port))
    _wait_for_port(port, directory)
    return _dsn(port)


def _wait_for_port(port: int, directory: Path) -> None:
    """Until the daemon accepts connections on ``port`` (bounded: ``READY_WITHIN``)."""
    deadline = time.monotonic() + READY_WITHIN
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if time.monotonic() > deadline:
            log = directory / "log"
            raise RuntimeError(
                f"pgbouncer did not listen on {port}: {log.read_text() if log.exists() else ''}"
            )
        time.sleep(0.01)  # a daemon starting up: nothing to wait on but its port


def _stop_server(data: Path) -> None:
    bindir = server_bindir()
    if bindir is not None and (data / "postmaster.pid").exists():
        with contextlib.suppress(RuntimeError):
            _run_as(_owner(), [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"])


def stop_cluster(directory: Path) -> None:
    """Stop what was started in ``directory`` (a server, a standby, a pooler, and those
    started in its ``standby`` and ``pooler``), and remove the directory."""
    for place in (directory / "pooler", directory / "standby", directory):
        with contextlib.suppress(OSError, ValueError):  # the pooler we started, by its pid
            os.kill(int((place / "pgbouncer.pid").read_text().strip()), signal.SIGTERM)
        _stop_server(place / "data")
    shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in {"start", "pooler", "standby", "stop"}:
        print("usage: pgcluster.py start|pooler|standby|stop DIR", file=sys.stderr)
        return 2
    directory = Path(argv[1]).resolve()
    if argv[0] == "stop":
        stop_cluster(directory)
        return 0
    try:
        if argv[0] == "start":
            print(start_cluster(directory))
        else:
            start = start_pooler if argv[0] == "pooler" else start_standby
            server = _dsn(int((directory / "port").read_text()))
            print(start(directory / argv[0], server))
    except RuntimeError as exc:
        print(f"pgcluster: {exc}", file=sys.stderr)
        if argv[0] == "start":
            stop_cluster(directory)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
