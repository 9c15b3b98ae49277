"""``apply_patch`` as a command, for the replay sandbox: ``python -m logmine.patch [PATCH]``.

Mirrors Codex's standalone ``apply_patch`` binary: the patch comes from the one argument or, when
there is none, from stdin; it applies under the current directory; success prints
``Success. Updated the following files:`` and one ``A|M|D path`` line per file. A patch that fails
prints ``error: <reason>`` to stderr and exits 1 (the wording agents see from Codex's tool).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ._apply import apply_patch
from ._model import PatchError
from ._parse import parse_patch

USAGE = "Usage: apply_patch 'PATCH'\n       echo 'PATCH' | apply_patch"
HELP = f"""{USAGE}

Apply a Codex apply_patch patch (*** Begin Patch ... *** End Patch) to files under the
current directory. Paths in the patch must be relative and stay inside it. Nothing is
written unless every file operation succeeds."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; ``argv`` is like ``sys.argv`` (``argv[0]`` is the program). Returns the exit code.

    0 on success, 1 when the patch is invalid or does not apply, 2 on a usage error.
    """
    args = list(sys.argv if argv is None else argv)[1:]
    if args in (["-h"], ["--help"]):
        print(HELP)
        return 0
    if len(args) > 1:
        print("Error: apply_patch accepts exactly one PATCH argument.", file=sys.stderr)
        return 2
    if args:
        patch = args[0]
    else:
        # Bytes, not text mode: universal newlines would rewrite the patch's line endings.
        patch = sys.stdin.buffer.read().decode("utf-8", errors="replace")
        if not patch:
            print(USAGE, file=sys.stderr)
            return 2
    try:
        summary = apply_patch(parse_patch(patch), Path.cwd())
    except PatchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    lines = ["Success. Updated the following files:"] + [f"{letter} {path}" for letter, path in summary]
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return 0
