"""ppdp's core: hierarchies, encoding, privacy models, utility metrics, evaluators, optimizers,
and the release pipeline. The CLI is engine.app.cli (console script ``ppdp``)."""

from ppdp import __version__  # noqa: F401 (one version, in the package root)
