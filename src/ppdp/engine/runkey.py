"""The run key: a run whose key equals the current release's is skipped (nothing changed).

Everything that can change the release must be in it (finding 7: hierarchy contents were not,
so an edited ARX file gave "skipped"): the spec as given, the content digest of every
hierarchy, the source data's fingerprint, the seed, and the ppdp version (a new version may
choose or verify differently).
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata

from ppdp.engine.spec import ReleaseSpec


def ppdp_version() -> str:
    """The installed ppdp distribution's version, or "dev" when it is not installed."""
    try:
        return metadata.version("ppdp")
    except metadata.PackageNotFoundError:
        return "dev"


def run_key(spec: ReleaseSpec, fingerprint: str, hierarchy_digests: list[str]) -> str:
    """sha256 (32 hex digits) over the spec JSON, hierarchy digests (in QID order), the data
    fingerprint, the seed and the ppdp version."""
    payload = json.dumps({"spec": spec.to_json(), "hierarchies": list(hierarchy_digests), "fingerprint": fingerprint,
                          "seed": spec.seed, "ppdp": ppdp_version()}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:32]
