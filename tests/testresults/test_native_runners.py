"""Real ``cargo test`` and ``go test`` runs, instrumented, read test by test (each where it is installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from testresults_support import clean_env, exit_code, run_instrumented, statuses, write

CARGO = shutil.which("cargo") or next((str(p) for p in [Path.home() / ".cargo" / "bin" / "cargo"] if p.exists()), None)
LIB_RS = """pub fn add(a: i32, b: i32) -> i32 { if a >= 0 { a + b } else { a - b } }

#[cfg(test)]
mod tests {
    use super::*;
    #[test] fn adds() { assert_eq!(add(1, 2), 3); }
    #[test] fn adds_negatives() { assert_eq!(add(-1, -1), -2); }
    #[test] #[ignore = "slow"] fn later() {}
    mod doubles { #[test] fn one() { assert_eq!(super::add(1, 1), 2); } }
}
"""


@pytest.mark.skipif(CARGO is None, reason="cargo is not installed")
def test_cargo_test_lines_name_each_test(tmp_path):
    crate = write(tmp_path / "calc", {"Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
                                      "src/lib.rs": LIB_RS})
    env = clean_env(CARGO_TARGET_DIR=str(tmp_path / "target"), CARGO_NET_OFFLINE="true",
                    PATH=f"{Path(CARGO).parent}:{clean_env()['PATH']}")
    built = subprocess.run(["cargo", "test", "--no-run", "-q"], cwd=crate, capture_output=True, text=True,
                           timeout=300, env=env)
    if built.returncode != 0:
        pytest.skip(f"the test crate does not build here: {built.stderr[-300:]}")
    report, code, _ = run_instrumented("cargo test -q", crate, tmp_path / "report", env=env)  # -q: terse, dropped
    assert report is not None and (report.runner, report.source) == ("cargo", "text")
    assert statuses(report) == {"tests::adds": "passed", "tests::adds_negatives": "failed", "tests::later": "skipped",
                                "tests::doubles::one": "passed"}
    assert code == exit_code("cargo test -q", crate, env) == 101


GO_TEST = """package calc

import "testing"

func TestAdd(t *testing.T) { if Add(1, 2) != 3 { t.Fatal("1+2") } }
func TestAddNegatives(t *testing.T) { if Add(-1, -1) != -2 { t.Fatal("-1-1") } }
func TestLater(t *testing.T) { t.Skip("not yet") }
func TestDoubles(t *testing.T) { t.Run("one", func(t *testing.T) { if Add(1, 1) != 2 { t.Fatal("1+1") } }) }
"""


@pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")
def test_go_test_json_names_each_test(tmp_path):
    module = write(tmp_path / "calc", {"go.mod": "module example.com/calc\n\ngo 1.20\n", "calc_test.go": GO_TEST,
                                       "calc.go": "package calc\n\nfunc Add(a, b int) int { if a >= 0 { return a + b }; return a - b }\n"})
    env = clean_env(GOFLAGS="-mod=mod", GOPROXY="off", GOCACHE=str(tmp_path / "gocache"), GOTOOLCHAIN="local")
    report, code, _ = run_instrumented("go test ./...", module, tmp_path / "report", env=env)
    assert report is not None and (report.runner, report.source) == ("go", "json")
    assert statuses(report) == {"example.com/calc::TestAdd": "passed", "example.com/calc::TestAddNegatives": "failed",
                                "example.com/calc::TestLater": "skipped", "example.com/calc::TestDoubles": "passed",
                                "example.com/calc::TestDoubles/one": "passed"}
    assert code == exit_code("go test ./...", module, env) == 1
