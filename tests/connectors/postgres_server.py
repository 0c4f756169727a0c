"""A private PostgreSQL server for the connector tests, from Debian's `postgresql` package.

`initdb` into a temporary directory, `postgres` on a free loopback port with its unix socket in the
same directory, trust authentication for the `postgres` role, and `max_prepared_transactions` > 0 so
that the exactly-once JDBC sink can use two-phase commit. PostgreSQL refuses to run as root (CI
runs as root): then the server runs as an unprivileged user (`nobody`) through `setpriv`.

With STROM_TEST_POSTGRES_DSN set (e.g. postgresql://user:pw@host:5432/db) the tests use that server
instead; it needs max_prepared_transactions > 0 for the exactly-once tests.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

DSN_ENV = "STROM_TEST_POSTGRES_DSN"


@dataclass(frozen=True)
class PostgresServer:
    """Where the tests' server listens, as a libpq DSN and as the JDBC URL a JdbcSink is given."""

    host: str
    port: int
    dbname: str
    user: str
    password: str

    @property
    def dsn(self) -> str:
        auth = f"{self.user}:{self.password}" if self.password else self.user
        return f"postgresql://{auth}@{self.host}:{self.port}/{self.dbname}"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.dbname}"

    def connect(self) -> Any:
        import psycopg  # the [test] extra has it; imported here so that other connector tests never need it

        return psycopg.connect(self.dsn, autocommit=True)

    @staticmethod
    def from_dsn(dsn: str) -> PostgresServer:
        u = urlsplit(dsn)
        return PostgresServer(
            host=u.hostname or "127.0.0.1",
            port=u.port or 5432,
            dbname=(u.path or "/postgres").lstrip("/") or "postgres",
            user=u.username or "postgres",
            password=u.password or "",
        )


def find_bin_dir() -> str | None:
    """The directory holding initdb and postgres: PATH first, then Debian's /usr/lib/postgresql/<v>/bin."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("postgres"):
        return os.path.dirname(os.path.realpath(initdb))
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(candidates[-1]) if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_user(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as `nobody` (setpriv execs, so signals reach it)."""
    if os.geteuid() != 0:
        return argv
    user = pwd.getpwnam("nobody")
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--", *argv]


class LocalPostgres:
    """initdb + postgres in a temporary directory; `stop()` ends the server and removes the directory."""

    def __init__(self, bin_dir: str) -> None:
        self.bin_dir = bin_dir
        # as root the server runs as nobody, who must reach the directory: /tmp, not a private TMPDIR
        self.dir = tempfile.mkdtemp(prefix="strom-pg-", dir="/tmp" if os.geteuid() == 0 else None)
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.proc: subprocess.Popen[bytes] | None = None
        if os.geteuid() == 0:
            user = pwd.getpwnam("nobody")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        self.log = os.path.join(self.dir, "server.log")

    def start(self, timeout: float = 60) -> PostgresServer:
        import psycopg

        subprocess.run(
            _as_user([os.path.join(self.bin_dir, "initdb"), "-D", self.data, "-U", "postgres", "--auth=trust",
                      "-E", "UTF8", "--no-sync", "--no-instructions"]),
            check=True, capture_output=True, cwd=self.dir,
        )
        for _attempt in range(3):  # a free port may be taken between choosing and binding it
            port = _free_port()
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(
                    _as_user([os.path.join(self.bin_dir, "postgres"), "-D", self.data, "-p", str(port),
                              "-k", self.dir, "-c", "listen_addresses=127.0.0.1",
                              "-c", "max_prepared_transactions=64", "-c", "max_connections=200",
                              "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
                    stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
                )
            server = PostgresServer("127.0.0.1", port, "postgres", "postgres", "")
            deadline = time.monotonic() + timeout
            while self.proc.poll() is None and time.monotonic() < deadline:
                try:
                    with psycopg.connect(server.dsn, connect_timeout=2):
                        return server
                except psycopg.OperationalError:
                    time.sleep(0.1)
            self.stop_server()
        with open(self.log, errors="replace") as f:
            raise RuntimeError(f"PostgreSQL did not start in {self.dir}: {f.read()[-2000:]}")

    def stop_server(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: PostgreSQL's smart shutdown; fast enough with idle sessions
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        self.stop_server()
        shutil.rmtree(self.dir, ignore_errors=True)
