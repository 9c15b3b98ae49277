"""logmine: turn coding-agent session logs (OpenAI Codex CLI) into verified training data.

Stages, one subpackage each: ``ingest`` (this release) → segment → verify → export → train.
"""

__version__ = "0.1.0"
