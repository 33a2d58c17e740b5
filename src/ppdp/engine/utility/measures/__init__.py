"""The built-in utility measures, one module each (registered by ppdp/registry.py ``KINDS``)."""
