"""Secret redaction, the one gate every text passes before logmine writes or exports it.

A bottom-layer package: it imports nothing from the stages (only :mod:`logmine.errors`), so the
store and every stage can call it. Each secret becomes a consistent, format-preserving pseudonym
derived with the store's key (:class:`Mask`, :func:`store_mask`), or without a key a typed
placeholder, ``[REDACTED:<kind>]``; only the secret itself is replaced (``Authorization: Bearer ``
and ``NAME=`` stay visible). Values found by their context (a ``password`` key, ``TOKEN=``) must
also look like a secret (:func:`~logmine.redact.patterns.plausible`). See ``docs/redaction.md`` for
the rules, the engines, the key and the measured precision.

Text:
    :func:`redact_text` (plain text: a line, a file, a command's output), :func:`redact_json`
    (one JSON document's text, kept valid JSON), :func:`redact_value` (parsed JSON or any
    str/list/dict value), :func:`redact_bytes` (UTF-8 or not), :func:`redact_table` (every
    string column of a pyarrow table). :class:`Redactor` does the same and tallies counts.
Checking before publishing:
    :func:`scan` reports per kind and per file what would be redacted (:class:`ScanReport`).
"""

from __future__ import annotations

from logmine.redact.engine import Finding, Redactor, default_redactor, engine_name, ruleset, skipped_rules
from logmine.redact.files import JsonLines, redact_tree, write_table, write_text
from logmine.redact.gitleaks import RULES_FILE, port_re2
from logmine.redact.patterns import secret_key_kind
from logmine.redact.pseudonym import PLACEHOLDER, PLACEHOLDERS, STYLES, Mask, RedactionKeyError, store_mask
from logmine.redact.scan import ScanReport, scan
from logmine.redact.tables import redact_bytes, redact_json, redact_table, redact_text, redact_value

__all__ = [
    "JsonLines", "redact_tree",
    "write_table",
    "write_text",
    "Finding", "Mask", "PLACEHOLDER", "PLACEHOLDERS", "RULES_FILE", "RedactionKeyError", "Redactor", "STYLES", "ScanReport", "default_redactor", "engine_name", "port_re2",
    "redact_bytes", "redact_json", "redact_table", "redact_text", "redact_value", "ruleset", "scan",
    "secret_key_kind", "skipped_rules", "store_mask",
]
