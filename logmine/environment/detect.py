"""What software a task's workspace needs: the languages and manifests of its tree, the tools its commands ran.

:func:`detect` reads the rebuilt start tree (manifests, version pins) and the task's commands (as
:mod:`logmine.commandline` parses them: only words that execute count) and returns an
:class:`Environment` record. It is a pure function of those two inputs; how the environment is then
provided (bound from the host, or built) is :mod:`.host` and :mod:`.recipe`'s business.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from logmine.commandline import run_target, simple_commands

# manifest file name -> language; lock files make a manifest reproducible
MANIFESTS: dict[str, str] = {
    "requirements.txt": "python", "requirements-dev.txt": "python", "requirements-test.txt": "python",
    "pyproject.toml": "python", "uv.lock": "python", "poetry.lock": "python", "Pipfile": "python",
    "Pipfile.lock": "python", "setup.py": "python", "setup.cfg": "python", "tox.ini": "python",
    ".python-version": "python",
    "package.json": "node", "package-lock.json": "node", "yarn.lock": "node", "pnpm-lock.yaml": "node",
    ".nvmrc": "node", ".node-version": "node",
    "go.mod": "go", "go.sum": "go",
    "Cargo.toml": "rust", "Cargo.lock": "rust", "rust-toolchain": "rust", "rust-toolchain.toml": "rust",
    "Gemfile": "ruby", "Gemfile.lock": "ruby",
    "pom.xml": "java", "build.gradle": "java", "build.gradle.kts": "java",
}
# programs that say which toolchain a session used (by base name)
TOOLS: dict[str, str] = {
    "python": "python", "python3": "python", "pytest": "python", "py.test": "python", "pip": "python",
    "pip3": "python", "uv": "python", "uvx": "python", "poetry": "python", "tox": "python", "nox": "python",
    "pipenv": "python", "hatch": "python", "pdm": "python",
    "node": "node", "npm": "node", "npx": "node", "yarn": "node", "pnpm": "node", "jest": "node",
    "vitest": "node", "tsc": "node", "mocha": "node",
    "go": "go", "cargo": "rust", "rustc": "rust", "ruby": "ruby", "bundle": "ruby", "rake": "ruby",
    "rspec": "ruby", "mvn": "java", "gradle": "java", "java": "java", "make": "make",
}
RUNNERS = ("uv", "poetry", "pipenv", "hatch", "pdm", "npm", "yarn", "pnpm", "cargo", "go", "bundle")
_PY_VERSION = re.compile(r"^python(\d(?:\.\d+)?)$")
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", "target", "vendor", ".tox", "dist", "build"}
_MAX_DEPTH = 2  # manifests this deep below the tree root are found (monorepo packages)


@dataclass(frozen=True, slots=True)
class Environment:
    """The software a task's start state needs, as far as its tree and its commands tell."""

    languages: tuple[str, ...] = ()
    manifests: tuple[str, ...] = ()  # paths relative to the tree root
    tools: tuple[str, ...] = ()  # toolchain programs the commands ran (base names)
    interpreters: tuple[str, ...] = ()  # interpreter paths as run: .venv/bin/python, /usr/bin/python3
    venvs: tuple[str, ...] = ()  # virtualenv directories the commands used (relative to their cwd)
    runners: tuple[str, ...] = ()  # environment managers that ran commands: uv, poetry, npm, …
    versions: tuple[tuple[str, str], ...] = ()  # (tool, version or constraint) from pins and manifests

    def to_row(self) -> dict:
        row = asdict(self)
        row["versions"] = json.dumps(dict(self.versions), sort_keys=True)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in row.items()}

    @classmethod
    def from_row(cls, row: dict) -> Environment:
        values = {f.name: tuple(row.get(f.name) or ()) for f in fields(cls) if f.name != "versions"}
        versions = json.loads(row.get("versions") or "{}")
        return cls(**values, versions=tuple(sorted(versions.items())))

    def version(self, tool: str) -> str | None:
        return dict(self.versions).get(tool)

    @property
    def empty(self) -> bool:
        return not (self.manifests or self.venvs or self.runners or set(self.tools) - {"make"})


