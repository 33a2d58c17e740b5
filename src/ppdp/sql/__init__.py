"""SQL text and dialect handling: every statement ppdp runs is built here."""
