"""Built environments: recipes from manifests, a real prefix build from the package registry, its cache."""

from __future__ import annotations

import subprocess
import time

import pytest

from logmine.environment.build import EnvironmentUnavailable, build_prefix, prefix_environment
from logmine.environment.detect import Environment, detect
from logmine.environment.recipe import NODE_IMAGE, PYTHON_IMAGE, NoRecipe, Recipe, recipe_for


def test_recipe_from_requirements_and_pytest(tmp_path):
    (tmp_path / "requirements.txt").write_text("iniconfig==2.0.0\n")
    env = detect(tmp_path, [".venv/bin/python -m pytest -q"])
    recipe = recipe_for(env, tmp_path)
    assert recipe.base_image == PYTHON_IMAGE and recipe.outputs == (".venv",) and recipe.inputs == ("requirements.txt",)
    assert recipe.steps[0] == "python3 -m venv .venv" and "-r requirements.txt" in recipe.steps[1]
    assert "pytest" in recipe.steps[-1]
    dockerfile = recipe.dockerfile()
    assert dockerfile.splitlines()[0] == f"FROM {PYTHON_IMAGE}"
    assert dockerfile.index("COPY seeds/requirements.txt") < dockerfile.index("RUN (python3 -m venv")
    assert dockerfile.rstrip().endswith("COPY seeds/ /workspace/")
    (tmp_path / "requirements.txt").write_text("iniconfig==2.0.0\nsix\n")
    assert recipe_for(env, tmp_path).key != recipe.key  # manifests' contents are in the key


def test_recipe_from_pyproject_and_node(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["attrs>=23"]\n'
                                             '[project.optional-dependencies]\ntest = ["pytest"]\n')
    steps = recipe_for(detect(tmp_path, ["python -m pytest"]), tmp_path).steps
    assert any("attrs>=23" in s and "pytest" in s for s in steps)
    node = tmp_path / "web"
    node.mkdir()
    (node / "package.json").write_text("{}")
    (node / "package-lock.json").write_text('{"lockfileVersion": 3}')
    recipe = recipe_for(detect(node, ["npm test"]), node)
    assert recipe.base_image == NODE_IMAGE
    assert recipe.steps[-1] == "npm ci --no-audit --no-fund || npm install --no-audit --no-fund" and "delete p.scripts" in recipe.steps[0]
    with pytest.raises(NoRecipe, match="nothing to install"):
        recipe_for(Environment(), tmp_path)
    with pytest.raises(NoRecipe, match="ruby"):
        recipe_for(Environment(languages=("ruby",), manifests=("Gemfile",)), tmp_path)


@pytest.mark.slow
def test_prefix_build_from_the_registry_then_cached(tmp_path):
    (tmp_path / "requirements.txt").write_text("iniconfig==2.0.0\n")
    recipe = recipe_for(detect(tmp_path, [".venv/bin/python -m unittest"]), tmp_path)
    try:
        built = build_prefix(recipe, tmp_path, cache=tmp_path / "cache")
    except EnvironmentUnavailable as exc:  # offline: the reason is the result
        assert "prefix build failed" in str(exc)
        pytest.skip(f"package registry not reachable: {exc}")
    assert not built.cached
    venv = tmp_path / "cache" / recipe.key / "tree" / ".venv"
    assert subprocess.run([venv / "bin" / "python", "-c", "import iniconfig"]).returncode == 0
    started = time.monotonic()
    again = build_prefix(recipe, tmp_path, cache=tmp_path / "cache")
    assert again.cached and again.where == built.where and time.monotonic() - started < 0.5
    host = prefix_environment(recipe, venv.parent, "/home/dev/proj")
    assert (str(venv), "/home/dev/proj/.venv") in host.binds and (str(venv), str(venv)) in host.binds
    assert host.path.startswith("/home/dev/proj/.venv/bin:")


def test_a_failing_build_is_a_reason(tmp_path):
    (tmp_path / "requirements.txt").write_text("this-package-does-not-exist-logmine==0.0.1\n")
    recipe = recipe_for(detect(tmp_path, ["python -m unittest"]), tmp_path)
    with pytest.raises(EnvironmentUnavailable, match="prefix build failed"):
        build_prefix(recipe, tmp_path, cache=tmp_path / "cache", timeout_s=120)
    assert not (tmp_path / "cache" / recipe.key / ".complete").exists()
    with pytest.raises(EnvironmentUnavailable):  # remembered: not rebuilt for every task of the run
        build_prefix(recipe, tmp_path, cache=tmp_path / "cache")


