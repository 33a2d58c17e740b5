"""ppdp's core: hierarchies, encoding, privacy models, utility metrics, evaluators, optimizers,
and the release pipeline. The CLI is engine.cli (console script ``ppdp``)."""

__version__ = "0.1.0"
