"""ppdp: privacy-preserving data publishing inside SQL databases.

One package with three layers: ``ppdp.engine`` (core: hierarchies, privacy models, evaluators,
optimizers, the release pipeline; the CLI is ``ppdp.engine.cli``), ``ppdp.sql`` (all SQL text
and dialect handling) and ``ppdp.connectors`` (one module per database).
"""

__version__ = "0.1.0"
