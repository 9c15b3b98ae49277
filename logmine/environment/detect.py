"""What software a task's workspace needs: the languages and manifests of its tree, the tools its commands ran.

:func:`detect` reads the rebuilt start tree (manifests, version pins) and the task's commands (as
:mod:`logmine.commandline` parses them: only words that execute count) and returns an
:class:`Environment` record. It is a pure function of those two inputs; how the environment is then
provided (bound from the host, or built) is :mod:`.host` and :mod:`.recipe`'s business.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path, PurePosixPath

from logmine.commandline import run_target, simple_commands

# manifest file name -> language; lock files make a manifest reproducible
MANIFESTS: dict[str, str] = {
    "requirements.txt": "python", "requirements-dev.txt": "python", "requirements-test.txt": "python",
    "pyproject.toml": "python", "uv.lock": "python", "poetry.lock": "python", "Pipfile": "python",
    "Pipfile.lock": "python", "setup.py": "python", "setup.cfg": "python", "tox.ini": "python",
    ".python-version": "python",
    "package.json": "node", "package-lock.json": "node", "yarn.lock": "node", "pnpm-lock.yaml": "node",
    ".nvmrc": "node", ".node-version": "node", "pnpm-workspace.yaml": "node",
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
    "vitest": "node", "tsc": "node", "mocha": "node", "playwright": "node", "cypress": "node",
    "go": "go", "cargo": "rust", "rustc": "rust", "ruby": "ruby", "bundle": "ruby", "rake": "ruby",
    "rspec": "ruby", "mvn": "java", "gradle": "java", "java": "java", "make": "make",
}
RUNNERS = ("uv", "poetry", "pipenv", "hatch", "pdm", "npm", "yarn", "pnpm", "cargo", "go", "bundle")
_PY_VERSION = re.compile(r"^python(\d(?:\.\d+)?)$")
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", "target", "vendor", ".tox", "dist", "build"}
_MAX_DEPTH = 3  # manifests this deep below the tree root are found (monorepo packages: apps/web/x)
# options of runners that name the directory they run in (``make -C sub``, ``npm --prefix web``)
_DIR_OPTIONS = {"-C", "--dir", "--prefix", "--cwd", "--directory", "--project", "--root"}
#: A command and the directory it ran in (absolute, as recorded; None: the tree's root).
Ran = tuple[str, str | None]


@dataclass(frozen=True, slots=True)
class Environment:
    """The software a task's start state needs, as far as its tree and its commands tell."""

    languages: tuple[str, ...] = ()
    manifests: tuple[str, ...] = ()  # paths relative to the tree root
    tools: tuple[str, ...] = ()  # toolchain programs the commands ran (base names)
    interpreters: tuple[str, ...] = ()  # interpreter paths as run: .venv/bin/python, /usr/bin/python3
    venvs: tuple[str, ...] = ()  # virtualenv directories the commands used (relative to the tree root)
    runners: tuple[str, ...] = ()  # environment managers that ran commands: uv, poetry, npm, …
    versions: tuple[tuple[str, str], ...] = ()  # (tool, version or constraint) from pins and manifests
    dirs: tuple[str, ...] = ()  # directories the commands ran in (relative to the tree root; "." the root)

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


def with_session_python(env: Environment, version: str | None) -> Environment:
    """``env`` pinned to the Python the session ran (``3.10``, as its outputs name it): the author's
    tests passed under that one, whatever the manifests admit. Unchanged without a version, or for a
    project with no Python."""
    if not version or "python" not in env.languages:
        return env
    return replace(env, versions=tuple(sorted({**dict(env.versions), "python": version}.items())))


def detect(tree: Path | None, commands: Iterable[str | Ran], root: str | None = None) -> Environment:
    """The environment of the tree at ``tree`` (None: unknown) worked by ``commands``.

    A command is its line, or ``(line, workdir)`` with the absolute directory it ran in; ``root`` is
    the path the tree stands for in those (the session's repository root). Where each command ran
    (its workdir, then any ``cd`` or ``-C DIR`` in the line) gives :attr:`Environment.dirs`: the
    packages of a monorepo whose software the task needs."""
    manifests = _manifests(tree) if tree is not None else []
    languages = {MANIFESTS[Path(m).name] for m in manifests}
    tools: set[str] = set()
    interpreters: set[str] = set()
    venvs: set[str] = set()
    runners: set[str] = set()
    dirs: set[str] = set()
    lines = [((item, None) if isinstance(item, str) else item) + (None,) for item in commands]
    while lines:
        line, workdir, here = lines.pop(0)
        here = here or _relative(workdir, root) or "."
        for command in simple_commands(line):
            used: set[str] = set()
            _note_command(command.argv, tools, interpreters, used, runners)
            where = _command_dir(command.argv, command.cd, here, root)
            if where is not None and (tree is None or (tree / where).is_dir()):
                dirs.add(where)
                if command.program == "make" and tree is not None:  # `make test`: what its recipe runs
                    lines += [(wrapped, None, where) for wrapped in _make_recipe(tree / where, command.argv)]
            # a venv relative to where the command ran (`cd backend && .venv/bin/pytest`: backend/.venv)
            venvs |= {v if v.startswith(("/", "~")) or where in (None, ".") else os.path.normpath(f"{where}/{v}")
                      for v in used}
    languages |= {TOOLS[t] for t in tools if TOOLS.get(t) not in (None, "make")}
    versions = _versions(tree, manifests) if tree is not None else {}
    for path in interpreters:
        match = _PY_VERSION.match(Path(path).name)
        if match and "." in match.group(1):
            versions.setdefault("python", match.group(1))
    return Environment(
        languages=tuple(sorted(languages)), manifests=tuple(manifests), tools=tuple(sorted(tools)),
        interpreters=tuple(sorted(interpreters)), venvs=tuple(sorted(venvs)), runners=tuple(sorted(runners)),
        versions=tuple(sorted(versions.items())), dirs=tuple(sorted(dirs)))


