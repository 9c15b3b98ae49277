"""The package's shape, pinned: imports point down the stack, no import cycle, files and functions small.

The layers, bottom first (``docs/architecture.md`` draws them): a module may import its own package
and any package of a lower layer, never one of a higher layer or another package of its own layer.
Imports inside functions count too (they are how heavy dependencies are deferred, not a way around
the layering); only module-level imports count for cycles, since those are the ones that run at import.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "logmine"

# package (first component below logmine) -> layer; equal numbers are siblings that must not meet
LAYERS: dict[str, int] = {
    "errors": 0, "locations": 0,
    "patch": 1, "redact": 1, "demo": 1, "config": 1, "commandline": 1, "executor": 1, "protocol": 1,
    "testresults": 1,
    "store": 2, "sandbox": 2, "pipeline": 2,
    "ingest": 3,
    "segment": 4, "environment": 4,
    "workspace": 5,
    "verify": 6,
    "export": 7,
    "agent": 8,
    "train": 9, "evaluate": 9,
    "run": 10,
    "cli": 11, "__main__": 12,
}
STAGES = ("ingest", "segment", "verify", "export", "agent", "train", "evaluate", "run", "cli")
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        if "demo" in path.relative_to(ROOT).parts[:1]:
            continue
        parts = ("logmine",) + path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path, top_level_only: bool) -> set[str]:
    """The logmine modules ``module`` imports (a ``from pkg import name`` of a submodule counts as it)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    if top_level_only:  # module level includes try/if blocks, not function or class bodies
        nodes = [n for stmt in tree.body for n in ast.walk(stmt)
                 if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        nodes = [n for n in nodes if not _under_type_checking(tree, n)]
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("logmine")}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            if not target.startswith("logmine"):
                continue
            subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES}
            found |= subs or {target}
    return {m for m in found if m in MODULES and m != module}


def _under_type_checking(tree: ast.Module, target: ast.AST) -> bool:
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
            if any(n is target for n in ast.walk(stmt)):
                return True
    return False


def test_every_package_has_a_layer():
    packages = {_package(m) for m in MODULES if _package(m)}
    assert packages <= set(LAYERS), f"give these packages a layer in LAYERS: {sorted(packages - set(LAYERS))}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    here = _package(module)
    if here is None:
        return
    bad = []
    for target in _imports(module, MODULES[module], top_level_only=False):
        there = _package(target)
        if there is None or there == here:
            continue
        if LAYERS[there] >= LAYERS[here]:
            bad.append(f"{target} (layer {LAYERS[there]} ≥ {LAYERS[here]})")
    assert not bad, f"{module} imports upward or sideways: {bad}"


def _private(name: str) -> bool:
    """Private to its package: a leading underscore, and no dunder (``__version__``, ``__main__``)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_uses(module: str, path: Path) -> list[str]:
    """What ``module`` uses that is private to another package of logmine: a private module or package
    (``logmine.patch._apply``) or anything in one, a ``_name`` imported from a module, or a ``_name``
    reached as an attribute of something imported (``catalog._SQL``, ``logmine.patch._model``)."""
    here = _package(module)
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    bound: dict[str, str] = {}  # local name -> the logmine module or object it stands for

    def note(full: str) -> None:
        if _package(full) != here and any(_private(part) for part in full.split(".")[1:]):
            found.add(full)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in (a for a in node.names if a.name.split(".")[0] == "logmine"):
                note(alias.name)
                bound[alias.asname or "logmine"] = alias.name if alias.asname else "logmine"
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            if target.split(".")[0] == "logmine":
                for alias in node.names:
                    note(f"{target}.{alias.name}")
                    bound[alias.asname or alias.name] = f"{target}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, base = [node.attr], node.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound:
                note(".".join([bound[base.id], *reversed(chain)]))
    return sorted(found)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_private_things_stay_in_their_package(module):
    """A module or name starting with ``_`` is used only inside its own package (``logmine.patch._apply``
    by ``logmine.patch``); another package uses what the package makes public."""
    used = _private_uses(module, MODULES[module])
    assert not used, f"{module} uses what other packages keep private: {used}"


def test_the_privacy_check_sees_a_violation(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text("import logmine.patch._parse\nfrom logmine import __version__\n"
                    "from logmine.patch import _text, apply_patch\nfrom logmine.patch._apply import apply_hunks\n"
                    "from logmine.store import catalog\nfrom logmine.train.tiny import _TEMPLATE\n"
                    "from logmine.verify._own import ok\nfrom ._sibling import fine\n\n"
                    "def f():\n    return catalog._SQL, catalog.CATALOG, logmine.patch._model.X, apply_patch\n")
    assert _private_uses("logmine.verify.probe", path) == [
        "logmine.patch._apply.apply_hunks", "logmine.patch._model", "logmine.patch._parse",
        "logmine.patch._text", "logmine.store.catalog._SQL", "logmine.train.tiny._TEMPLATE"]


def test_store_imports_no_stage():
    for module, path in MODULES.items():
        if _package(module) == "store":
            stages = {t for t in _imports(module, path, top_level_only=False) if _package(t) in STAGES}
            assert not stages, f"{module} imports stage modules {sorted(stages)}"


# What the stages above verify take from the stages below them that they share with it: only their records
# and results. The rebuilt start tree (``logmine.workspace``), the way an environment is provided
# (``logmine.environment.provide``) and the agent's tool protocol (``logmine.protocol``) live below
# every stage that uses them, never in verify or export. (importers, package below, {module: names}),
# None: every name of that module.
TAKEN_FROM: list[tuple[tuple[str, ...], str, dict[str, frozenset[str] | None]]] = [
    # from verify: its records, its reports, the settings naming where the repositories are
    (("export", "agent"), "verify", {"logmine.verify.records": None, "logmine.verify.report": None,
                                     "logmine.verify.run": frozenset({"verify_fields"})}),
    # from export: the formats of the data the agent writes (TMax rows, SFT token tables)
    (("agent",), "export", {"logmine.export.tmax": frozenset({"ROW_SCHEMA"}),
                            "logmine.export.render": frozenset({"Renderer"}),
                            "logmine.export.sft": frozenset({"token_table"})}),
]


def _taken(module: str, path: Path, below: str, allowed: dict[str, frozenset[str] | None]) -> list[str]:
    """What ``module`` imports from package ``logmine.<below>`` beyond ``allowed`` (module -> names)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            pairs = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            pairs = [(target, a.name) for a in node.names]
        else:
            continue
        for target, name in pairs:
            full = f"{target}.{name}" if name else target
            if full.split(".")[:2] != ["logmine", below]:
                continue
            if full in MODULES or name is None:  # a whole module: allowed only where all its names are
                ok = full in allowed and allowed[full] is None
            else:
                names = allowed.get(target, frozenset())
                ok = target in allowed and (names is None or name in names)
            if not ok:
                found.append(full)
    return found