def test_a_built_node_environment_takes_the_users_downloaded_browsers(tmp_path, monkeypatch):
    for name in ("XDG_CACHE_HOME", "PLAYWRIGHT_BROWSERS_PATH", "CYPRESS_CACHE_FOLDER"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    (home / ".cache" / "Cypress" / "13.6.0").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text('{"name": "web", "scripts": {"test": "cypress run"}}\n')
    recipe = recipe_for(detect(project, ["npm test"]), project)
    tree = tmp_path / "built" / "tree"
    (tree / "node_modules").mkdir(parents=True)
    host = prefix_environment(recipe, tree, "/w")
    cache = str(home / ".cache" / "Cypress")
    assert host.env["CYPRESS_CACHE_FOLDER"] == cache and (cache, cache) in host.binds
    assert "PLAYWRIGHT_BROWSERS_PATH" not in host.env


def test_an_image_for_browser_tests_downloads_the_browsers_after_the_install(tmp_path):
    (tmp_path / "package.json").write_text('{"name": "web", "devDependencies": {"@playwright/test": "1.49.1"}}\n')
    (tmp_path / "package-lock.json").write_text("{}\n")
    plain = recipe_for(detect(tmp_path, ["npm test"]), tmp_path)
    browsers = recipe_for(detect(tmp_path, ["npm test", "PLAYWRIGHT_WORKERS=1 npx playwright test e2e"]), tmp_path)
    run = browsers.dockerfile().split("\nRUN ", 1)[1].split("\nENV ", 1)[0]
    assert run.index("npm install") < run.index("npx playwright install --with-deps")  # the project's Playwright
    assert "playwright" not in plain.dockerfile() and plain.key != browsers.key  # an image of its own
    assert "playwright" not in browsers.script()  # never on the host: the user's browsers are bound there


def test_a_prisma_project_generates_its_client_after_the_install(tmp_path):
    """A real session's API tests import ``@prisma/client``, whose client ``prisma generate`` makes
    from the schema (``Cannot find module '.prisma/client/default'`` without it)."""
    app = tmp_path / "web"
    (app / "prisma").mkdir(parents=True)
    (app / "package.json").write_text('{"name": "web", "dependencies": {"@prisma/client": "7.8.0"}}\n')
    (app / "package-lock.json").write_text("{}\n")
    (app / "prisma" / "schema.prisma").write_text('generator client {\n  provider = "prisma-client-js"\n}\n')
    (app / "prisma.config.ts").write_text('export default { schema: "prisma/schema.prisma" }\n')
    recipe = recipe_for(detect(tmp_path, ["cd web && npm test"]), tmp_path)
    assert {"web/prisma/schema.prisma", "web/prisma.config.ts"} <= set(recipe.inputs)  # the key follows the schema
    generate = [s for s in recipe.steps if "prisma generate" in s]
    assert len(generate) == 1 and generate[0].startswith("cd web && ")
    assert recipe.steps.index(generate[0]) > next(i for i, s in enumerate(recipe.steps) if "npm install" in s)
    (app / "package.json").write_text('{"name": "web", "dependencies": {"left-pad": "1.3.0"}}\n')
    assert not any("prisma" in s for s in recipe_for(detect(tmp_path, ["cd web && npm test"]), tmp_path).steps)


def test_a_step_that_changes_directory_does_not_move_the_steps_after_it(tmp_path):
    """A real project's backend in ``backend/`` (uv) and front end in ``frontend/`` (npm): the uv step
    runs ``cd backend && uv sync``, and the steps after it name root-relative paths
    (``frontend/package.json``); run in one shell, they ran in ``backend/`` and failed."""
    recipe = Recipe("python:3.11-slim", ("cd sub && touch made-in-sub", "touch made-at-root"), (), (), "k")
    (tmp_path / "sub").mkdir()
    done = subprocess.run(["sh", "-c", recipe.script()], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "sub" / "made-in-sub").is_file() and (tmp_path / "made-at-root").is_file()
    run = recipe.dockerfile().split("\nRUN ", 1)[1].split("\n", 1)[0]
    assert run.startswith("(cd sub && touch made-in-sub)")
