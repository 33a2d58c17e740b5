"""Utility of a published version: what the data can still do (docs/concepts/utility.md)."""
