"""Environments of real project shapes: where the commands ran, workspaces, pnpm/yarn/uv, src layouts,
subdirectory projects, pinned versions, Rust and Go registries. Recipes are read from real files."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from logmine.environment.build import (
    EnvironmentUnavailable,
    build_prefix,
    failure_excerpt,
    prefix_environment,
    registries_unreachable,
)
from logmine.environment.detect import detect
from logmine.environment.recipe import Recipe, base_image, recipe_for

ROOT = "/home/dev/proj"


def _write(tree: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    return tree


def _recipe(tree: Path, *commands: str, workdir: str = ROOT) -> Recipe:
    return recipe_for(detect(tree, [(c, workdir) for c in commands], ROOT), tree)


def test_where_the_commands_ran(tmp_path):
    _write(tmp_path, {"backend/app.py": "", "web/package.json": "{}", "api/x": ""})
    env = detect(tmp_path, [("cd backend && uv run pytest", ROOT), ("npm --prefix web test", ROOT),
                            (f"cd {ROOT}/api && ls", f"{ROOT}/web"), ("cd /elsewhere && make", ROOT),
                            ("cd ~/x && make", ROOT), ("make -C backend test", ROOT), ("pytest", f"{ROOT}/web")],
                 ROOT)
    assert env.dirs == ("api", "backend", "web")
    assert detect(tmp_path, ["pytest -q"]).dirs == (".",)
    assert detect(tmp_path, [("cd nowhere && pytest", ROOT)], ROOT).dirs == ()  # not in the tree


def test_a_pnpm_workspace_installs_at_its_root_with_the_pinned_pnpm(tmp_path):
    _write(tmp_path, {
        "package.json": json.dumps({"name": "mono", "packageManager": "pnpm@9.12.3+sha512.abc",
                                    "engines": {"node": ">=20.0.0"}}),
        "pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
        "pnpm-workspace.yaml": "packages:\n  - 'apps/*'\n  - 'packages/*'\n  - '!packages/skipped'\n",
        "apps/web/package.json": "{}", "packages/util/package.json": "{}", "packages/skipped/package.json": "{}",
        "tools/other/package.json": "{}",  # not a member: no node_modules of its own
    })
    recipe = _recipe(tmp_path, "pnpm --filter @mono/web exec vitest run src/a.test.ts", "cd apps/web && pnpm test")
    assert recipe.tools == ('npm install -g -q --prefix "$LOGMINE_TOOLS" --no-audit --no-fund pnpm@9.12.3',)
    assert recipe.steps == ("pnpm install --frozen-lockfile --ignore-scripts || pnpm install --ignore-scripts "
                            "--no-frozen-lockfile",)  # pnpm keeps a lock frozen under CI unless told
    assert set(recipe.outputs) == {"node_modules", "apps/web/node_modules", "packages/util/node_modules"}
    assert {"package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml", "apps/web/package.json",
            "packages/util/package.json"} <= set(recipe.inputs) and "tools/other/package.json" not in recipe.inputs
    assert recipe.base_image == "node:20-slim"  # engines.node
    dockerfile = recipe.dockerfile()
    assert "ENV LOGMINE_TOOLS=/opt/logmine-tools PATH=/opt/logmine-tools/bin:$PATH" in dockerfile
    assert dockerfile.index("LOGMINE_TOOLS") < dockerfile.index("RUN ")  # pnpm on the install's PATH


@pytest.mark.parametrize("lock, pnpm", [("lockfileVersion: '9.0'\n", "pnpm@10"), ("lockfileVersion: '6.0'\n", "pnpm@8"),
                                        ("lockfileVersion: 5.4\n", "pnpm@7"), ("lockfileVersion: '12.0'\n", "pnpm@latest")])
def test_an_unpinned_pnpm_is_the_one_of_its_locks_day(tmp_path, lock, pnpm):
    """No ``packageManager`` pin: the pnpm that wrote the lock's format, not the newest (pnpm 11 no
    longer reads package.json's "pnpm" field, and refuses to run a script over the install it made)."""
    _write(tmp_path, {"package.json": json.dumps({"pnpm": {"overrides": {"a": "1"}}}), "pnpm-lock.yaml": lock})
    assert _recipe(tmp_path, "pnpm test:rbac").tools[0].endswith(f"--no-audit --no-fund {pnpm}")


