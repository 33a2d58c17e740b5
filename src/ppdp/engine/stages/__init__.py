"""The stages of a release run, one module each, in the order engine/release.py runs them:

validate (read and check every input; writes nothing) -> plan (the release method's plan:
published rows, withheld rows, private state) -> materialize (the candidate rows aside) ->
history (difference-attack check across versions and deltas; holds changes back or refuses) ->
publish (the version table, shuffled) -> verify (independent SQL checks) -> switch (delta and
view) -> access (grants and revokes) -> record (the run row).

Stages share a ``RunContext``: the connector, the run's identity, and each stage's frozen
result. Fault injection is not here: tests pass ``on_phase``.
"""
