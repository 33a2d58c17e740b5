"""The shared core every layer above reads: the release spec (spec.py), generalization
hierarchies (hierarchy.py), the histogram encoding of a source table (encoding.py) and the
private catalog schema ``_ppdp`` (catalog.py)."""