def test_npm_and_yarn_workspaces_install_at_the_root_from_a_package(tmp_path):
    _write(tmp_path, {"package.json": json.dumps({"workspaces": ["packages/*"]}),
                      "package-lock.json": '{"lockfileVersion": 3}', "packages/core/package.json": "{}"})
    recipe = _recipe(tmp_path, "npm test", workdir=f"{ROOT}/packages/core")
    assert recipe.steps[-1] == "npm ci --no-audit --no-fund || npm install --no-audit --no-fund"
    assert recipe.steps[0].endswith("package.json packages/core/package.json")  # copies without their scripts
    assert set(recipe.outputs) == {"node_modules", "packages/core/node_modules"} and not recipe.tools
    (tmp_path / "package-lock.json").write_text("{}")  # written by hand, or cut short: npm ci refuses it
    assert _recipe(tmp_path, "npm test").steps[-1] == "npm install --no-audit --no-fund"
    yarn = tmp_path / "yarn"
    _write(yarn, {"package.json": json.dumps({"workspaces": {"packages": ["libs/*"]}}), "yarn.lock": "",
                  "libs/a/package.json": "{}"})
    recipe = recipe_for(detect(yarn, ["cd libs/a && yarn test"]), yarn)
    assert recipe.tools[0].endswith("yarn@1") and recipe.steps == (
        "yarn install --frozen-lockfile --non-interactive --ignore-scripts || "
        "yarn install --non-interactive --ignore-scripts",)


def test_a_uv_project_in_a_subdirectory(tmp_path):
    _write(tmp_path, {"backend/pyproject.toml": '[project]\nname = "api"\nrequires-python = ">=3.12"\n',
                      "backend/uv.lock": "version = 1\n", "backend/api/__init__.py": "",
                      "frontend/package.json": "{}"})
    recipe = _recipe(tmp_path, "cd backend && uv run python -m pytest -q")
    assert recipe.steps[0].startswith("cd backend && ") and "uv sync -q --frozen" in recipe.steps[0]
    assert "--no-install-workspace" in recipe.steps[0]  # the project's source is the workspace's
    assert recipe.outputs == ("backend/.venv",) and recipe.inputs == ("backend/pyproject.toml", "backend/uv.lock")
    assert any(t.endswith('ln -sf "$LOGMINE_TOOLS/venv/bin/uv" "$LOGMINE_TOOLS/bin/uv"') for t in recipe.tools)
    env = recipe.replay_env(ROOT, "/cache/tools")
    assert env["PYTHONPATH"] == f"{ROOT}/backend" and env["UV_NO_SYNC"] == "1" and env["UV_OFFLINE"] == "1"
    assert recipe.base_image == "python:3.12-slim"  # requires-python
    assert "apt-get" not in recipe.script()  # frontend/ has no command here: nothing of Node installed


def test_src_layout_goes_on_pythonpath_and_requirements_in_a_subdirectory(tmp_path):
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "pkg"\ndependencies = ["attrs"]\n'
                                        '[dependency-groups]\ntest = ["pytest>=8", {include-group = "lint"}]\n'
                                        'lint = ["ruff"]\n',
                      "src/pkg/__init__.py": "", ".python-version": "3.12.4\n"})
    recipe = _recipe(tmp_path, "PYTHONPATH=src python3 -m unittest discover -s tests")
    assert recipe.pythonpath == ("src",) and recipe.replay_env(ROOT, "/t")["PYTHONPATH"] == f"{ROOT}/src"
    assert any("attrs" in s and "'pytest>=8'" in s and "ruff" not in s for s in recipe.steps)
    assert recipe.base_image == "python:3.12-slim"  # .python-version
    instructions = recipe.dockerfile().replace("\\\n", " ").splitlines()
    env = [i.split() for i in instructions if i.startswith("ENV ")]
    assert len(env) == 1 and {"PYTHONPATH=/workspace/src", "PATH=/workspace/.venv/bin:$PATH"} <= set(env[0]), env
    sub = tmp_path / "mono"
    _write(sub, {"backend/requirements.txt": "iniconfig\n", "backend/app/__init__.py": "", "web/package.json": "{}"})
    recipe = recipe_for(detect(sub, [("cd backend && .venv/bin/python -m pytest", ROOT), ("cd web && npm test", ROOT)],
                               ROOT), sub)
    assert "python3 -m venv backend/.venv" in recipe.steps and any("-r backend/requirements.txt" in s
                                                                  for s in recipe.steps)
    assert recipe.image_steps and "nodejs" in recipe.image_steps[0]  # python image + Node for web/
    assert "nodejs" not in recipe.script() and "npm install" in recipe.script()  # never apt-get on the host


