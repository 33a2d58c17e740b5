"""The ``ppdp`` command line. Heavy imports happen inside the commands so --help is instant."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import NoReturn

from ppdp import handoff

DEFAULT_DB = os.environ.get("PPDP_DB", "duckdb://demo.duckdb")


class _Parser(argparse.ArgumentParser):
    """argparse with the refusal contract of every other bad input: one line, exit code 2
    (argparse prints the usage too). Subcommand parsers are of this class as well."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"ppdp: error: {self.prog}: {message}. Hint: {self.prog} --help.\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ppdp", description="Privacy-preserving data publishing inside SQL databases.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    d = sub.add_parser("demo", help="load adult into a DuckDB file and publish a 5-anonymous release")
    d.add_argument("--db", default="demo.duckdb", help="DuckDB file to create or reuse (default: demo.duckdb)")

    r = sub.add_parser("run", help="run a release spec (TOML)")
    r.add_argument("spec", help="path to the release spec")
    r.add_argument("--db", help="database URL, overriding source.database")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--json", action="store_true", help=JSON_HELP)

    for name, text in (("verify", "re-run the SQL verification of a release's current version"),
                       ("show", "metrics, chosen levels and class sizes of a release")):
        c = sub.add_parser(name, help=text)
        c.add_argument("name", help="release name (output.name)")
        c.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB}, or $PPDP_DB)")
    sub.choices["verify"].add_argument("--json", action="store_true", help=JSON_HELP)

    ru = sub.add_parser("runs", help="list recorded runs")
    ru.add_argument("name", nargs="?", help="only this release")
    ru.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB})")

    sub.add_parser("warm-up", help="compile every Numba kernel into the cache now (make demo and make test do), "
                   "so that the first release does not pay for it")
    ini = sub.add_parser("init", help="create ppdp's private schema _ppdp (then jobs can be registered with SQL INSERT)")
    ini.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB})")

    j = sub.add_parser("job", help="release jobs stored in the database: register, run, list, history, certificate")
    jsub = j.add_subparsers(dest="job_command", required=True, metavar="JOB_COMMAND")
    jr = jsub.add_parser("register", help="validate a TOML spec and store it as a job in _ppdp.jobs")
    jr.add_argument("spec")
    jr.add_argument("--name", help="job name (default: output.name)")
    jrun = jsub.add_parser("run", help="run a job; a run with the same key as the current release is skipped")
    jrun.add_argument("name")
    jrun.add_argument("--dry-run", action="store_true", help="print the SQL and the metrics; write only the run record")
    jrun.add_argument("--no-progress", action="store_true")
    jrun.add_argument("--json", action="store_true", help=JSON_HELP)
    jsub.add_parser("list", help="registered jobs")
    jh = jsub.add_parser("history", help="runs of one job")
    jh.add_argument("name")
    jc = jsub.add_parser("certificate", help="audit record of the current release (JSON and Markdown)")
    jc.add_argument("name")
    jc.add_argument("--format", choices=["json", "markdown", "both"], default="both")
    for sp in (jr, jrun, jh, jc, jsub.choices["list"]):
        sp.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB})")

    sq = sub.add_parser("sql", help="a self-contained SQL script that rebuilds a release's current version")
    sq.add_argument("name")
    sq.add_argument("--dialect", default="duckdb", help="duckdb, postgres, snowflake, bigquery or spark")
    sq.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB})")

    rp = sub.add_parser("report", help="one self-contained HTML page about a release version (no network, no script)")
    rp.add_argument("name", help="release name (output.name, or schema.name)")
    rp.add_argument("--html", required=True, help="HTML file to write (must not exist unless --force)")
    rp.add_argument("--force", action="store_true", help="replace an existing report file (never the database being read)")
    rp.add_argument("--version", type=int, help="published version (default: the current one)")
    rp.add_argument("--external", action="store_true",
                    help="for readers outside the organisation: leave out everything that lists quasi-identifier combinations")
    rp.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB}, or $PPDP_DB)")
    rp.add_argument("--classify", metavar="TARGET", help="also train the classifier of release against source on TARGET "
                    "(accuracy bars; needs ppdp[utility])")

    rk = sub.add_parser("risk", help="re-identification risk of a source table or a published version (ARX's and sdcMicro's measures)")
    rk.add_argument("name", nargs="?", help="release name (its current version unless --version)")
    rk.add_argument("--table", help="SCHEMA.TABLE to measure instead of a release")
    rk.add_argument("--version", type=int, help="published version of the release (default: the current one)")
    rk.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB})")
    rk.add_argument("--qids", help="attacker's quasi-identifiers, comma-separated (default: the release's)")
    rk.add_argument("--also", help="further columns the attacker knows (kept columns above all), comma-separated")
    pop = rk.add_mutually_exclusive_group()
    pop.add_argument("--sampling-fraction", type=float, help="share of the population the data hold (default 1)")
    pop.add_argument("--population", type=int, help="size of the population the data were drawn from")
    rk.add_argument("--population-table", help="SCHEMA.TABLE holding the population, for journalist risk")
    rk.add_argument("--threshold", type=float, default=0.2, help="a record is at risk above this risk (default 0.2)")
    rk.add_argument("--weight", help="sampling-weight column: sdcMicro's individual and global risk")
    rk.add_argument("--person", help="column naming each row's person: count distinct persons, not rows "
                                     "(default: the release's source.person; without either, row = person assumed)")
    rk.add_argument("--json", action="store_true", help="one JSON object")

    sg = sub.add_parser("suggest", help="profile a table and write a commented release spec (auto hierarchies) with a preview")
    sg.add_argument("--table", required=True, help="SCHEMA.TABLE (or TABLE) to profile")
    sg.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB})")
    sg.add_argument("--out", help="spec file to write (must not exist); without it the spec is printed")
    sg.add_argument("--max-risk", type=float, default=0.2, help="target highest re-identification risk (default 0.2: k = 5)")
    sg.add_argument("--no-preview", action="store_true", help="do not run the spec on a copy to preview the release")
    sg.add_argument("--json", action="store_true", help="one JSON object: the decisions, the source's risk and the preview")
    ut = sub.add_parser("utility", help="utility of a published version: ARX's quality models, TD, query precision, workload error")
    ut.add_argument("name", help="release name (its current version unless --version)")
    ut.add_argument("--version", type=int, help="published version of the release (default: the current one)")
    ut.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB})")
    ut.add_argument("--json", action="store_true", help="one JSON object")
    ut.add_argument("--classify", metavar="TARGET", help="train a classifier of TARGET on the release and on the source "
                    "with ARX's folds: accuracy, ZeroR, Brier score, AUC (needs ppdp[utility])")
    ut.add_argument("--features", help="comma-separated features for --classify (default: the QIDs)")
    ut.add_argument("--model", default="logistic", choices=["logistic", "forest"], help="classifier (default logistic)")
    ut.add_argument("--folds", type=int, default=10, help="cross-validation folds (default 10, as ARX)")
    ut.add_argument("--max-records", type=int, default=100_000, help="records sampled for --classify (default 100,000, as ARX)")
    ut.add_argument("--seed", type=int, default=2**31 - 1, help="sampling and fold seed (default ARX's, 2147483647)")
    ut.add_argument("--summary", action="store_true", help="per attribute, source against release: mode, median, "
                    "mean, variance, distribution distance")
    ut.add_argument("--pairs", help="two-way tables, e.g. sex:salary-class,race:sex (implies --summary)")

    e = sub.add_parser("export", help="copy the published schema alone into a new DuckDB file")
    e.add_argument("out", help="DuckDB file to create (must not exist)")
    e.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB})")
    e.add_argument("--schema", default="published", help="published schema to copy (default: published)")

    w = sub.add_parser("worker", help="serve release requests from _ppdp.requests (ppdp.request_run(job) on PostgreSQL)")
    w.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default: {DEFAULT_DB})")
    w.add_argument("--once", action="store_true", help="serve the requests waiting now, then exit")
    w.add_argument("--poll", type=float, default=10.0, help="seconds between polls of an empty queue (default: 10)")
    w.add_argument("--lease", type=float, default=60.0,
                   help="seconds a claimed request stays ours without a heartbeat (default: 60); then it is retryable")
    w.add_argument("--json", action="store_true", help="print one JSON object: the requests served")
    return p


