"""Files and directories that hold credentials by what they are called: never copied anywhere.

One list for every place that copies a user's files: export's seeds, and verify's copy of a working
directory that is not a git repository (``--plain-dirs``). Redaction scrubs secrets it recognises in
text; these paths are left out whole, because what they hold (a bare password, a key file, a shell
history, a CLI's auth token) may look like nothing in particular.
"""

from __future__ import annotations

import fnmatch
import posixpath

#: directory names (any depth) or relative paths that are credentials or private history
CREDENTIAL_DIRS = (".git", ".ssh", ".aws", ".azure", ".gnupg", ".docker", ".kube", ".codex", ".claude",
                   ".config/gh", ".config/gcloud", ".config/hub", ".config/op", ".password-store",
                   ".local/share/keyrings", ".terraform.d", ".gem/credentials", ".cargo/credentials")
#: file name patterns (fnmatch, case-insensitive)
CREDENTIAL_FILES = (".env", ".env.*", ".envrc", ".netrc", ".npmrc", ".yarnrc", ".pypirc", ".git-credentials",
                    ".gitconfig",
                    ".pgpass", ".my.cnf", ".vault-token", "credentials", "credentials.*", "secrets.json",
                    "secrets.*", "auth.json", "id_rsa*", "id_ed25519*", "id_ecdsa*", "id_dsa*",
                    "*.pem", "*.key", "*.p12", "*.pfx", "*.keystore", "*.jks", "*.kdbx",
                    # plain password lists, not code that handles passwords (reset_password.py stays)
                    "password", "passwords", "passwd", "*password*.txt", "*password*.csv", "*passwords*.json",
                    "*.passwd", "*_history", ".*_history", ".*history", ".lesshst", "*.tfstate", "*.tfvars")

#: below a home directory only: yarn 2+'s user config holds registry tokens, a project's holds its
#: settings (kept in copies; a token in it is redacted as text)
HOME_ONLY = (".yarnrc.yml",)
#: the same places as paths below a home directory, for what checks a location rather than a name
#: (the sandbox's binds of host tools: :func:`logmine.environment.host.refusal`); histories by name
HOME_CREDENTIALS = (tuple(d for d in CREDENTIAL_DIRS if d != ".git")
                    + tuple(f for f in CREDENTIAL_FILES if f.startswith(".") and not any(c in f for c in "*?["))
                    + (".bash_history", ".zsh_history", ".python_history", ".node_repl_history", ".psql_history",
                       ".mysql_history", ".sqlite_history", ".local/share/fish/fish_history",
                       ".cargo/credentials.toml") + HOME_ONLY)


#: source code, never a credentials file by its name alone (``credentials.test.ts``, ``secrets.py``:
#: code that handles them; a secret written in one is redacted as text)
CODE_SUFFIXES = (".py", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".go", ".rs", ".rb",
                 ".java", ".kt", ".swift", ".php", ".cs", ".c", ".h", ".cc", ".cpp", ".hpp", ".scala", ".ex", ".exs",
                 ".vue", ".svelte", ".dart", ".lua")


def credential_path(rel: str, directory: bool = False) -> str | None:
    """Why the file (or, with ``directory``, the directory) at ``rel`` (relative, ``/``-separated)
    must not be copied, or None. A directory is one by its name only when it is a private one
    (:data:`CREDENTIAL_DIRS`): ``api/users/[id]/password/`` holds a route's code, and the file
    names below it are judged one by one."""
    rel = posixpath.normpath(rel)
    parts = rel.split("/")
    for entry in CREDENTIAL_DIRS:
        depth = entry.count("/") + 1
        for i in range(len(parts) - depth + 1):
            if "/".join(parts[i:i + depth]) == entry:
                return f"private directory {entry}"
    if directory:
        return None
    name = parts[-1].lower()
    for pattern in CREDENTIAL_FILES:
        if fnmatch.fnmatchcase(name, pattern) and not (pattern.endswith(".*") and name.endswith(CODE_SUFFIXES)):
            return f"credentials file ({pattern})"
    return None
