"""Host environments: the session's venv, node_modules and toolchains are bound; credentials never."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from logmine.environment.detect import Environment, detect
from logmine.environment.host import CREDENTIALS, dependency_dirs, host_environment, refusal
from logmine.redact.paths import HOME_ONLY, credential_path


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def project(tmp_path) -> Path:
    """A real repository whose dependencies live in git-ignored .venv and node_modules."""
    repo = tmp_path / "proj"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text(".venv/\nnode_modules/\n*.log\n")
    (repo / "requirements.txt").write_text("leftpad==1.0\n")
    (repo / "package.json").write_text('{"name": "p", "scripts": {"test": "node t.js"}}\n')
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    (repo / "node_modules" / "left-pad").mkdir(parents=True)
    (repo / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    (repo / "debug.log").write_text("x\n")
    _git(repo, "add", ".")
    return repo


def test_dependency_dirs_follow_gitignore(project):
    assert dependency_dirs(project) == [".venv", "node_modules"]


def test_venv_and_node_modules_are_mounted_at_the_workspace_path(project):
    env = detect(project, [".venv/bin/python -m pytest -q", "npm test"])
    host = host_environment(env, project, "/home/dev/proj")
    binds = dict(host.binds)
    assert binds[str(project / ".venv")] == "/home/dev/proj/.venv"
    assert binds[str(project / "node_modules")] == "/home/dev/proj/node_modules"
    assert host.path.split(":")[0] == "/home/dev/proj/.venv/bin"
    base = Path(os.path.realpath(sys.executable))
    if not str(base).startswith(("/usr/", "/bin/")):  # a pyenv/uv/opt interpreter: its installation is bound
        assert any(str(base).startswith(src) for src in binds), (base, binds)


def test_tools_resolve_through_the_users_path(tmp_path):
    home = tmp_path / "home"
    shims = home / ".pyenv" / "shims"
    shims.mkdir(parents=True)
    (shims / "pytest").write_text("#!/bin/sh\n")
    (shims / "pytest").chmod(0o755)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("secret\n")
    env = Environment(tools=("pytest",))
    host = host_environment(env, None, "/workspace", user_path=f"{shims}:/usr/bin", home=home)
    assert dict(host.binds) == {str(home / ".pyenv"): str(home / ".pyenv")}
    assert host.path.split(":")[0] == str(shims)
    missing = host_environment(Environment(tools=("nosuchtool",)), None, "/w", user_path="/usr/bin", home=home)
    assert missing.binds == () and "nosuchtool: not on this host's PATH" in missing.notes


@pytest.mark.parametrize("entry", CREDENTIALS)
def test_credential_locations_are_never_bound(tmp_path, entry):
    home = tmp_path / "home"
    secret = home / entry
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("token\n")
    assert refusal(secret, home) == f"credentials: ~/{entry}"
    assert refusal(secret.parent, home) is not None  # holds it (or is the home)
    assert refusal(home, home) == "the home directory or above"
    # a toolchain placed inside a credential directory is refused, with a note
    inside = secret.parent / "bin" / "tool" if secret.parent != home else None
    if inside is not None:
        inside.parent.mkdir(parents=True, exist_ok=True)
        inside.write_text("#!/bin/sh\n")
        inside.chmod(0o755)
        host = host_environment(Environment(tools=("tool",)), None, "/w", user_path=str(inside.parent), home=home)
        assert not any(src == str(home) or str(secret).startswith(src) for src, _ in host.binds)


@pytest.mark.parametrize("entry", [c for c in CREDENTIALS if c not in HOME_ONLY])
def test_what_the_sandbox_never_binds_no_copy_of_files_takes(entry):
    """One list of credential places: each is also left out of every copy of a user's files."""
    assert credential_path(entry) and credential_path(f"home/u/{entry}")


def test_the_home_directory_is_never_bound(tmp_path):
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "node").write_text("#!/bin/sh\n")
    (home / "bin" / "node").chmod(0o755)
    host = host_environment(Environment(tools=("node",)), None, "/w", user_path=str(home / "bin"), home=home)
    assert all(src != str(home) for src, _ in host.binds)
    assert dict(host.binds) == {str(home / "bin" / "node"): str(home / "bin" / "node")}


