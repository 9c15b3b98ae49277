"""Moved to :mod:`logmine.redact`; these names stay importable from here until every caller moved."""

from logmine.redact import RULES_FILE, Redactor, default_redactor, port_re2, secret_key_kind, skipped_rules

__all__ = ["RULES_FILE", "Redactor", "default_redactor", "port_re2", "secret_key_kind", "skipped_rules"]
