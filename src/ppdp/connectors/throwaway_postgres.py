"""A throwaway PostgreSQL server (tests, examples, benchmarks): initdb into a temp dir, pg_ctl start, stop, remove.

PostgreSQL refuses to run as root, so when the tests run as root every server command runs as an
unprivileged user (``PPDP_PG_USER``, else ``postgres``, else ``ppdp`` — created with ``useradd``
if missing —, else ``nobody``) through ``runuser -u USER --`` (or ``su -s /bin/sh USER -c``).

    with PostgresServer.start() as server:
        print(server.url)  # postgresql://postgres@127.0.0.1:PORT/postgres
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

SUPERUSER = "postgres"  # the database role initdb creates (not the OS user)
CANDIDATE_USERS = ("postgres", "ppdp", "nobody")


class PostgresUnavailable(RuntimeError):
    """The throwaway server could not be started; the message says why."""


def find_bin(name: str) -> str:
    """``name`` from PATH, else from the newest /usr/lib/postgresql/*/bin."""
    found = shutil.which(name)
    if found:
        return found
    for bindir in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True):
        path = os.path.join(bindir, name)
        if os.access(path, os.X_OK):
            return path
    raise PostgresUnavailable(f"{name!r} is not on PATH nor in /usr/lib/postgresql/*/bin. Hint: install PostgreSQL server binaries.")


def _version_key(bindir: str) -> tuple[int, ...]:
    part = Path(bindir).parent.name
    return tuple(int(x) for x in part.split(".") if x.isdigit()) or (0,)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def server_user() -> str | None:
    """The OS user to run PostgreSQL as, or None to run as ourselves (not root)."""
    if os.geteuid() != 0:
        return None
    wanted = os.environ.get("PPDP_PG_USER")
    if wanted:
        if not _user_exists(wanted):
            raise PostgresUnavailable(f"PPDP_PG_USER={wanted!r} is not a user on this machine.")
        return wanted
    for name in CANDIDATE_USERS:
        if _user_exists(name):
            return name
        if name == "ppdp" and shutil.which("useradd"):
            proc = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", name],
                                  capture_output=True, text=True)
            if proc.returncode == 0 or _user_exists(name):
                return name
    raise PostgresUnavailable("Running as root and no unprivileged user is available for PostgreSQL (tried "
                              f"{', '.join(CANDIDATE_USERS)}). Hint: set PPDP_PG_USER.")


def as_user(user: str | None, argv: list[str]) -> list[str]:
    """``argv`` run as ``user`` (unchanged when ``user`` is None)."""
    if user is None:
        return argv
    if shutil.which("runuser"):
        return ["runuser", "-u", user, "--", *argv]
    if shutil.which("su"):
        return ["su", "-s", "/bin/sh", user, "-c", shlex.join(argv)]
    raise PostgresUnavailable("Running as root but neither runuser nor su is available to drop privileges.")


class PostgresServer:
    """One running throwaway cluster; ``stop()`` shuts it down and deletes its directory."""

    def __init__(self, root: Path, port: int, user: str | None, pg_ctl: str) -> None:
        self.root = root
        self.data = root / "data"
        self.sockets = root / "sock"
        self.log = root / "server.log"
        self.port = port
        self.user = user
        self.pg_ctl = pg_ctl
        self.url = f"postgresql://{SUPERUSER}@127.0.0.1:{port}/postgres"

    def url_for(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    @classmethod
    def start(cls, *, attempts: int = 3, timeout: float = 60.0, settings: dict[str, str] | None = None) -> PostgresServer:
        """initdb + pg_ctl start on a free port; PostgresUnavailable with the reason otherwise.
        ``settings``: extra server settings (e.g. ``shared_preload_libraries``), each a ``-c``."""
        initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
        user = server_user()
        # The unprivileged user must be able to reach the directory: under root, $TMPDIR may be
        # private, /tmp is world-traversable.
        base = "/tmp" if user is not None and os.path.isdir("/tmp") else None
        root = Path(tempfile.mkdtemp(prefix="ppdp-pg-", dir=base))
        try:
            (root / "sock").mkdir()
            if user is not None:
                pw = pwd.getpwnam(user)
                for p in (root, root / "sock"):
                    os.chown(p, pw.pw_uid, pw.pw_gid)
            _run(as_user(user, [initdb, "-D", str(root / "data"), "--auth=trust", "-U", SUPERUSER,
                                "--encoding=UTF8", "--locale=C", "--no-sync"]), root, timeout, "initdb")
            last = ""
            for _ in range(attempts):  # the free port can be taken between probe and bind: retry
                server = cls(root, free_port(), user, pg_ctl)
                opts = (f"-p {server.port} -k {server.sockets} -c listen_addresses=127.0.0.1 "
                        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                        + "".join(f" -c {shlex.quote(f'{k}={v}')}" for k, v in (settings or {}).items()))
                try:
                    proc = subprocess.run(as_user(user, [pg_ctl, "-D", str(server.data), "-l", str(server.log),
                                                         "-o", opts, "-w", "-t", str(int(timeout)), "start"]),
                                          cwd=root, capture_output=True, text=True, timeout=timeout + 10)
                except (OSError, subprocess.SubprocessError) as exc:
                    raise PostgresUnavailable(f"pg_ctl start could not run: {exc}") from None
                if proc.returncode == 0:
                    return server
                last = (proc.stdout + proc.stderr).strip() + "\n" + server.log_tail()
            raise PostgresUnavailable(f"pg_ctl start failed:\n{last}")
        except BaseException:
            if (root / "data" / "postmaster.pid").exists():  # a half-started server: stop it first
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    subprocess.run(as_user(user, [pg_ctl, "-D", str(root / "data"), "-m", "immediate", "-w", "stop"]),
                                   cwd=root, capture_output=True, timeout=30)
            shutil.rmtree(root, ignore_errors=True)
            raise

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        try:
            subprocess.run(as_user(self.user, [self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"]),
                           cwd=self.root, capture_output=True, text=True, timeout=60)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _run(argv: list[str], cwd: Path, timeout: float, what: str) -> None:
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PostgresUnavailable(f"{what} could not run: {exc}") from None
    if proc.returncode != 0:
        raise PostgresUnavailable(f"{what} failed (exit {proc.returncode}): {(proc.stdout + proc.stderr).strip()}")
