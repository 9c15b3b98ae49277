"""A Rust workspace tested with ``cargo test -p …`` through verify's host mode: the user's cargo is a
rustup proxy (``~/.cargo/bin/cargo``) that finds its toolchains in ``~/.rustup``, not in the
sandbox's own HOME. Real git repository, real session, the real sandbox and this host's cargo; no
network (the workspace has no dependencies to fetch)."""

from __future__ import annotations

import shutil

import pytest
from calc_repo import calc_repo
from conftest import query
from session_builder import SessionBuilder, segmented

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"),
              pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")]

WORKSPACE = {
    "Cargo.toml": '[workspace]\nmembers = ["crates/calc"]\nresolver = "2"\n',
    ".gitignore": "target/\n",
    "crates/calc/Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
    "crates/calc/src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n"
                              "#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n"
                              "        assert_eq!(super::add(2, 3), 5);\n    }\n}\n",
}
FIX = ("*** Begin Patch\n*** Update File: crates/calc/src/lib.rs\n@@\n pub fn add(a: i32, b: i32) -> i32 {\n"
       "-    a - b\n+    a + b\n*** End Patch\n")


def test_a_cargo_workspace_validates_with_the_users_rustup_toolchain(tmp_path, monkeypatch):
    from logmine.verify import VerifyConfig, verify

    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "home" / "u" / "crates"
    commit = calc_repo(repo, WORKSPACE)
    test = "cargo test -p calc"
    session = (SessionBuilder(cwd=str(repo), commit=commit)
               .user("add is wrong").run(test, 101).patch(FIX).run(test, 0).agent("Fixed."))
    store, _ = segmented(tmp_path, session)
    verify(VerifyConfig(store=store, jobs=1, env_mode="host"))
    (row,) = query(store, "SELECT status, status_reason, env_mode, before_exit_code, test_runner, tests_fail_to_pass "
                          "FROM verifiers WHERE kind = 'test_command'")
    assert (row["status"], row["env_mode"], row["before_exit_code"]) == ("validated", "host", 101), row
    assert row["tests_fail_to_pass"] == ["tests::adds"], row
