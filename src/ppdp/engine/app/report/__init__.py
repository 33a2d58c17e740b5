"""``ppdp report``: one self-contained HTML page about a published release version.

gather.py reads what the page shows (``_ppdp`` and the published relations, through the
connector; SQL in sql/report.py), html.py and svg.py render it; nothing here writes to the
database.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ppdp.connectors.base import Connector
from ppdp.engine.app.report.gather import ReportData, gather
from ppdp.engine.app.report.html import render
from ppdp.errors import SpecError

__all__ = ["ReportData", "build_report", "gather", "render", "write_report"]


def build_report(con: Connector, name: str, *, version: int | None = None, external: bool = False) -> str:
    """The report page of version ``version`` (default: current) of release ``name``."""
    from ppdp.engine.app.report.risk_view import measured_risk

    return render(gather(con, name, version=version, external=external, risk=measured_risk))


def check_report_target(out: str | Path, *, force: bool = False, database: str | None = None) -> Path:
    """Refuse, before anything is read or written, a report file that cannot or must not be
    written: a directory, a missing or unwritable folder, an existing file without ``force``,
    and the database being read whatever ``force`` says."""
    target = Path(out)
    if database and database != ":memory:" and target.exists() and Path(database).exists() \
            and os.path.samefile(target, database):
        raise SpecError(f"{str(out)!r} is the database the report reads; it is never overwritten. "
                        "Hint: choose another file name, e.g. report.html.")
    if target.is_dir():
        raise SpecError(f"{str(out)!r} is a directory. Hint: name a file inside it, e.g. {str(target / 'report.html')!r}.")
    if target.exists() and not force:
        raise SpecError(f"{str(out)!r} already exists. Hint: choose a new file name, or --force to replace it.")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise SpecError(f"Directory {str(parent)!r} of the report file does not exist. Hint: create it first or choose another path.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(f"Directory {str(parent)!r} of the report file is not writable. Hint: choose a directory you can write to.")
    return target


def write_report(con: Connector, name: str, out: str | Path, *, version: int | None = None, external: bool = False,
                 force: bool = False) -> int:
    """Write the page to ``out`` whole or not at all (a temporary file beside it, renamed over
    it once written); returns its size in bytes."""
    target = check_report_target(out, force=force, database=getattr(con, "path", None))
    page = build_report(con, name, version=version, external=external).encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent if str(target.parent) else ".")
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # as an ordinary new file (mkstemp's is 0600)
        with os.fdopen(fd, "wb") as f:
            f.write(page)
            f.flush()
            os.fsync(f.fileno())
        if target.exists() and not force:  # appeared while the page was built
            raise SpecError(f"{str(out)!r} already exists. Hint: choose a new file name, or --force to replace it.")
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SpecError(f"Cannot write the report {str(out)!r}: {exc.strerror or exc}. Nothing was written.") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(page)