def detect(tree: Path | None, commands: list[str]) -> Environment:
    """The environment of the tree at ``tree`` (None: unknown) worked by ``commands``."""
    manifests = _manifests(tree) if tree is not None else []
    languages = {MANIFESTS[Path(m).name] for m in manifests}
    tools: set[str] = set()
    interpreters: set[str] = set()
    venvs: set[str] = set()
    runners: set[str] = set()
    for line in commands:
        for command in simple_commands(line):
            _note_command(command.argv, tools, interpreters, venvs, runners)
    languages |= {TOOLS[t] for t in tools if TOOLS.get(t) not in (None, "make")}
    versions = _versions(tree, manifests) if tree is not None else {}
    for path in interpreters:
        match = _PY_VERSION.match(Path(path).name)
        if match and "." in match.group(1):
            versions.setdefault("python", match.group(1))
    return Environment(
        languages=tuple(sorted(languages)), manifests=tuple(manifests), tools=tuple(sorted(tools)),
        interpreters=tuple(sorted(interpreters)), venvs=tuple(sorted(venvs)), runners=tuple(sorted(runners)),
        versions=tuple(sorted(versions.items())))


def _note_command(argv: tuple[str, ...], tools: set, interpreters: set, venvs: set, runners: set) -> None:
    program = argv[0]
    name = program.rsplit("/", 1)[-1]
    if name in ("source", ".") and len(argv) > 1 and argv[1].endswith("/bin/activate"):
        venvs.add(argv[1][: -len("/bin/activate")])
        return
    base = "python" if _PY_VERSION.match(name) else name
    if base not in TOOLS:
        return
    tools.add(name if base != "python" else ("python3" if name.startswith("python3") else base))
    if "/" in program:
        interpreters.add(program)
        if "/bin/" in program:
            root = program.rsplit("/bin/", 1)[0]
            if root and not program.startswith(("/", "~")):  # absolute ones are installations, not venvs
                venvs.add(root)
    if name in RUNNERS:
        runners.add(name)
        target = run_target(argv)
        if target is not argv:  # `uv run --with pytest pytest`, `poetry run pytest`: the program it starts
            started = target[0].rsplit("/", 1)[-1]
            tools.add(started if started in TOOLS else "")
    elif base == "python" and argv[1:3] == ("-m", "pytest"):
        tools.add("pytest")
    tools.discard("")


def _manifests(tree: Path) -> list[str]:
    found = []

    def walk(directory: Path, depth: int) -> None:
        try:
            entries = sorted(directory.iterdir())
        except OSError:
            return
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_file() and entry.name in MANIFESTS:
                found.append(str(entry.relative_to(tree)))
            elif entry.is_dir() and depth < _MAX_DEPTH and entry.name not in _SKIP_DIRS \
                    and not entry.name.startswith("."):
                walk(entry, depth + 1)

    walk(tree, 0)
    return found


def _versions(tree: Path, manifests: list[str]) -> dict[str, str]:
    versions: dict[str, str] = {}
    for rel in manifests:
        path = tree / rel
        name = path.name
        try:
            text = path.read_text(errors="replace")[:200_000]
        except OSError:
            continue
        if name == ".python-version" and text.strip():
            versions.setdefault("python", text.split()[0])
        elif name in (".nvmrc", ".node-version") and text.strip():
            versions.setdefault("node", text.split()[0].lstrip("v"))
        elif name == "pyproject.toml":
            try:
                requires = tomllib.loads(text).get("project", {}).get("requires-python")
            except tomllib.TOMLDecodeError:
                requires = None
            if isinstance(requires, str):
                versions.setdefault("python", requires)
        elif name == "package.json":
            try:
                node = (json.loads(text).get("engines") or {}).get("node")
            except (ValueError, AttributeError):
                node = None
            if isinstance(node, str):
                versions.setdefault("node", node)
        elif name == "go.mod":
            match = re.search(r"^go\s+(\S+)", text, re.M)
            if match:
                versions.setdefault("go", match.group(1))
    return versions