JSON_HELP = ("print exactly one JSON object on stdout (schema: ppdp/engine/data/schemas/); everything else goes to "
             "stderr; the exit code follows README 'Exit codes'")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from ppdp.engine.app.outcome import ExitCode, exit_code_of, result_of_error
    from ppdp.errors import PpdpError
    from ppdp.process_heap import keep_freed_memory
    from ppdp.redact import redact_text

    # --json: the one JSON object goes to the real stdout (args.json_out), every other print of
    # the command to stderr, so that an orchestrator can parse stdout whole.
    json_mode = bool(getattr(args, "json", False))
    args.json_out = sys.stdout
    previous_term = _on_sigterm()
    keep_freed_memory()
    try:
        with contextlib.redirect_stdout(sys.stderr) if json_mode else contextlib.nullcontext():
            code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe raises here, inside the handler, not at interpreter exit
        return int(code)
    except BrokenPipeError:
        # `ppdp ... | head`: the reader left. Exit quietly like other CLIs (128 + SIGPIPE); point
        # stdout at /dev/null so Python's own flush at exit does not complain either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (PpdpError, KeyboardInterrupt, Exception) as exc:
        # a signal that arrived during a database call may surface as the database's own error
        # ("Query interrupted"): the signal, not that error, ended the command
        code = ExitCode.INTERRUPTED if _SIGNALLED else exit_code_of(exc)
        if code == ExitCode.INTERRUPTED:
            print(_interrupted_message(args), file=sys.stderr)
            exc = KeyboardInterrupt("interrupted")  # its JSON object says interrupted
        elif isinstance(exc, PpdpError):
            # one line even when a database's message has several (libpq, DuckDB's "LINE 1: ... ^"),
            # and no password of a URL in it
            message = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
            print(f"ppdp: error: {redact_text(message)}", file=sys.stderr)
        else:  # a bug: the traceback, and a code no expected outcome uses
            traceback.print_exc()
        if json_mode:
            _emit(args, _error_result(args, result_of_error(exc, job=getattr(args, "name", None) if args.command == "job" else None)))
        return int(code)
    finally:
        if _SIGNALLED:  # a retry still armed for a signal that waited for an import
            signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in previous_term:
            # once interrupted, the process is ending with INTERRUPTED: a signal DuckDB raises
            # again after it stopped its query must not kill it on the way out
            signal.signal(signum, signal.SIG_IGN if _SIGNALLED else handler)