def _taken_beyond(module: str, path: Path) -> list[str]:
    return sorted(bad for importers, below, allowed in TAKEN_FROM if _package(module) in importers
                  for bad in _taken(module, path, below, allowed))


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _package(m) in ("export", "agent")))
def test_export_and_agent_take_only_records_and_results_from_the_stages_below(module):
    """The pieces verify, export and the agent share stay below them: nothing of verify's rebuild or
    environment in export or the agent, nothing of the tool protocol taken from export by the agent."""
    taken = _taken_beyond(module, MODULES[module])
    assert not taken, (f"{module} takes {taken} from a stage below it; shared pieces belong in a lower "
                       "layer (logmine.workspace, logmine.environment, logmine.protocol)")


def test_the_records_and_results_check_sees_a_violation(tmp_path):
    """The imports export and the agent had before the shared pieces moved down are reported."""
    path = tmp_path / "probe.py"
    path.write_text("from logmine.verify.workspace import NotRebuilt, read_inside\n"
                    "from logmine.verify.environment import provide\nfrom logmine.verify.report import environment_of\n"
                    "from logmine.verify.run import VerifyConfig, verify_fields\nimport logmine.verify.run\n"
                    "from logmine.verify import records, task\nfrom logmine.verify.records import STATUSES\n\n"
                    "def f():\n    from logmine.export.tmax import SUBMIT, ROW_SCHEMA\n"
                    "    from logmine.export.trajectory import format_observation\n")
    assert _taken_beyond("logmine.export.probe", path) == [
        "logmine.verify.environment.provide", "logmine.verify.run", "logmine.verify.run.VerifyConfig",
        "logmine.verify.task", "logmine.verify.workspace.NotRebuilt", "logmine.verify.workspace.read_inside"]
    assert _taken_beyond("logmine.agent.probe", path) == sorted([
        *_taken_beyond("logmine.export.probe", path), "logmine.export.tmax.SUBMIT",
        "logmine.export.trajectory.format_observation"])


def test_the_sft_recipe_loads_no_agent_nor_sandbox():
    """Importing ``logmine.train.sft`` runs only what SFT needs (no rollout engines, no sandbox)."""
    code = "import sys, logmine.train.sft; print(' '.join(sorted({m.split('.')[1] for m in sys.modules " \
           "if m.startswith('logmine.')})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert "train" in loaded and not loaded & {"agent", "sandbox", "verify", "export"}, loaded


def test_no_import_cycle():
    graph = {m: _imports(m, p, top_level_only=True) for m, p in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, f"module-level import cycles: {cycles}"


def test_files_and_functions_are_small():
    too_long = []
    for path in MODULES.values():
        text = path.read_text()
        if text.count("\n") >= MAX_FILE_LINES:
            too_long.append(f"{path.relative_to(ROOT.parent)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length >= MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}: {length} lines")
    assert not too_long, too_long


def test_the_layering_test_sees_a_violation(tmp_path):
    """The checker itself can fail: a store module importing a stage is reported."""
    path = tmp_path / "bad.py"
    path.write_text("from logmine.segment import records\n\ndef f():\n    import logmine.cli\n")
    MODULES["logmine.store._probe"] = path
    try:
        found = _imports("logmine.store._probe", path, top_level_only=False)
        top = _imports("logmine.store._probe", path, top_level_only=True)
    finally:
        del MODULES["logmine.store._probe"]
    assert "logmine.segment.records" in found and "logmine.cli" in found
    assert "logmine.cli" not in top
