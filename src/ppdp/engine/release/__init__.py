"""The release pipeline: ``run.run_release`` takes the run lock, validates the spec against the
source, lets the release method plan the published rows, and runs the shared stages (stages/):
row ids, the version table, the cross-version check, verification, delta, view, grants and the
run record. Methods are looked up by name and passed to the stages as arguments."""
