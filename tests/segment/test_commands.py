"""Command recognition: wrappers are unwrapped, test runs and shell edits recognised."""

from __future__ import annotations

import pytest

from logmine.pipeline import load_pipeline
from logmine.segment.commands import CommandClassifier, unwrap

CLASSIFIER = CommandClassifier(load_pipeline()["segment"])


@pytest.mark.parametrize("command, inner, cd", [
    ("python -m pytest -q", "python -m pytest -q", None),
    ("bash -lc 'cd pkg && python -m pytest -q'", "python -m pytest -q", "pkg"),
    ("cd /repo && cd sub && go test ./...", "go test ./...", "/repo/sub"),
    ("/bin/bash -lc \"npm test\"", "npm test", None),
    ("cd 'my dir'; cargo test", "cargo test", "my dir"),
])
def test_unwrap(command, inner, cd):
    assert unwrap(command) == type(unwrap(command))(inner, cd)


@pytest.mark.parametrize("command", [
    "pytest", "python -m pytest -q tests/test_x.py", "python3 -m unittest -q", "PYTHONPATH=. pytest -q",
    "bash -lc 'cd x && pytest -k foo'", "tox -e py311", "nox -s tests", "npm test", "npm run test", "pnpm test",
    "yarn test", "npx jest", "vitest run", "mocha", "go test ./...", "cargo test", "cargo nextest run",
    "mvn -q test", "./gradlew test", "make test", "make -j4 check", "ctest --output-on-failure",
    "bundle exec rspec", "vendor/bin/phpunit", "dotnet test", "swift test",
])
def test_recognised_test_runs(command):
    assert CLASSIFIER.is_test(command)


@pytest.mark.parametrize("command", [
    "which pytest", "pytest --version", "python3 -m pytest --version", "head -n 20 /opt/homebrew/bin/pytest",
    "pip install pytest", "ls tests", "git status", "pytest --collect-only -q", "cat test_calc.py",
    "npx playwright install chromium", "pnpm exec playwright show-report", "npx cypress open",
])
def test_not_test_runs(command):
    assert not CLASSIFIER.is_test(command)


@pytest.mark.parametrize("command, edits", [
    ("sed -i 's/a/b/' x.py", True), ("echo hi > out.txt", True), ("cat > f.py <<'EOF'\nx\nEOF", True),
    ("git checkout -- x.py", True), ("git restore x.py", True), ("git restore --staged x.py", False),
    ("python - <<'PY'\nprint(1)\nPY", True), ("rm -rf build", True), ("python -m pytest -q 2>&1", False),
    ("ls -la", False), ("rg foo", False), ("git diff > /dev/null", False), ("git commit -m x", False),
    # the redirect after a heredoc's opener (a real session wrote a checklist so; the next patch needed it)
    ("cat <<'EOF' > specs/001/checklists/requirements.md\n# Checklist\nEOF", True),
    ("cat <<EOF\nnot a redirect > here\nEOF", False),
    ("mkdir -p specs/001/checklists", True), ("chmod +x scripts/gen.sh", True),
])
def test_file_edits(command, edits):
    assert CLASSIFIER.edits_files(command) is edits


def test_extra_recognisers_from_a_pipeline_file(tmp_path):
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(r"""[segment]
extra_test_commands = ['\bbazel\s+test\b']
""")
    classifier = CommandClassifier(load_pipeline(pipeline)["segment"])
    assert classifier.is_test("bazel test //...") and classifier.is_test("pytest")
    assert not CLASSIFIER.is_test("bazel test //...")


@pytest.mark.parametrize("command", [
    "uv run pytest", "uv run --with pytest pytest -q", "uv run python -m pytest", "poetry run pytest",
    "poetry run python -m pytest -x", "pipenv run pytest", "uvx pytest", ".venv/bin/python -m pytest -q",
    "source .venv/bin/activate && python -m pytest", ". venv/bin/activate; pytest -q", "npm test",
    "bash -lc 'source .venv/bin/activate && python -m pytest tests'", "cd web && npm test -- --watch=false",
    "/home/u/.pyenv/versions/3.12.1/bin/python -m pytest", "timeout 60 pytest -x", "env CI=1 npm run test",
    "which pytest && pytest -q", "python -m pytest -q 2>&1 | tail -n 20",
    # JavaScript workspaces: filters, workspace options and the package's own programs
    "pnpm --filter @scope/web exec vitest run src/a.test.ts", "pnpm -F web test", "pnpm -r test",
    "pnpm vitest run", "npm -w packages/web test", "npm --workspace=web run test", "yarn workspace web test",
    "npx -y vitest run a.test.ts", "npm exec -- jest", "pnpm -C apps/api exec jest --ci", "bunx vitest",
    # a package script run by its name, and node's own runner behind a loader
    "pnpm test:rbac", "cd /u/app && POSTGRES_URL=x pnpm test:rbac", "yarn test:unit --run",
    "node --import tsx/register --test tests/rbac.test.ts", "node -r ts-node/register --test", "node --test",
    # browser tests (ship's e2e runs), their browsers the user's own
    "PLAYWRIGHT_WORKERS=1 pnpm exec playwright test e2e/session-timeout.spec.ts", "npx playwright test",
    "yarn cypress run --spec cypress/e2e/a.cy.ts",
])
def test_test_runs_behind_runners_and_venvs(command):
    assert CLASSIFIER.is_test(command)


@pytest.mark.parametrize("command", [
    'gh pr create --title fix --body "Ran uv run --with pytest pytest: all green"',
    "git commit -m 'make pytest pass'", "echo 'npm test'", "uv add --dev pytest", "uv pip install pytest",
    "poetry add pytest", "grep -rn pytest pyproject.toml", "uv run --with pytest pytest --version",
    "bash -lc 'echo \"run pytest later\"'", "pnpm add -D vitest", "npm install --save-dev jest",
    "pnpm --filter web add vitest", "yarn workspace web add jest",
    "test -f package.json", "[ -d tests ] && test -n x", "node scripts/run.js --test", "pnpm testing:db",
])
def test_quoted_or_installed_test_runners_are_not_test_runs(command):
    assert not CLASSIFIER.is_test(command)


@pytest.mark.parametrize("command, edits", [
    ("bash -lc 'echo x > notes.txt'", True), ("git commit -m 'rm stale files; mv x y'", False),
    ("gh pr create --body 'sed -i s/a/b/ x.py'", False), ("ls 2> errors.log", False),
    ("printf x >> log.txt", True), ("find . -name '*.pyc' -delete", True), ("sed -e s/a/b/ -i.bak x.py", True),
    ("python -m pytest > /dev/null 2>&1", False), ("cmd &> out.log", True),
])
def test_file_edits_are_executed_commands_or_redirections(command, edits):
    assert CLASSIFIER.edits_files(command) is edits
