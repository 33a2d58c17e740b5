"""The stages of a release run, one module each, in the order engine/release/run.py runs them,
all under the run lock (the orchestrator takes it first, then reads the run that published the
current version, once: identify.previous_run, passed on to validate and identify):

validate (read and check every input; writes nothing) -> guards (refuse unsafe combinations of
inputs; writes nothing) -> identify (fingerprint, run key, the previous version) -> plan (the
release method's plan: published rows, withheld rows, private state) -> materialize (reserve the
version number; the candidate rows aside) -> risk.check_kept_columns (kept columns that single
out records: refuse or warn) -> history (difference-attack check across versions and deltas;
holds changes back or refuses) -> publish (the version table, shuffled) -> verify (independent
SQL checks) -> risk.measure (source and release risk into _ppdp.risk) -> utility.measure (the
version's utility into _ppdp.utility, beside its risk) -> switch (delta and
view) -> access (grants and revokes) -> record (the run row). A dry run replaces
reserve_version..access by preview (the SQL it would run).

One calling convention. A stage is a function ``stage(ctx, *inputs) -> result``: ``ctx`` is the
run's frozen ``RunContext`` (context.py), the inputs are earlier stages' frozen results, passed
explicitly by the orchestrator, and the result is a new frozen value (results.py; the method's
``ReleasePlan`` in method.py; a plain int or dict where that is all there is; None for a stage
that only checks or only writes). A stage never mutates the context or a result it was given: the
per-run facts later stages read from the context (``ctx.key``: fingerprint, run key, previous
version; ``ctx.version``) are put there only by the orchestrator, as a new context made with
``dataclasses.replace`` from the identify and reserve_version results. Writes go to the database
through ``ctx.con``; the only shared mutable things are ``ctx.clock`` (each stage adds its own
timings for the run record) and the tests' fault hook ``ctx.on_phase``.

The release method is an argument (typed by the ``ReleaseMethod`` protocol of method.py): no
module here imports engine/methods/, which sits above the stages.
"""
