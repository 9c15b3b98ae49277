"""Which files a copy of a user's tree leaves out by name: credentials, never the code that handles
them. A real Next.js project's seeds lost ``api/users/[id]/password/route.ts`` (a folder named
``password``) and ``tests/api/auth/credentials.test.ts`` (``credentials.*``), and its bundles' patches
of them did not apply."""

from __future__ import annotations

import pytest

from logmine.redact.files import copy_tree
from logmine.redact.paths import credential_path


@pytest.mark.parametrize("rel", [
    ".env", "web/.env.local", "config/credentials.json", "deploy/secrets.yaml", "keys/id_rsa", "certs/server.pem",
    "ops/password", "ops/passwords.csv", ".aws/config", "proj/.git/config", "home/.ssh/known_hosts",
    "secrets.sh",  # a shell script of exports is a credentials file
])
def test_credentials_are_left_out(rel):
    assert credential_path(rel)


@pytest.mark.parametrize("rel", [
    "tests/api/auth/credentials.test.ts", "src/lib/secrets.py", "app/credentials.tsx", "src/auth/password.go",
    "src/app/api/users/[id]/password/route.ts", "reset_password.py",
])
def test_code_that_names_them_is_kept(rel):
    assert credential_path(rel) is None


def test_a_folder_is_left_out_by_its_name_only_when_it_is_a_private_one(tmp_path):
    source = tmp_path / "src"
    route = source / "app" / "api" / "users" / "[id]" / "password"
    route.mkdir(parents=True)
    (route / "route.ts").write_text("export async function PATCH() {}\n")
    (route / "password").write_text("hunter2\n")  # a bare password file, wherever it lies
    (source / "credentials").mkdir()
    (source / "credentials" / "index.ts").write_text("export const provider = 'credentials'\n")
    (source / ".ssh").mkdir()
    (source / ".ssh" / "config").write_text("Host x\n")
    left_out = copy_tree(source, tmp_path / "dest")
    kept = sorted(p.relative_to(tmp_path / "dest").as_posix() for p in (tmp_path / "dest").rglob("*") if p.is_file())
    assert kept == ["app/api/users/[id]/password/route.ts", "credentials/index.ts"]
    assert sorted(left_out) == [".ssh", "app/api/users/[id]/password/password"]
