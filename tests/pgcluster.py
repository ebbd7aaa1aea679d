#!/usr/bin/env python3
"""A throwaway PostgreSQL cluster for the tests: initdb + pg_ctl on a temporary directory.

Why a script of our own: CI runs on a fresh machine as root, which PostgreSQL refuses, and
nothing may be installed by hand.  Debian's ``postgresql-15`` package puts the server binaries
under ``/usr/lib/postgresql/15/bin``; this module finds them, creates a cluster owned by an
unprivileged user (``postgres`` when it exists, else ``nobody``) when running as root, starts it
on a free localhost port with fsync off (test data only), and prints a DSN.

    python tests/pgcluster.py start DIR     # prints the DSN on stdout; DIR must not exist
    python tests/pgcluster.py stop DIR      # stops the server and removes DIR

``start_cluster``/``stop_cluster`` do the same from Python (the tests' session fixture uses them
when ``ZS_TEST_PG_DSN`` is not set).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
from pathlib import Path

DATABASE = "zett_test"
SUPERUSER = "zs"
PASSWORD_ROLE = "zs_password"  # the only role that must authenticate with a password


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


def start_cluster(directory: Path) -> str:
    """Create and start a cluster in ``directory`` (must not exist); return its DSN."""
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
    port = _free_port()
    options = (
        f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
        " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    )
    _run_as(
        owner,
        [
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
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
    _run_as(
        owner,
        [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", SUPERUSER, DATABASE],
    )
    return f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}"


def stop_cluster(directory: Path) -> None:
    """Stop the server started in ``directory`` (if running) and remove the directory."""
    bindir = server_bindir()
    data = directory / "data"
    if bindir is not None and (data / "postmaster.pid").exists():
        with contextlib.suppress(RuntimeError):
            _run_as(_owner(), [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"])
    shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in {"start", "stop"}:
        print("usage: pgcluster.py start|stop DIR", file=sys.stderr)
        return 2
    directory = Path(argv[1]).resolve()
    if argv[0] == "start":
        try:
            print(start_cluster(directory))
        except RuntimeError as exc:
            print(f"pgcluster: {exc}", file=sys.stderr)
            stop_cluster(directory)
            return 1
    else:
        stop_cluster(directory)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
