"""The exception tree of ppdp. Every message says what is wrong and ends with a hint."""

from typing import Any


class PpdpError(Exception):
    """Base of every error ppdp raises on purpose (the CLI turns these into exit codes 1-3,
    engine/app/outcome.py)."""

    # Set by run_release when the error ended a run it had recorded (the failed run's row), read
    # with getattr(exc, "run_id", None) by engine/app/outcome.py: declared only, like ``verification``.
    run_id: str
    release: str


class SpecError(PpdpError):
    """The release spec is malformed or names something that does not exist."""


class HierarchyError(PpdpError):
    """A generalization hierarchy is malformed or does not cover the data."""


class DataError(PpdpError):
    """The source data cannot be anonymized as asked (empty, NULLs, k > rows, ...)."""


class UnknownNameError(SpecError, KeyError):
    """A registry lookup failed; the message suggests the closest registered name."""

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class VerificationError(PpdpError):
    """The independent SQL check of a materialized release failed; nothing was published."""

    # Set by the verify stage before raising (what was checked and found), read by the run record
    # with getattr(exc, "verification", {}): declared only, so an unset one stays absent.
    verification: dict[str, Any]


class PrivacyRefusal(PpdpError):
    """The privacy model or the cross-version rule refused the step (exit code 3, not 2: the spec
    and the data are valid, the release they ask for is not safe to publish)."""


class ModelRefusal(DataError, PrivacyRefusal):
    """No non-empty release meets the privacy models on this data (checked before any write)."""


class CrossVersionRefusal(VerificationError, PrivacyRefusal):
    """A new version would let someone holding every version single out records; nothing was published."""


class KeptColumnsRefusal(DataError, PrivacyRefusal):
    """The QIDs with the kept columns single out records the QIDs alone do not, under
    ``[privacy] kept_columns = "refuse"``; nothing was published."""


class ConnectorError(PpdpError):
    """The database could not be reached or refused a statement."""


class RunInProgress(ConnectorError):
    """Another run of the same release holds its run lock (the request worker retries later)."""


def did_you_mean(name: str, options) -> str:
    """" Did you mean 'x'?" for the option closest to a mistyped ``name``, or "" when none is
    close: the one place that suggests a name (registries, spec keys, choices, columns)."""
    import difflib

    close = difflib.get_close_matches(name, list(options), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def known_names(names) -> str:
    """The tail of an "unknown name" message: " Known: a, b." or, with nothing to choose from,
    a sentence that says so (never "Known: .")."""
    names = sorted(names)
    return f" Known: {', '.join(names)}." if names else " Nothing is allowed here."