def test_a_monorepos_nested_dependencies_are_bound_where_they_live(tmp_path):
    """A uv backend's .venv in backend/, a pnpm workspace's node_modules at the root and in a member
    (links into the root's .pnpm store, relative): host mode binds each at its own path."""
    from logmine.environment.provide import provide
    from logmine.environment.recipe import recipe_for

    repo = tmp_path / "mono"
    (repo / "backend").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text("node_modules/\n.venv/\n")
    (repo / "backend" / "requirements.txt").write_text("iniconfig\n")
    (repo / "package.json").write_text('{"name": "m"}\n')
    (repo / "pnpm-workspace.yaml").write_text("packages:\n  - 'web'\n  - 'shared'\n")
    (repo / "pnpm-lock.yaml").write_text("lockfileVersion: '9.0'\n")
    for member in ("web", "shared"):
        (repo / member).mkdir()
        (repo / member / "package.json").write_text("{}\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / "backend" / ".venv")], check=True)
    store = repo / "node_modules" / ".pnpm" / "vitest@1.0.0" / "node_modules" / "vitest"
    store.mkdir(parents=True)
    (store / "package.json").write_text('{"name": "vitest"}\n')
    (repo / "web" / "node_modules").mkdir()
    (repo / "web" / "node_modules" / "vitest").symlink_to("../../node_modules/.pnpm/vitest@1.0.0/node_modules/vitest")
    _git(repo, "add", ".")
    assert dependency_dirs(repo) == ["backend/.venv", "node_modules", "web/node_modules"]
    env = detect(repo, [("cd backend && .venv/bin/python -m pytest", "/w"), ("pnpm --filter web test", "/w")], "/w")
    recipe = recipe_for(env, repo)
    assert {"backend/.venv", "node_modules", "shared/node_modules"} <= set(recipe.outputs)
    provided = provide("host", env, repo, "/w", repo, "bwrap")  # shared/ has no node_modules: not required
    binds = dict(provided.binds)
    assert binds[str(repo / "backend" / ".venv")] == "/w/backend/.venv"
    assert binds[str(repo / "web" / "node_modules")] == "/w/web/node_modules"
    assert binds[str(repo / "node_modules")] == "/w/node_modules"
    assert not any(str(tmp_path.parent) == src for src in binds)  # nothing above the repository


def test_a_global_pnpm_store_linked_from_node_modules_is_bound_not_the_home(tmp_path):
    home = tmp_path / "home"
    store = home / ".local" / "share" / "pnpm" / "store" / "links" / "vitest" / "node_modules" / "vitest"
    store.mkdir(parents=True)
    (store / "package.json").write_text("{}\n")
    stray = home / "src" / "mylib"
    stray.mkdir(parents=True)
    (stray / "index.js").write_text("\n")
    repo = tmp_path / "proj"
    (repo / "node_modules" / "@me").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text("node_modules/\n")
    (repo / "node_modules" / "vitest").symlink_to(store)
    (repo / "node_modules" / "@me" / "mylib").symlink_to(stray)  # a `yarn link` to a folder in the home
    (repo / "node_modules" / ".modules.yaml").write_text("layoutVersion: 5\n")
    host = host_environment(Environment(tools=()), repo, "/w", user_path="/usr/bin", home=home)
    binds = dict(host.binds)
    assert binds[str(home / ".local" / "share" / "pnpm")] == str(home / ".local" / "share" / "pnpm")
    assert str(home) not in binds and str(stray) not in binds
    assert any("node_modules/@me/mylib links outside the repository" in n for n in host.notes), host.notes


def test_rustups_cargo_takes_its_toolchains_and_crates_cache_never_the_cargo_home(tmp_path, monkeypatch):
    monkeypatch.delenv("RUSTUP_HOME", raising=False)
    monkeypatch.delenv("CARGO_HOME", raising=False)
    home = tmp_path / "home"
    proxies = home / ".cargo" / "bin"
    proxies.mkdir(parents=True)
    (proxies / "cargo").write_text("#!/bin/sh\n")
    (proxies / "cargo").chmod(0o755)
    (home / ".rustup" / "toolchains").mkdir(parents=True)
    host = host_environment(Environment(tools=("cargo",)), None, "/w", user_path=f"{proxies}:/usr/bin", home=home)
    assert set(dict(host.binds)) == {str(proxies), str(home / ".rustup")}
    assert host.env["RUSTUP_HOME"] == str(home / ".rustup") and "CARGO_HOME" not in host.env
    (home / ".cargo" / "registry").mkdir()
    (home / ".cargo" / "credentials.toml").write_text('[registry]\ntoken = "secret"\n')
    host = host_environment(Environment(tools=("cargo",)), None, "/w", user_path=f"{proxies}:/usr/bin", home=home)
    assert set(dict(host.binds)) == {str(proxies), str(home / ".rustup"), str(home / ".cargo" / "registry")}
    assert host.env["CARGO_HOME"] == str(home / ".cargo")


def test_browser_tests_take_the_users_downloaded_browsers_read_only(tmp_path, monkeypatch):
    for name in ("XDG_CACHE_HOME", "PLAYWRIGHT_BROWSERS_PATH", "CYPRESS_CACHE_FOLDER"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    browsers = home / ".cache" / "ms-playwright" / "chromium_headless_shell-1148" / "chrome-linux"
    browsers.mkdir(parents=True)
    node = Environment(languages=("node",), tools=())
    host = host_environment(node, None, "/w", user_path="/usr/bin", home=home)
    cache = str(home / ".cache" / "ms-playwright")
    assert dict(host.binds) == {cache: cache} and host.env["PLAYWRIGHT_BROWSERS_PATH"] == cache
    assert "CYPRESS_CACHE_FOLDER" not in host.env  # no Cypress downloaded: nothing bound, nothing named
    # a Python project's replay gets no browsers; browsers kept inside node_modules need no variable
    assert host_environment(Environment(languages=("python",)), None, "/w", user_path="/usr/bin", home=home).binds == ()
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", "0")
    assert host_environment(node, None, "/w", user_path="/usr/bin", home=home).binds == ()
    moved = tmp_path / "browsers"
    moved.mkdir()
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(moved))
    assert host_environment(node, None, "/w", user_path="/usr/bin", home=home).env["PLAYWRIGHT_BROWSERS_PATH"] == str(moved)
