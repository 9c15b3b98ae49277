"""The agent's tool protocol: what the exported rows tell a model and what the agent harness enforces.

One definition below both sides: ``export`` writes it into its data (the SFT conversations' tool
schemas and tool results, the TMax rows' system and user messages) and ``agent`` runs it in the
sandbox (the tools it offers, the observations it appends, the submission it watches for).

- Tools: :data:`BASH_TOOL` ``bash {"command": str}`` and :data:`APPLY_PATCH_TOOL` ``apply_patch
  {"patch": str}`` (:data:`CANONICAL_TOOLS`, the SFT export's canonical interface).
- Tool results: :func:`format_observation`, the output body then ``[exit code: N]``.
- Submission: a command whose output contains :data:`SUBMIT` (``echo SUBMIT``), described by
  :data:`SYSTEM_PROMPT` and :data:`USER_PROMPT`, the messages of every TMax row.

Only the standard library: importing it costs nothing.
"""

from __future__ import annotations

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
SYSTEM_PROMPT = (
    "You are a helpful coding assistant. You have access to a bash terminal: call the `bash` tool with "
    "one command at a time; the working directory, `cd` and exported variables persist between calls. "
    "Work in /workspace. When the task is done, submit by running: echo " + SUBMIT
)
# the user message of a TMax row: ``USER_PROMPT.format(prompt=TASK_TEXT, where="" or "/SUBDIR")``
USER_PROMPT = (
    "Please solve this task:\n\n{prompt}\n\n## Important Rules\n"
    "1. Every response must contain exactly one tool call to `bash`.\n"
    "2. The project is in /workspace{where}.\n"
    "3. Do not use interactive commands; wrap long-running ones in `timeout`.\n"
    "4. When you are done, run `echo " + SUBMIT + "` as its own command."
)

OBSERVATION_EXIT = "[exit code: {}]"

BASH_TOOL = {"type": "function", "function": {
    "name": "bash",
    "description": "Run a shell command in the repository. Returns its output, then a line "
                   "`[exit code: N]`.",
    "parameters": {"type": "object", "properties": {
        "command": {"type": "string", "description": "The command line, run by bash."}},
        "required": ["command"]}}}
APPLY_PATCH_TOOL = {"type": "function", "function": {
    "name": "apply_patch",
    "description": "Edit files. The patch starts with `*** Begin Patch`, ends with `*** End Patch`, and "
                   "holds `*** Add File: PATH`, `*** Update File: PATH` (with `@@` hunks of ` `, `-`, `+` "
                   "lines) and `*** Delete File: PATH` sections. Returns the files changed, then a line "
                   "`[exit code: N]`.",
    "parameters": {"type": "object", "properties": {
        "patch": {"type": "string", "description": "The patch text."}},
        "required": ["patch"]}}}
CANONICAL_TOOLS = (BASH_TOOL, APPLY_PATCH_TOOL)


def format_observation(body: str | None, exit_code: int | None) -> str:
    """A tool result as the model sees it: the output body, then ``[exit code: N]`` on a line of its
    own (a newline is added only when the body does not end with one; an empty body gives just the
    marker). Without a known exit code (a tool error, a still-running process) the body alone."""
    body = body or ""
    if exit_code is None:
        return body
    newline = "" if not body or body.endswith("\n") else "\n"
    return f"{body}{newline}{OBSERVATION_EXIT.format(exit_code)}"
