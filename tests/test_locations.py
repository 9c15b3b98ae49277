"""``$LOGMINE_CACHE`` has one meaning everywhere, and each environment variable of logmine's is read in
one function (``logmine.locations`` for the places)."""

from __future__ import annotations

import ast

from test_layering import MODULES  # logmine's modules by name (the demo's scripts left out)

from logmine.environment.build import cache_root
from logmine.locations import (
    CACHE_ENV,
    RAY_ADDRESS_ENV,
    STORE_ENV,
    cache_dir,
    default_cache_dir,
    ray_address,
    store_from_env,
)


def test_a_directory_holds_every_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" and cache_root() == tmp_path / "c" / "envs"


def test_off_turns_off_the_speed_caches_and_environments_keep_the_default_place(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("LOGMINE_CACHE", "off")
    assert cache_dir() is None
    assert cache_root() == tmp_path / "xdg" / "logmine" / "envs" == default_cache_dir() / "envs"
    monkeypatch.delenv("LOGMINE_CACHE")
    assert cache_dir() == tmp_path / "xdg" / "logmine"


def test_an_empty_store_or_ray_address_is_no_value(monkeypatch):
    """As click reads an option's ``envvar``: the CLI's ``--store`` and ``--ray-address`` agree with these."""
    for variable, read in ((STORE_ENV, store_from_env), (RAY_ADDRESS_ENV, ray_address)):
        monkeypatch.setenv(variable, "")
        assert read() is None
        monkeypatch.setenv(variable, "x")
        assert read() == "x"
        monkeypatch.delenv(variable)
        assert read() is None


# --- each variable that configures logmine is read in one function ---------------------------------

OURS = ("LOGMINE_", "RAY_", "CODEX_")  # the variables logmine defines, and those of the tools it joins


def _constants(sources: dict[str, str]) -> dict[str, str]:
    """Module-level ``NAME = "VALUE"`` strings of every source, by name (how a read names its variable)."""
    found = {}
    for text in sources.values():
        for stmt in ast.parse(text).body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                found.update({t.id: stmt.value.value for t in stmt.targets if isinstance(t, ast.Name)})
    return found


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (isinstance(node, ast.Name) and node.id == "environ")


def _read_variable(node: ast.AST) -> ast.AST | None:
    """The expression naming the variable ``node`` reads: ``environ.get(X)``, ``getenv(X)``, ``environ[X]``,
    ``X in environ``, ``environ.pop(X)``, ``environ.setdefault(X, …)``."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault") and _is_environ(func.value):
            return node.args[0]
        if (isinstance(func, ast.Attribute) and func.attr == "getenv") or (isinstance(func, ast.Name) and func.id == "getenv"):
            return node.args[0]
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
        return node.slice
    if isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
        return node.left
    return None


def env_readers(sources: dict[str, str]) -> dict[str, set[str]]:
    """Every environment variable the ``sources`` (module name → text) read, with the functions
    (``module:function``, ``module:<module>`` at module level) that read it. A variable named by an
    expression that is no string constant or module-level string constant is left out."""
    constants = _constants(sources)
    readers: dict[str, set[str]] = {}
    for module, text in sources.items():
        tree = ast.parse(text)
        scopes = [(tree, "<module>")]
        while scopes:
            scope, name = scopes.pop()
            for node in ast.iter_child_nodes(scope):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    scopes.append((node, node.name if name == "<module>" else f"{name}.{node.name}"))
                    continue
                scopes.append((node, name))
                named = _read_variable(node)
                if isinstance(named, ast.Constant) and isinstance(named.value, str):
                    variable = named.value
                elif isinstance(named, (ast.Name, ast.Attribute)):
                    variable = constants.get(named.id if isinstance(named, ast.Name) else named.attr)
                else:
                    variable = None
                if variable is not None:
                    readers.setdefault(variable, set()).add(f"{module}:{name}")
    return readers


def _sources() -> dict[str, str]:
    return {module: path.read_text() for module, path in sorted(MODULES.items())}


def test_each_variable_of_ours_is_read_in_one_function():
    readers = {v: r for v, r in env_readers(_sources()).items() if v.startswith(OURS)}
    assert {v: r for v, r in readers.items() if len(r) > 1} == {}
    for variable in (CACHE_ENV, STORE_ENV, RAY_ADDRESS_ENV):
        assert readers[variable] <= {f"logmine.locations:{f}" for f in ("cache_dir", "store_from_env", "ray_address")}


def test_the_cli_options_read_from_the_environment_only_what_locations_reads():
    """typer reads an option's ``envvar`` (click's own reader): only variables ``logmine.locations`` reads,
    and that it documents as read the same way, may be named."""
    sources = _sources()
    constants = _constants(sources)
    named = set()
    for text in sources.values():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.keyword) and node.arg == "envvar":
                value = node.value
                named.add(value.value if isinstance(value, ast.Constant) else constants.get(getattr(value, "id", None)))
    assert named and named <= {STORE_ENV, RAY_ADDRESS_ENV}


def test_the_checker_sees_a_second_reader():
    planted = {
        "a": 'import os\nVAR = "LOGMINE_X"\n\ndef one():\n    return os.environ.get(VAR)\n',
        "b": 'import os\nfrom os import environ, getenv\n\ndef two():\n    return getenv("LOGMINE_X")\n\n'
             'class C:\n    def three(self):\n        return environ["LOGMINE_X"] if "LOGMINE_Y" in environ else None\n\n'
             'FOUR = os.environ.setdefault("LOGMINE_X", "1")\n',
    }
    assert env_readers(planted) == {"LOGMINE_X": {"a:one", "b:two", "b:C.three", "b:<module>"}, "LOGMINE_Y": {"b:C.three"}}
