"""The one error base of logmine, at the bottom of the stack (it imports nothing of logmine).

Every error logmine raises on purpose derives from :class:`LogmineError`: a message that names what
went wrong, and an optional hint that says what to do about it. The CLI catches this one type and
prints ``Error: <message> (<hint>)``; anything else is a bug, reported with the path of its traceback.

Stage errors keep a second, built-in base (``ValueError`` for bad input, ``RuntimeError`` for a run
that cannot start) so that callers who catch those still do.
"""

from __future__ import annotations


class LogmineError(Exception):
    """A failure logmine expected and can explain in one line."""

    def __init__(self, message: str = "", hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message

    def one_line(self) -> str:
        """``message (hint)`` on one line, as the CLI prints it after ``Error: ``."""
        text = " ".join(self.message.split()) or type(self).__name__
        return f"{text} ({self.hint})" if self.hint else text