def _relative(path: str | None, root: str | None) -> str | None:
    """``path`` relative to ``root`` when it lies inside (``"."`` for the root), else None."""
    if not path or not root or not path.startswith("/"):
        return None
    rel = os.path.relpath(os.path.normpath(path), os.path.normpath(root))
    return None if rel == ".." or rel.startswith("../") else rel


def _command_dir(argv: tuple[str, ...], cd: str | None, here: str, root: str | None) -> str | None:
    """The directory (relative to the tree root) one simple command ran in, or None outside the tree."""
    where = here
    for target in (cd, _dir_option(argv)):
        if not target:
            continue
        if target.startswith("~"):
            return None
        if target.startswith("/"):
            where = _relative(target, root)
            if where is None:
                return None
        else:
            where = os.path.normpath(str(PurePosixPath(where) / target))
    return None if where == ".." or where.startswith("../") else where


_MAKE_VALUED = {"-C", "-f", "-I", "-o", "-W", "--directory", "--file", "--include-dir", "--makefile"}
_RULE = re.compile(r"^([A-Za-z0-9_./%-][^:=#]*):(?![=:])")


def _make_recipe(directory: Path, argv: tuple[str, ...]) -> list[str]:
    """The recipe lines of the targets ``make`` was asked for (its first target when none) and of their
    prerequisites, read from the Makefile of ``directory``; variables are left as written."""
    targets, skip = [], False
    for word in argv[1:]:
        if skip or word in _MAKE_VALUED:
            skip = not skip and word in _MAKE_VALUED
            continue
        if not word.startswith("-") and "=" not in word:
            targets.append(word)
    for name in ("GNUmakefile", "makefile", "Makefile"):
        try:
            text = (directory / name).read_text(errors="replace")[:200_000]
            break
        except OSError:
            continue
    else:
        return []
    rules: dict[str, tuple[list[str], list[str]]] = {}  # target -> (prerequisites, recipe lines)
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("\t") and current is not None:
            current.append(line.strip().lstrip("@-+").strip())
            continue
        match = _RULE.match(line)
        current = None
        if match:
            current = []
            needs = line[match.end():].split("#", 1)[0].split(";", 1)[0].split()
            for target in match.group(1).split():
                rules.setdefault(target, (needs, current))
    found: list[str] = []
    wanted = targets or [next((t for t in rules if not t.startswith(".")), "")]
    seen: set[str] = set()
    while wanted and len(seen) < 20:  # the targets, then what they depend on, each once
        target = wanted.pop(0)
        if target in seen or target not in rules:
            continue
        seen.add(target)
        needs, recipe = rules[target]
        found += recipe
        wanted += needs
    return found


def _dir_option(argv: tuple[str, ...]) -> str | None:
    """``make -C sub``, ``npm --prefix web``, ``uv run --directory api``: the directory a runner moves to."""
    if argv[0].rsplit("/", 1)[-1] not in (*RUNNERS, "make", "npx", "uvx"):
        return None
    for i, word in enumerate(argv[1:], 1):
        name, eq, value = word.partition("=")
        if name in _DIR_OPTIONS:
            return value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return None


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
    if name in RUNNERS or name in ("npx", "pnpx", "bunx"):  # the latter only start a package's program
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
    for rel in sorted(manifests, key=lambda m: m.count("/")):  # the root's pins before a package's
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
                data = json.loads(text)
                node = (data.get("engines") or {}).get("node")
                manager = data.get("packageManager")
            except (ValueError, AttributeError):
                node = manager = None
            if isinstance(node, str):
                versions.setdefault("node", node)
            if isinstance(manager, str) and "@" in manager:  # "pnpm@10.27.0+sha512.…": corepack's pin
                tool, _, pin = manager.partition("@")
                versions.setdefault(tool, pin.split("+", 1)[0])
        elif name == "go.mod":
            match = re.search(r"^go\s+(\S+)", text, re.M)
            if match:
                versions.setdefault("go", match.group(1))
    return versions