_SIGNALLED = False  # SIGINT or SIGTERM arrived during this command


def _interrupted_message(args: argparse.Namespace) -> str:
    """What an interrupted command tells its user: a signal that came after the run committed
    (while its summary printed) ended the command, not the release, which stays published."""
    outcome = getattr(args, "committed", None)
    if outcome is not None and outcome.run.status != "skipped" and outcome.table:
        return (f"ppdp: interrupted after the run committed: {outcome.view} -> {outcome.table} is published and "
                "verified; only this command's output was cut short.")
    return "ppdp: interrupted; nothing was published by the interrupted run."


def _on_sigterm():
    """SIGTERM (an orchestrator cancelling the task) unwinds the run like Ctrl-C: its transaction
    rolls back and the exit code is INTERRUPTED; SIGINT too, and either is remembered, so that a
    database call it interrupted ends with INTERRUPTED whatever the database raised. Returns the
    handlers it replaced."""
    from ppdp.engine.app.outcome import Interrupted

    global _SIGNALLED
    _SIGNALLED = False

    _PENDING.clear()
    # A signal that lands while a module is being imported is raised once no import is under
    # way: an exception out of a C extension's initialisation (DuckDB's, while its module
    # imports what it needs) aborts the process (SIGABRT) instead of unwinding it. The same
    # inside llvmlite (Numba reading a kernel from its cache calls back into Python from LLVM):
    # ctypes ignores an exception out of the callback, and LLVM then reads the buffer it did not
    # get (SIGSEGV). SIGALRM looks again every IMPORT_RETRY_S until then.
    # And while a committed run is on its way to the command (ppdp/handoff.py): it is raised
    # once the command holds the outcome (_committed), so that its message says what was published.
    # That wait needs no timer: _committed ends it and raises, or lets the run's own error unwind
    # when the commit failed (a timer firing after the run's release() would replace that error,
    # and cut short the failure's record, with the interruption).
    def interrupt(name: str, frame) -> None:
        unsafe_here = _importing(frame) or _in_llvmlite(frame)
        if unsafe_here or handoff.holding():
            if not _PENDING:
                _PENDING.append(name)
                signal.signal(signal.SIGALRM, on_retry)
            if unsafe_here:
                signal.setitimer(signal.ITIMER_REAL, IMPORT_RETRY_S)
            return
        _PENDING.clear()
        raise Interrupted(name)

    def on_retry(signum, frame):
        if _PENDING:
            interrupt(_PENDING[0], frame)

    # A second signal is ignored: the first one is already unwinding the run, and DuckDB raises
    # the signal again once it has stopped its query; raised again, it would escape the handler
    # that reports the first and kill the process by the signal instead of exiting INTERRUPTED.
    def on_term(signum, frame):
        global _SIGNALLED
        if _SIGNALLED:
            return
        _SIGNALLED = True
        interrupt("SIGTERM", frame)

    # SIGINT raises the subclass too, never KeyboardInterrupt itself: CPython marks the process
    # to die by SIGINT at exit when exactly KeyboardInterrupt leaves code run by exec() of a
    # string (dataclasses, namedtuple and Numba build functions that way during imports), even
    # when this CLI catches it further up, and the run would end killed by the signal, not 130.
    def on_int(signum, frame):
        global _SIGNALLED
        if _SIGNALLED:
            return
        _SIGNALLED = True
        interrupt("SIGINT", frame)

    out = [(signal.SIGTERM, signal.signal(signal.SIGTERM, on_term))]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when the caller handles SIGINT itself
        out.append((signal.SIGINT, signal.signal(signal.SIGINT, on_int)))
    out.append((signal.SIGALRM, signal.getsignal(signal.SIGALRM)))  # on_retry's, once a raise waits
    return out


