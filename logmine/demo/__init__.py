"""The demo corpus shipped with logmine (its README.md says what each file is)."""

from pathlib import Path

DEMO_DIR = Path(__file__).parent
DEMO_HOME = DEMO_DIR / "codex-home"  # laid out like ~/.codex
DEMO_INPUTS = (DEMO_HOME / "sessions", DEMO_HOME / "history.jsonl")
