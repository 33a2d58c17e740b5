"""ppdp: privacy-preserving data publishing inside SQL databases.

One package with three layers: ``ppdp.engine`` (core: hierarchies, privacy models, evaluators,
optimizers, the release pipeline; the CLI is ``ppdp.engine.app.cli``), ``ppdp.sql`` (all SQL text
and dialect handling) and ``ppdp.connectors`` (one module per database).
"""

__version__ = "0.1.0"

# The Python API for orchestrators (engine/app/api.py, engine/app/outcome.py), imported on first use so
# that ``import ppdp.sql`` stays free of the engine and ``ppdp --help`` stays instant.
_API = {"run_release": "ppdp.engine.app.api", "run_job": "ppdp.engine.app.api", "verify_release": "ppdp.engine.app.api",
        "VerifyResult": "ppdp.engine.app.api", "RunResult": "ppdp.engine.app.outcome", "ExitCode": "ppdp.engine.app.outcome",
        "ModelCheck": "ppdp.engine.app.outcome", "HeldBack": "ppdp.engine.app.outcome"}
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'ppdp' has no attribute {name!r}")