IMPORT_RETRY_S = 0.01  # how soon a signal that landed during an import looks again
_PENDING: list[str] = []  # the signal's name while its raise waits (an import, llvmlite, a hand-off)


def _committed(args: argparse.Namespace, run, *, published: bool = True):
    """``run()``, a release run, with its outcome stored in ``args.committed`` (``published``:
    not for a dry run) before an interruption that arrived after its commit is raised: the
    command then reports the version as published, which it is (ppdp/handoff.py)."""
    from ppdp.engine.app.outcome import Interrupted

    try:
        with handoff.expecting():
            outcome = run()
            if published:
                args.committed = outcome
    finally:
        # A raise deferred meanwhile is made here, not at the timer's next tick. When the run
        # itself raised, that error unwinds instead (the signal is remembered: exit INTERRUPTED).
        deferred = _PENDING.pop() if _PENDING else None
        if deferred is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
    if deferred is not None:
        raise Interrupted(deferred)
    return outcome


def _importing(frame) -> bool:
    """An import is under way in ``frame``'s stack (importlib's own frames are in it)."""
    while frame is not None:
        name = frame.f_code.co_filename  # frozen (the default) or read from its file
        if name.startswith("<frozen importlib._bootstrap") or name.endswith(_IMPORTLIB_FILES):
            return True
        frame = frame.f_back
    return False


_IMPORTLIB_FILES = (os.path.join("importlib", "_bootstrap.py"), os.path.join("importlib", "_bootstrap_external.py"))


def _in_llvmlite(frame) -> bool:
    """Code of llvmlite is in ``frame``'s stack (a callback LLVM makes into Python among them)."""
    while frame is not None:
        if _LLVMLITE_DIR in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


_LLVMLITE_DIR = f"{os.sep}llvmlite{os.sep}"


def _error_result(args: argparse.Namespace, failed):
    """A failed command's JSON object in the shape of its own schema (run: the RunResult itself)."""
    if args.command == "verify":
        from ppdp.engine.app.api import VerifyResult

        return VerifyResult(status=failed.status, exit_code=failed.exit_code, error=failed.error)
    if args.command in ("risk", "suggest", "utility"):
        from ppdp.engine.app.outcome import Measured

        return Measured({"error": failed.error}, failed.status, failed.exit_code)
    if args.command == "worker":
        from ppdp.engine.app.request_worker import WorkerSummary

        return WorkerSummary(failed.status, failed.exit_code, "", ())
    return failed


def _emit(args: argparse.Namespace, result) -> int:
    """Print ``result`` (RunResult, VerifyResult, ...) as the command's one JSON object."""
    print(json.dumps(result.to_json(), default=str, sort_keys=True, allow_nan=False), file=args.json_out)
    return int(result.exit_code)


