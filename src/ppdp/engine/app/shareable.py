"""What of a verification check may leave the database.

A check as recorded in ``_ppdp.runs.verification`` holds the model's parameters and the SQL that
verified it. Both stay in the private run record; what ppdp hands out (the external and internal
report, ``ppdp job certificate``, every ``--json``) goes through ``shareable_check``: a parameter
the model declares private (``PrivacyModel.private_params``: delta-presence's research rule)
becomes ``WITHHELD``, and the query text is left out when the model says it holds source values
as literals (``PrivacyModel.query_names_values``: an ordered or hierarchical ground distance
lists the whole sensitive domain, values held only by suppressed rows included). A check whose
model cannot be rebuilt from its parameters (an extension no longer installed) fails closed:
its query is left out too.
"""

from __future__ import annotations

from typing import Any

from ppdp.engine.privacy.base import build_model

WITHHELD = "(withheld: it names source values)"


def shareable_params(model: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with every parameter the model declares private replaced by ``WITHHELD``."""
    try:
        private = build_model(model, dict(params)).private_params
    except Exception:  # an unknown or changed model: keep what is plainly a number
        return {k: (v if isinstance(v, bool | int | float) else WITHHELD) for k, v in params.items()}
    return {k: (WITHHELD if k in private else v) for k, v in params.items()}


def shareable_query(model: str, params: dict[str, Any], query: str | None) -> str | None:
    """The verification query if it holds no source value, else ``WITHHELD``."""
    if query is None:
        return None
    try:
        names_values = build_model(model, dict(params)).query_names_values()
    except Exception:
        names_values = True
    return WITHHELD if names_values else query


def shareable_check(check: dict[str, Any]) -> dict[str, Any]:
    """A recorded check (model, params, query, ...) as it may be shown outside the database."""
    out = dict(check)
    out["params"] = shareable_params(check["model"], check.get("params") or {})
    if "query" in check:
        out["query"] = shareable_query(check["model"], check.get("params") or {}, check.get("query"))
    return out