def test_tests_run_at_the_root_of_a_project_in_a_subdirectory(tmp_path):
    """A real session ran ``python -m pytest teacher/tests/…`` at the root of a repository whose only
    Python project is ``teacher/`` (its ``requirements.txt``): no manifest lies above where it ran,
    and its requirements were never installed (``No module named 'requests'``)."""
    _write(tmp_path, {"teacher/requirements.txt": "iniconfig\n", "teacher/tests/test_x.py": "", "package.json": "{}"})
    recipe = _recipe(tmp_path, "python -m pytest teacher/tests/test_x.py -q")
    assert any("-r teacher/requirements.txt" in s for s in recipe.steps), recipe.steps
    assert recipe.outputs == ("teacher/.venv",)


@pytest.mark.parametrize(("pins", "image"), [
    ({"node": ">=20.0.0"}, "node:20-slim"), ({"node": "^22.1"}, "node:22-slim"), ({"node": "v18.19.0"}, "node:18-slim"),
    ({"node": ">=16 <19"}, "node:18-slim"), ({"node": "lts/*"}, "node:18-slim"), ({}, "node:18-slim"),
])
def test_the_node_image_admits_the_pinned_version(pins, image):
    from logmine.environment.detect import Environment

    assert base_image("node", Environment(versions=tuple(pins.items()))) == image


@pytest.mark.parametrize(("pin", "image"), [
    (">=3.8", "python:3.11-slim"), (">=3.12", "python:3.12-slim"), ("~=3.10.2", "python:3.10-slim"),
    ("3.13", "python:3.13-slim"), (None, "python:3.11-slim"), ("not a pin", "python:3.11-slim"),
])
def test_the_python_image_admits_the_pinned_version(pin, image):
    from logmine.environment.detect import Environment

    assert base_image("python", Environment(versions=(("python", pin),) if pin else ())) == image


def test_rust_and_go_fetch_into_a_cache_the_replay_reads_offline(tmp_path):
    _write(tmp_path, {"Cargo.toml": '[workspace]\nmembers = ["crates/a"]\n', "Cargo.lock": "",
                      "crates/a/Cargo.toml": '[package]\nname = "a"\n', "package.json": "{}"})
    recipe = _recipe(tmp_path, "cargo test --workspace")
    assert recipe.base_image == "rust:1-slim" and "cargo fetch -q --locked" in recipe.steps[-1]
    assert recipe.registries[-1] == "index.crates.io"
    env = recipe.replay_env(ROOT, "/cache/k/tools")
    assert env["CARGO_HOME"] == "/cache/k/tools/cargo" and env["CARGO_NET_OFFLINE"] == "true"
    go = tmp_path / "go"
    _write(go, {"go.mod": "module x\n\ngo 1.22.3\n", "go.sum": ""})
    recipe = recipe_for(detect(go, ["go test ./..."]), go)
    assert recipe.base_image == "golang:1.22" and recipe.replay_env(ROOT, "/t")["GOPROXY"] == "off"


def test_an_unreachable_registry_is_the_reason(tmp_path, monkeypatch):
    for proxy in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    recipe = Recipe("rust:1-slim", ("cargo fetch",), (), (), "k" * 16, registries=("logmine-registry.invalid",))
    assert registries_unreachable(recipe).startswith("toolchain registry unreachable: logmine-registry.invalid")
    with pytest.raises(EnvironmentUnavailable, match="^toolchain registry unreachable: logmine-registry.invalid"):
        build_prefix(recipe, tmp_path, cache=tmp_path / "cache")
    assert not (tmp_path / "cache" / recipe.key / "tree").exists()  # nothing was tried
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")  # the tool's own business then
    assert registries_unreachable(recipe) is None


