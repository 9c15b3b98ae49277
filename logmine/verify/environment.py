"""The ways verify tries to provide a task's environment, in the documented order (docs/environments.md),
and the ``environments`` row that records how it went.

``env_mode``:

* ``auto`` (default): bubblewrap tries ``host`` first, then ``built``; Docker/Podman only ``built``
  (a container cannot see the host's toolchains);
* ``host``, ``built``, ``none``: that way only (:mod:`logmine.environment.provide`).

Host mode is skipped for ``built`` when it cannot provide what the session used: a virtualenv the
commands ran from, or a dependency directory the recipe would create (``.venv``, ``node_modules``),
that the live repository does not have. A way that cannot be provided (offline build, no engine)
gives its reason to the next; when none is left, every reason is kept and the task's commands are
``unscored`` with it, never ``fails_after`` (its file checks, which need no environment, are graded in
the bare sandbox: ``none``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from logmine.environment.detect import Environment
from logmine.environment.provide import Provided

ENV_MODES = ("auto", "host", "built", "none")


@dataclass
class EnvironmentRecord:
    """What goes into the ``environments`` table for one task."""

    environment: Environment
    provided: Provided | None = None
    tried: list[str] = field(default_factory=list)  # "mode: reason" of the ways that did not work

    def row(self, task_id: str, seg_gen: int | None) -> dict:
        p = self.provided
        recipe = p.recipe if p else None
        return {"task_id": task_id, "seg_gen": seg_gen, **self.environment.to_row(),
                "mode": p.mode if p else "unavailable",
                "mode_reason": p.reason if p else "; ".join(self.tried) or None,
                "recipe_key": recipe.key if recipe else None, "base_image": recipe.base_image if recipe else p and p.image,
                "binds": [f"{src} -> {dst}" for src, dst in (p.binds if p else ())],
                "notes": [*(p.notes if p else ()), *self.tried], "provide_s": p.seconds if p else None,
                "cached": p.cached if p else None}


def modes_to_try(env_mode: str, backend: str) -> tuple[str, ...]:
    """The ways to try, in order, for the requested mode on ``backend``."""
    if env_mode not in ENV_MODES:
        raise ValueError(f"unknown environment mode {env_mode!r}; expected one of {', '.join(ENV_MODES)}")
    if env_mode == "auto":
        return ("host", "built") if backend == "bwrap" else ("built",)
    return (env_mode,)
