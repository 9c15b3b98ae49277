"""Cut a session's events into tasks: one genuine user request and the work it caused.

A task starts at a genuine request and runs until the next one. Injected context is never a
request. A short follow-up that only continues the work ("continue", "yes", "try again", or a bare
error paste right after the agent asked for it) extends the running task instead; the rules come
from the pipeline's ``[segment]`` section. A request repeated verbatim with no work in between (a
client retry) is the same request. A forked session's copy of its parent's history holds the
parent's requests, not its own: they open no task, and the copy's work, which comes before the
child's first request, belongs to none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from logmine.ingest.records import Event

# Messages are read from the model-visible history; event_msg/user_message and agent_message repeat them.
MESSAGE_TYPES = frozenset({"response_item/message", "chat/message", "user/text", "assistant/text"})
_VSCODE_PREFIX = "## My request for Codex:"
_OUTPUT_LINE = re.compile(r"^\s*(at |File \"|\w*(Error|Exception)\b|Traceback|[\w./-]+:\d+|[>E|^~]\s|\s{2,}|[-=_*#]{3,})")


@dataclass
class TaskSpan:
    """The events of one task, in order (request first)."""

    index: int
    request: Event
    events: list[Event] = field(default_factory=list)
    followups: list[str] = field(default_factory=list)

    @property
    def first_seq(self) -> int:
        return self.request.seq

    @property
    def last_seq(self) -> int:
        return self.events[-1].seq


class FollowupRules:
    """When does a user message continue the running task? (compiled ``[segment]`` settings)"""

    def __init__(self, config: dict):
        self.phrases = {p.lower() for p in config["followup_phrases"]}
        self.patterns = [re.compile(p) for p in config["followup_patterns"]]
        self.error_paste = re.compile(config["error_paste_pattern"])
        self.asked = re.compile(config["asked_for_output_pattern"])
        self.max_chars = config["followup_max_chars"]
        self.max_prose_words = config["error_paste_max_prose_words"]

    def continues(self, text: str, last_agent_message: str | None) -> bool:
        stripped = text.strip()
        short = stripped.lower().rstrip(".!?… ")
        if len(stripped) <= self.max_chars and (short in self.phrases or any(p.fullmatch(stripped) for p in self.patterns)):
            return True
        return bool(last_agent_message and self.asked.search(last_agent_message) and self._is_error_paste(stripped))

    def _is_error_paste(self, text: str) -> bool:
        if not self.error_paste.search(text):
            return False
        prose = [line for line in text.splitlines() if line.strip() and not _OUTPUT_LINE.match(line)]
        return sum(len(line.split()) for line in prose) <= self.max_prose_words


def request_text(event: Event) -> str:
    """The user's words: VS Code wraps them after a ``## My request for Codex:`` heading."""
    text = event.text or ""
    if _VSCODE_PREFIX in text:
        text = text.split(_VSCODE_PREFIX, 1)[1]
    return text.strip()


def is_request(event: Event) -> bool:
    """A genuine user message of the session itself: not injected context, and not one of the
    parent's requests a forked session copied with its history (``copied_from``)."""
    return (event.kind == "user_message" and not event.is_injected and not event.copied_from
            and event.record_type in MESSAGE_TYPES and bool(request_text(event)))


def split_tasks(events: list[Event], rules: FollowupRules) -> list[TaskSpan]:
    """Tasks of one session; events before the first request belong to none."""
    tasks: list[TaskSpan] = []
    current: TaskSpan | None = None
    last_agent: str | None = None
    worked = False  # anything but messages since the current task's last request?
    for event in events:
        if is_request(event):
            text = request_text(event)
            if current is not None and (
                rules.continues(text, last_agent)
                or (not worked and text == request_text(current.request))
            ):
                if worked or text != request_text(current.request):
                    current.followups.append(text)
                current.events.append(event)
                worked = False
                continue
            current = TaskSpan(len(tasks), event, [event])
            tasks.append(current)
            worked = False
            continue
        if current is None:
            continue
        current.events.append(event)
        if event.kind == "assistant_message" and event.record_type in MESSAGE_TYPES:
            last_agent = event.text
        elif event.kind in ("tool_call", "tool_output", "patch"):
            worked = True
    return tasks
