"""Environment detection: manifests of the tree, tools the commands ran (executed words only)."""

from __future__ import annotations

from logmine.environment.detect import Environment, detect


def test_manifests_versions_and_tools(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.11"\n')
    (tmp_path / "uv.lock").write_text("version = 1\n")
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "package.json").write_text('{"engines": {"node": ">=18"}}')
    (tmp_path / "web" / "node_modules").mkdir()
    (tmp_path / "web" / "node_modules" / "package.json").write_text("{}")  # dependencies are not manifests
    env = detect(tmp_path, ["source .venv/bin/activate && python -m pytest -q", "uv run --with pytest pytest",
                            "cd web && npm test", 'gh pr create --body "cargo test"'])
    assert env.manifests == ("pyproject.toml", "uv.lock", "web/package.json")
    assert env.languages == ("node", "python")
    assert env.tools == ("npm", "pytest", "python", "uv")
    assert env.venvs == (".venv",) and env.runners == ("npm", "uv")
    assert env.version("python") == ">=3.11" and env.version("node") == ">=18"
    assert "cargo" not in env.tools  # quoted text never runs


def test_interpreters_and_round_trip(tmp_path):
    env = detect(None, [".venv/bin/python -m pytest", "/opt/py312/bin/python3.12 -V", "poetry run pytest"])
    assert env.interpreters == (".venv/bin/python", "/opt/py312/bin/python3.12")
    assert env.venvs == (".venv",) and env.version("python") == "3.12" and "pytest" in env.tools
    assert Environment.from_row(env.to_row()) == env
    bare = detect(tmp_path, ["ls", "git status"])
    assert not (bare.manifests or bare.venvs or bare.runners or set(bare.tools) - {"make"})