# --- commands ------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from ppdp.engine.app.outcome import result_of_outcome
    from ppdp.engine.core.spec import load_spec
    from ppdp.engine.release.run import run_release

    spec = load_spec(args.spec)
    outcome = _committed(args, lambda: run_release(spec, database=args.db, progress=not args.no_progress))
    _print_run(outcome.run)
    print(f"{'skipped (nothing changed)' if outcome.run.status == 'skipped' else 'published'}: {outcome.view} -> {outcome.table}")
    _print_access(outcome.run)
    result = result_of_outcome(outcome)
    return _emit(args, result) if args.json else int(result.exit_code)


def cmd_demo(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.core.spec import load_spec
    from ppdp.engine.release.run import run_release
    from ppdp.sql import demo as demo_sql

    data = Path(__file__).parents[1] / "data"
    db = str(Path(args.db).resolve())
    con = connect(f"duckdb://{db}")
    try:
        if con.relation_columns("main", "adult") is None:
            csv = str(data / "adult" / "adult.csv")
            con.execute(demo_sql.load_csv_with_id("adult"), [csv])
            print(f"loaded adult (30,162 rows) into {db} as table main.adult")
    finally:
        con.close()
    spec = load_spec(Path(str(data / "adult_k5.toml")))
    outcome = _committed(args, lambda: run_release(spec, database=f"duckdb://{db}"))
    _print_run(outcome.run)
    print(f"published: {outcome.view} -> {outcome.table}\n")
    con = connect(f"duckdb://{db}")
    try:
        print("An analyst's query on the published view:\n")
        print("  " + demo_sql.ANALYST_QUERY.replace("\n", "\n  ") + "\n")
        _print_frame(con.query(demo_sql.ANALYST_QUERY))
    finally:
        con.close()
    print(f"\nNext: ppdp show adult --db {db}   |   ppdp export adult_release.duckdb --db {db}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.release.run import reverify

    if args.json:
        from ppdp.engine.app.api import verify_release

        verified = verify_release(args.name, db=args.db)
        if verified.error:  # the one line on stderr, as without --json (stdout holds the JSON object)
            print(f"ppdp: error: {_shown(verified.error)}", file=sys.stderr)
        return _emit(args, verified)
    con = connect(args.db, read_only=True)
    try:
        result = reverify(con, args.name)
    finally:
        con.close()
    for c in result["checks"]:
        print(f"{c['model']:<22} {json.dumps(c['params'])}  AD = {c['ad']}  classes = {c['classes']}  {'PASS' if c['passed'] else 'FAIL'}")
    for c in result.get("method_checks", []):
        print(f"{c['check']}: {c['detail']}  {'PASS' if c['passed'] else 'FAIL'}")
    if result["rows"] is not None:
        print(f"rows: {result['rows']} (expected {result['expected_rows']})")
    if result.get("tampered"):
        print(f"ppdp: error: {result['release']} v{result['version']}: verification FAILED: {result['tampered']}; "
              "analysts do not read what was verified. Hint: 'ppdp run' the spec again to publish it anew.", file=sys.stderr)
    print(f"{result['release']} v{result['version']}: " + ("verification passed" if result["passed"] else "verification FAILED")
          + " (against what was published, t-closeness against the stored distribution)")
    changed = {True: "the source has changed since this version was published (a new run would publish a new version)",
               False: "the source is unchanged since this version was published",
               None: "the source could not be read to compare"}[result["source_changed"]]
    print(changed)
    if result.get("method_checks") and result["source_changed"] is not False:
        print("the method's checks that read the source were not run (it is not what was published)")
    return 0 if result["passed"] else 1


def cmd_runs(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.core import catalog

    con = connect(args.db, read_only=True)
    try:
        runs = catalog.list_runs(con, catalog.resolve_release(con, args.name) if args.name else None)
    finally:
        con.close()
    if getattr(args, "job", None):
        runs = [r for r in runs if r.job == args.job]
    if not runs:
        print("no runs recorded")
        return 0
    print(f"{'started (UTC)':<20} {'release':<16} {'ver':>3} {'status':<10} {'TD':>14} {'suppr.':>7} {'cert.':<5} run id / error")
    for r in runs:
        td = r.metrics.get("td")
        sup = r.metrics.get("suppressed")
        tail = r.run_id if r.status in ("succeeded", "dry-run") else _shown(r.error or "")[:70]
        print(f"{str(r.started_at)[:19]:<20} {r.release:<16} {r.version if r.version is not None else '-':>3} {r.status:<10} "
              f"{'' if td is None else f'{td:,.2f}':>14} {'' if sup is None else int(sup):>7} "
              f"{'yes' if r.solution.get('certified') else 'no':<5} {tail}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.core import catalog
    from ppdp.errors import SpecError

    con = connect(args.db, read_only=True)
    try:
        run = catalog.latest_success(con, catalog.resolve_release(con, args.name))
    finally:
        con.close()
    if run is None:
        raise SpecError(f"No published release named {args.name!r} in {args.db}. Hint: 'ppdp runs --db {args.db}' lists runs.")
    _print_run(run)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.app.export import export_schema

    con = connect(args.db, read_only=True)
    try:
        copied = export_schema(con, args.schema, args.out)
    finally:
        con.close()
    print(f"exported {len(copied)} relation(s) of schema {args.schema!r} to {args.out}: {', '.join(copied)}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.app.report import write_report

    con = connect(args.db, read_only=True)
    try:
        size = write_report(con, args.name, args.html, version=args.version, external=args.external, force=args.force,
                            classify=args.classify)
    finally:
        con.close()
    print(f"wrote {args.html} ({size:,} bytes, {'external' if args.external else 'internal'} report)")
    return 0


def cmd_job(args: argparse.Namespace) -> int:
    from ppdp.engine.app import jobs

    if args.job_command == "register":
        name = jobs.register_job(args.db, args.spec, name=args.name)
        print(f"registered job {name!r} in {_shown(args.db)}")
    elif args.job_command == "run":
        from ppdp.engine.app.outcome import result_of_outcome

        outcome = _committed(args, lambda: jobs.run_job(args.db, args.name, dry_run=args.dry_run,
                                                        progress=not args.no_progress),
                             published=not args.dry_run)
        result = result_of_outcome(outcome, dry_run=args.dry_run)
        if outcome.run.status == "skipped":
            print(f"skipped: the source and the job are unchanged since run {(outcome.run.cross_version or {}).get('note', '')[-32:]}; "
                  f"current release {outcome.view} -> {outcome.table}")
            _print_access(outcome.run)
        elif args.dry_run:
            for label, sql in (outcome.statements or {}).items():
                print(f"-- {label}\n{sql};\n")
            _print_run(outcome.run)
            if outcome.run.solution.get("would_skip"):  # say what the real run would do
                print(f"dry run: the real run would be skipped ({outcome.run.solution['would_skip']}: the source and the job "
                      "are unchanged); nothing was written but the run record")
            else:
                print(f"dry run: would publish version {outcome.run.solution.get('would_publish_version')}; nothing was written but the run record")
        else:
            _print_run(outcome.run)  # with the source's changes and what was held back (engine/app/summary.py)
            _print_access(outcome.run)
            print(f"published: {outcome.view} -> {outcome.table}")
        return _emit(args, result) if args.json else int(result.exit_code)
    elif args.job_command == "list":
        rows = jobs.list_jobs(args.db)
        if not rows:
            print("no jobs registered")
        for r in rows:
            print(f"{r['name']:<24} {'enabled' if r['enabled'] else 'disabled':<9} created {str(r['created_at'])[:19]}  updated {str(r['updated_at'])[:19]}")
    elif args.job_command == "history":
        jobs.job_exists(args.db, args.name)  # an unknown job is an error, not "no runs recorded"
        return cmd_runs(argparse.Namespace(name=None, db=args.db, job=args.name))
    elif args.job_command == "certificate":
        cert = jobs.certificate(args.db, args.name)
        if args.format in ("json", "both"):
            print(json.dumps(cert, indent=2, default=str))
        if args.format in ("markdown", "both"):
            print(jobs.certificate_markdown(cert))
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.core import catalog

    con = connect(args.db)
    from ppdp.engine.app.request_worker import ensure_requests

    try:
        with con.transaction():
            catalog.ensure_schema(con)
        ensure_requests(con)
    finally:
        con.close()
    print(f"created schema _ppdp (jobs, runs, requests, job_requesters, hierarchies, suppressed, row_ids, row_state) in {_shown(args.db)}")
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.app.rebuild import rebuild_script

    con = connect(args.db, read_only=True)
    try:
        print(rebuild_script(con, args.name, args.dialect))
    finally:
        con.close()
    return 0


def cmd_risk(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.app.risk_cli import describe, person_relation, target
    from ppdp.engine.core.person import unit_label
    from ppdp.engine.risk import assess

    con = connect(args.db, read_only=True)
    try:
        relation, qids = target(con, args.name, args.table, args.version, check_qids=not args.qids)
        cols = [c.strip() for c in args.qids.split(",") if c.strip()] if args.qids else qids
        also = [c.strip() for c in (args.also or "").split(",") if c.strip()]
        pop_table = target(con, None, args.population_table, None)[0] if args.population_table else None
        measured, person = person_relation(con, args.name, relation, args.version, args.person, list(dict.fromkeys([*cols, *also])))
        if person is not None and args.weight:
            from ppdp.errors import SpecError

            raise SpecError("--weight weighs rows; it cannot be combined with counting persons. Hint: leave out --weight.")
        result = assess(con, measured, cols, also=also, sampling_fraction=args.sampling_fraction, population=args.population,
                        population_table=pop_table, threshold=args.threshold, weight=args.weight)
    finally:
        con.close()
    if args.json:
        from ppdp.engine.app.outcome import Measured

        return _emit(args, Measured(result.to_json() | {"relation": relation, "unit": unit_label(person)}))
    print(describe(result, person, relation))
    return 0


def cmd_suggest(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.app.suggest import preview, spec_text, suggest
    from ppdp.errors import SpecError

    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise SpecError(f"{args.out} exists; ppdp suggest never overwrites a file. Hint: --out another path, or remove it.")
    con = connect(args.db, read_only=True)
    try:
        s = suggest(con, args.table, max_risk=args.max_risk)
        text = spec_text(s, args.db, args.table)
        if not args.no_preview and s.of("qid"):
            s.preview = preview(con, s, args.table, text)
    finally:
        con.close()
    if out is not None:
        with open(out, "x", encoding="utf-8") as f:  # "x": a file created meanwhile is not overwritten
            f.write(text)
    if args.json:
        from ppdp.engine.app.outcome import Measured

        return _emit(args, Measured(s.to_json() | {"spec": str(out) if out else text}))
    if out is None:
        print(text)
    _print_suggestion(s, out)
    return 0


def _print_suggestion(s, out) -> None:
    from ppdp.engine.app.suggest import risk_phrase

    roles: dict[str, list[str]] = {}
    for d in s.decisions:
        roles.setdefault(d.role, []).append(d.column)
    sample = f" (ranked on a block sample of about {-s.ranked_on:,})" if s.ranked_on < 0 else ""
    print(f"suggest: {s.table}, {s.rows:,} rows, {len(s.decisions)} columns{sample}")
    for role in ("key", "identifier", "person", "qid", "sensitive", "drop"):
        if roles.get(role):
            print(f"  {role:<11}: {', '.join(roles[role])}")
    ranked = sorted((d for d in s.decisions if d.role in ("qid", "drop", "sensitive") and d.score != (0.0, 0.0)),
                    key=lambda d: (d.role != "qid", -d.score[1]))
    if ranked:
        print("  ranking    : " + "; ".join(f"{d.column} {d.score[1]:.3f}" for d in ranked[:10]) + "  (separation)")
    r = s.source_risk
    if r:
        print(f"  source risk: on {', '.join(r['qids'])}: {risk_phrase(r)}")
    v = s.preview
    if v:
        where = f"a sample of {v['rows']:,} rows" if v["sampled"] else f"all {v['rows']:,} rows"
        if v["error"]:
            print(f"  preview    : on {where}: {v['status']}: {v['error']}")
        else:
            rr = (v.get("risk") or {}).get("release") or {}
            print(f"  preview    : on {where}: {v['status']}, {'certified optimum' if v['certified'] else 'NOT certified optimal'}, "
                  f"verified {v['verified']}, smallest class {v['k']}, "
                  f"released {v['released']:,}, suppressed {v['suppressed']:,}, TD {v['td']:.1f}"
                  + (f"\n  preview risk: {risk_phrase(rr)}" if rr else ""))
    print(f"  spec       : {out if out else '(printed above)'}; k = {s.k} for max risk {s.max_risk:g}")


def cmd_utility(args: argparse.Namespace) -> int:
    from ppdp.connectors import connect
    from ppdp.engine.app.utility_cli import analyses, describe, describe_analyses, spec_hierarchies
    from ppdp.engine.utility import assess

    con = connect(args.db, read_only=True)
    try:
        result = assess(con, args.name, args.version, spec_hierarchies(con))
        extra = analyses(con, args, result)
    finally:
        con.close()
    if args.json:
        from ppdp.engine.app.outcome import Measured

        return _emit(args, Measured({**result.to_json(), **{k: v.to_json() for k, v in extra.items()}}))
    print(describe(result))
    for line in describe_analyses(extra):
        print(line)
    return 0


def cmd_warm_up(args: argparse.Namespace) -> int:
    from ppdp.engine.app.warmup import warm_up

    t0 = time.perf_counter()
    n = warm_up(lambda line: print(line, flush=True))
    print(f"warm-up: {n} releases, {time.perf_counter() - t0:.0f} s; Numba's cache now holds ppdp's kernels")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from ppdp.engine.app.request_worker import serve

    summary = serve(args.db, once=args.once, poll=args.poll, lease=args.lease,
                    log=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        return _emit(args, summary)
    return int(summary.exit_code)


COMMANDS = {"worker": cmd_worker, "warm-up": cmd_warm_up, "init": cmd_init, "demo": cmd_demo, "job": cmd_job, "sql": cmd_sql, "run": cmd_run, "verify": cmd_verify, "runs": cmd_runs, "show": cmd_show, "export": cmd_export,
            "risk": cmd_risk, "utility": cmd_utility, "report": cmd_report, "suggest": cmd_suggest}


# --- printing ------------------------------------------------------------------------------


def _print_access(run) -> None:
    """What the run changed in who may read the view, when anything."""
    a = (run.solution or {}).get("access") or {}
    if not (a.get("added") or a.get("revoked_select") or a.get("revoked_usage")):
        return
    parts = [f"read access (SELECT) granted to {', '.join(a['added'])}"] if a.get("added") else []
    if a.get("revoked_select"):
        parts.append(f"read access (SELECT) on the view revoked from {', '.join(a['revoked_select'])} (not in [access] roles)")
    if a.get("revoked_usage"):
        parts.append(f"USAGE on the schema revoked from {', '.join(a['revoked_usage'])}")
    tail = "; no new version (the content is unchanged)" if run.status == "skipped" else ""
    print(f"  access         : {'; '.join(parts)}{tail}")


def _shown(text: str) -> str:
    """Text as printed: any URL password masked (runs recorded by older versions of ppdp stored it)."""
    from ppdp.redact import redact_text

    return redact_text(text)


def _print_frame(frame) -> None:
    import polars as pl

    with pl.Config(tbl_rows=30, tbl_cols=20, tbl_hide_dataframe_shape=True, fmt_str_lengths=40):
        print(frame)


def _print_run(run) -> None:
    from ppdp.engine.app.summary import summary_lines

    print(f"release {run.release} version {run.version}  [{run.status}]  run {run.run_id}")
    for label, text in summary_lines(run):
        print(f"  {label:<15}: {text}")


# The collector's thresholds of the ``ppdp`` process: a young collection every 10,000 net
# allocations rather than 700, a full one after 100 middle ones rather than 10 (see ``entry``).
PROCESS_GC_THRESHOLDS = (10_000, 20, 100)


def entry() -> NoReturn:
    """The ``ppdp`` command and ``python -m ppdp.engine.app.cli``: ``main`` in a process of its own.

    A command's imports leave about 170,000 long-lived objects (modules, functions, Numba's typing
    and lowering registries), which the collector's default thresholds walk again and again while
    they are made (on a 1,000-record ``ppdp run``: 389 young, 36 middle and 3 full collections,
    12,000 objects freed), and once more when the interpreter tears down. Here only (``main``, as
    the tests call it in their own process, changes nothing of the collector) the collections
    are rarer, and once ``main`` has returned, its output written and flushed, the survivors are
    frozen: the teardown frees them without walking them for cycles (``gc.freeze``). Python's
    exit handlers still run; nothing the command wrote depends on the collector."""
    gc.set_threshold(*PROCESS_GC_THRESHOLDS)
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