def test_a_failed_fallback_install_says_why_it_failed():
    """``pnpm install --frozen-lockfile || pnpm install --no-frozen-lockfile``: the first error (an
    outdated lock) is what the fallback was for; the reason is the fallback's (a real one: a
    workspace package the start tree lacks)."""
    log = (" ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with \"frozen-lockfile\" because pnpm-lock.yaml is not up "
           "to date with <ROOT>/package.json\nScope: all 5 workspace projects\n"
           " ERR_PNPM_WORKSPACE_PKG_NOT_FOUND  In apps/front: \"@taskly/telemetry@workspace:*\" is in the dependencies\n")
    assert failure_excerpt(log).startswith("ERR_PNPM_WORKSPACE_PKG_NOT_FOUND In apps/front")
    assert failure_excerpt(log.split("Scope")[0]).startswith("ERR_PNPM_OUTDATED_LOCKFILE")


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("bwrap") is None, reason="npm or bwrap missing")
def test_an_npm_workspace_builds_offline_and_its_links_resolve_in_the_sandbox(tmp_path):
    """A workspace whose packages depend on each other and on a local file: package (no registry)."""
    from logmine.sandbox import open_sandbox

    tree = _write(tmp_path / "repo", {
        "package.json": json.dumps({"name": "mono", "private": True, "workspaces": ["packages/*"],
                                    "scripts": {"postinstall": "git config core.x y"}}),  # fails: not run
        "packages/util/package.json": json.dumps({"name": "@mono/util", "version": "1.0.0", "main": "index.js"}),
        "packages/util/index.js": "module.exports = (a, b) => a + b;\n",
        "packages/app/package.json": json.dumps({"name": "@mono/app", "version": "1.0.0", "dependencies": {
            "@mono/util": "1.0.0", "leftpad-local": "file:../../vendor/leftpad"}}),
        "packages/app/test.js": "const add = require('@mono/util'); const pad = require('leftpad-local');\n"
                                "if (add(1, 2) !== 3 || pad('7') !== '07') process.exit(1);\n",
        "vendor/leftpad/package.json": json.dumps({"name": "leftpad-local", "version": "1.0.0", "main": "i.js"}),
        "vendor/leftpad/i.js": "module.exports = (s) => s.padStart(2, '0');\n",
    })
    recipe = recipe_for(detect(tree, [(f"cd {ROOT}/packages/app && node test.js", ROOT)], ROOT), tree)
    try:
        built = build_prefix(recipe, tree, cache=tmp_path / "cache", timeout_s=300)
    except EnvironmentUnavailable as exc:
        pytest.fail(f"an npm workspace with only local packages needs no registry: {exc}")
    host = prefix_environment(recipe, Path(built.where), ROOT)
    # the start state: sources without node_modules, as a fresh clone has them
    for output in recipe.outputs:
        assert not (tree / output).exists()
    with open_sandbox(tree, mount_at=ROOT, binds=host.binds, env=host.env) as box:
        result = box.run("cd packages/app && node test.js && echo ok", cwd=ROOT)
    assert result.exit_code == 0 and "ok" in result.output, result.output


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_a_lock_out_of_sync_with_package_json_installs_as_the_author_would(tmp_path):
    """An agent added a dependency to package.json; the lock was never updated (the session's own npm
    install needed a network the replay has not): npm ci refuses the tree, npm install builds it."""
    tree = _write(tmp_path / "repo", {
        "package.json": json.dumps({"name": "app", "version": "1.0.0", "dependencies": {"a-local": "file:vendor/a"}}),
        "vendor/a/package.json": json.dumps({"name": "a-local", "version": "1.0.0", "main": "i.js"}),
        "vendor/a/i.js": "module.exports = 1;\n",
        "vendor/b/package.json": json.dumps({"name": "b-local", "version": "1.0.0", "main": "i.js"}),
        "vendor/b/i.js": "module.exports = 2;\n",
    })
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--offline"], cwd=tree, check=True, capture_output=True)
    shutil.rmtree(tree / "node_modules")
    manifest = json.loads((tree / "package.json").read_text())
    manifest["dependencies"]["b-local"] = "file:vendor/b"  # the agent's edit; package-lock.json unchanged
    (tree / "package.json").write_text(json.dumps(manifest))
    recipe = recipe_for(detect(tree, [("node -e \"require('b-local')\"", ROOT)], ROOT), tree)
    assert "npm ci --no-audit --no-fund || npm install" in recipe.steps[-1]
    built = build_prefix(recipe, tree, cache=tmp_path / "cache", timeout_s=300)
    assert (Path(built.where) / "node_modules" / "b-local" / "i.js").is_file()


def test_a_makefile_target_is_read_for_what_it_runs(tmp_path):
    _write(tmp_path, {"Makefile": ".PHONY: test\nall: test\n\ntest: lint  # the suite\n"
                                  "\t@cd api && python -m pytest -q\nlint:\n\t-npx eslint .\n",
                      "api/requirements.txt": "iniconfig\n", "package.json": "{}"})
    env = detect(tmp_path, [("make test", ROOT)], ROOT)
    assert {"pytest", "npx"} <= set(env.tools) and env.dirs == (".", "api")
    recipe = recipe_for(env, tmp_path)
    assert "python3 -m venv api/.venv" in recipe.steps and "node_modules" in recipe.outputs
    assert detect(tmp_path, ["make"]).tools == detect(tmp_path, ["make test"]).tools  # `all` depends on test
    assert detect(tmp_path / "api", ["make test"]).tools == ("make",)  # no Makefile there
