"""Stage 3: what this run's input is, and what the release has published (under the run lock).

The source's fingerprint (row count and an order-free sum of row hashes, computed in the
database), the run key over the spec, the hierarchies' contents, the fingerprint and the ppdp
version, and the run that published the current version. A run whose key equals that run's is
skipped: nothing changed.

Everything that can change the release must be in the run key (were the hierarchy contents
not, an edited ARX file would give "skipped"): the spec as given, the content digest of every
hierarchy, the source data's fingerprint, the seed, and the ppdp version (a new version may
choose or verify differently).

Nothing that cannot change the published rows may be in it: ``source.database`` is a
spelling of the database (``duckdb://w/x.duckdb`` and ``duckdb://x.duckdb`` from another folder
are one file), so the key holds the database's identity instead (Connector.identity); and
``[access]`` only says who may read the view, which a run applies without a new version.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from typing import Any

from ppdp.engine.core import catalog
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Prepared, RunKey
from ppdp.engine.release.stages.validate import source_fingerprint


def ppdp_version() -> str:
    """The installed ppdp distribution's version, or "dev" when it is not installed."""
    try:
        return metadata.version("ppdp")
    except metadata.PackageNotFoundError:
        return "dev"


def keyed_spec(raw: dict[str, Any]) -> dict[str, Any]:
    """The spec as given, without what does not decide the published rows: ``source.database``
    (a spelling; the identity is keyed instead) and ``[access]`` (grants, applied on every run)."""
    out = {k: v for k, v in raw.items() if k != "access"}
    if isinstance(out.get("source"), dict):
        out["source"] = {k: v for k, v in out["source"].items() if k != "database"}
    return out


def run_key(spec: ReleaseSpec, fingerprint: str, hierarchy_digests: list[str], database: str = "") -> str:
    """sha256 (32 hex digits) over the keyed spec, hierarchy digests (in QID order), the data
    fingerprint, the seed, the ppdp version and the database's identity."""
    payload = json.dumps({"spec": json.dumps(keyed_spec(spec.raw), sort_keys=True, default=str),
                          "hierarchies": list(hierarchy_digests), "fingerprint": fingerprint,
                          "seed": spec.seed, "ppdp": ppdp_version(), "database": database},
                         sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def previous_run(ctx: RunContext) -> RunRecord | None:
    """The run that published the release's current version (None: none yet). The orchestrator
    reads it once, holding the run lock, and hands it to validate and identify: read before the
    lock, it could be a version that another run has replaced by the time this one writes."""
    return catalog.latest_success(ctx.con, ctx.release) if catalog.has_catalog(ctx.con) else None


def identify(ctx: RunContext, prep: Prepared, previous: RunRecord | None) -> RunKey:
    """Reads only; the orchestrator puts the result into the context of every later stage.
    ``previous``: ``previous_run``'s, read under the run lock."""
    con = ctx.con
    fingerprint = source_fingerprint(con, prep.source, ctx.spec.key, prep.columns, prep.types)
    key = run_key(ctx.spec, fingerprint, [h.digest() for h in prep.hierarchies], con.identity())
    ctx.clock.mark("fingerprint")
    return RunKey(fingerprint, key, previous)
