"""Recognise context that Codex injects into the conversation as if the user had typed it.

Model-visible ``role: user`` messages also carry the environment context, AGENTS.md and user
instructions, user shell commands and synthetic turn-abort notes; from 0.98 ``role: developer``
messages carry permissions, skills and collaboration-mode instructions. None of them is a user
request, so each is marked with the kind of injection (``docs/codex-format.md``, "Injected context").
"""

from __future__ import annotations

_PREFIXES = (
    ("<environment_context>", "environment_context"),
    ("<user_instructions>", "user_instructions"),
    ("# AGENTS.md instructions for", "agents_md"),
    ("<INSTRUCTIONS>", "agents_md"),
    ("<turn_aborted>", "turn_aborted"),
    ("<user_shell_command>", "user_shell_command"),
    ("<permissions instructions>", "permissions"),
    ("<collaboration_mode>", "collaboration_mode"),
    ("<skills_instructions>", "skills"),
    ("<apps_instructions>", "apps"),
    ("<personality>", "personality"),
    ("<subagent_notification>", "subagent_notification"),
    ("<model_switch>", "model_switch"),
    ("<realtime_conversation>", "realtime"),
    ("Warning: apply_patch was requested via", "tool_warning"),  # 0.9x, when the model shells out to apply_patch
)


def injected_kind(role: str | None, text: str | None) -> str | None:
    """The kind of injected context a message is, or None for a genuine user/assistant message."""
    if role in ("developer", "system"):
        return role
    if role != "user" or not text:
        return None
    head = text.lstrip()[:64]
    for prefix, kind in _PREFIXES:
        if head.startswith(prefix):
            return kind
    return None
