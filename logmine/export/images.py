"""``export tmax --build-images``: one image per task environment, named by the rows that use it.

open-instruct's TMax environment starts the container ``env_config.image`` names (or the bundle's
``image.txt``) and uploads the seeds to ``/workspace``; it never builds the bundle's Dockerfile. A
task whose tests need a ``.venv``, ``node_modules`` or a built toolchain therefore passes only when
that image already holds them. :class:`ImageBuilder` builds it: the task's install recipe
(:func:`~logmine.environment.recipe.recipe_for`) over the bundle's redacted seeds, without the final
copy of the start state (the environment uploads it), with the engine's ``build``
(:func:`~logmine.environment.build.build_image`, which reuses an image already built for the same
recipe key). The image is tagged ``PREFIX/NAME:KEY`` — ``NAME`` the repository's directory name,
``KEY`` the recipe's key (base image, install steps, manifests and lock files) — so tasks of one
repository and one lock file share it, and a changed lock file gets a new tag. ``--push`` pushes each
tag once with the same engine (log in to the registry first: ``podman login REGISTRY``).

A task with nothing to install keeps the language's base image: building would only copy it.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from logmine.environment.build import build_image, run_step
from logmine.environment.detect import Environment
from logmine.environment.recipe import NoRecipe, recipe_for
from logmine.errors import LogmineError

ENGINES = ("podman", "docker")
DEFAULT_PREFIX = "logmine-env"
PUSH_TIMEOUT_S = 1800.0


class ImageError(LogmineError):
    """The images cannot be built or pushed at all (no engine, a push without a registry prefix)."""


@dataclass(frozen=True, slots=True)
class ImageOptions:
    prefix: str = DEFAULT_PREFIX  # REGISTRY/NAMESPACE for a registry; the default names local images
    push: bool = False
    engine: str | None = None  # podman or docker; None: the first of them on PATH


@dataclass
class ImageBuilder:
    """Builds (once per tag) and tags the image of each task environment; remembers what it made."""

    options: ImageOptions
    engine: str = ""
    tags: dict[str, bool] = field(default_factory=dict)  # tag -> built by this export (False: reused)

    def __post_init__(self) -> None:
        prefix = self.options.prefix.strip("/")
        if not prefix or not re.fullmatch(r"[a-z0-9][a-z0-9._:/-]*", prefix):
            raise ImageError(f"invalid --image-prefix {self.options.prefix!r}: lower-case REGISTRY/NAMESPACE")
        if self.options.push and prefix == DEFAULT_PREFIX:
            raise ImageError("--push needs --image-prefix REGISTRY/NAMESPACE (where the images go)")
        self.engine = self.options.engine or next((e for e in ENGINES if shutil.which(e)), "")
        if not self.engine:
            raise ImageError("--build-images needs podman or docker; neither is installed")
        if self.engine not in ENGINES or shutil.which(self.engine) is None:
            raise ImageError(f"--build-images needs podman or docker; {self.engine} is "
                             f"{'not installed' if self.engine in ENGINES else 'neither'}")

    def image_for(self, env: Environment, seeds: Path, name: str) -> str | None:
        """The tag of the image holding ``env``'s dependencies for the tree ``seeds``, built and
        pushed as asked; None when there is nothing to install. Raises
        :class:`~logmine.environment.build.EnvironmentUnavailable` with the reason."""
        try:
            recipe = recipe_for(env, seeds)
        except NoRecipe:
            return None
        tag = f"{self.options.prefix.strip('/')}/{_image_name(name)}:{recipe.key}"
        if tag in self.tags:
            return tag
        built = build_image(recipe, seeds, self.engine)
        self._engine("tag", built.where, tag)
        if self.options.push:
            self._engine("push", tag)
        self.tags[tag] = not built.cached
        return tag

    def _engine(self, *args: str) -> None:
        run_step([self.engine, *args], Path.cwd(), dict(os.environ), PUSH_TIMEOUT_S, f"{self.engine} {args[0]}")


def _image_name(name: str) -> str:
    """An image name from a repository's directory name: lower case, ``[a-z0-9._-]``, never empty."""
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")
    return cleaned or "task"
