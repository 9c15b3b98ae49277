"""What logmine puts inside every sandbox, read-only at ``TOOL_ROOT`` (``/opt/logmine``)::

    TOOL_ROOT/startup.bash                  BASH_ENV of every command: limits, then the start token
    TOOL_ROOT/bin/apply_patch               exec INTERPRETER -I -S -B -c '...main...' "$@"
    TOOL_ROOT/lib/logmine/__init__.py       empty: nothing else of logmine is visible
    TOOL_ROOT/lib/logmine/patch/            mount point for the host's logmine/patch (read-only)

Every command is ``bash`` started with ``BASH_ENV=TOOL_ROOT/startup.bash`` and the start token in
``LOGMINE_START``: bash runs the script before the command, so the limits cost no extra process,
and the token printed first proves that the sandbox started (no token: an infrastructure error,
never a failed command). The script unsets both variables, so nested shells do not see them.

``apply_patch`` is the same ``logmine.patch`` module as ingest.
``logmine.patch`` imports only the standard library, so any Python >= 3.10 runs it; ``-I`` keeps
the workspace (the current directory) and PYTHON* variables off ``sys.path``, so an agent's files
cannot replace the module. Both forms Codex uses work: ``apply_patch "PATCH"`` and
``apply_patch <<'EOF' ... EOF``.
"""

from __future__ import annotations

import os
import secrets
import shlex
import sys
from pathlib import Path

import logmine.patch

from .limits import Limits, startup_script

TOOL_ROOT = "/opt/logmine"
TOOL_BIN = f"{TOOL_ROOT}/bin"
STARTUP = f"{TOOL_ROOT}/startup.bash"
PATCH_MOUNT = f"{TOOL_ROOT}/lib/logmine/patch"

_MAIN = 'import sys; sys.path.insert(0, "{lib}"); from logmine.patch import main; sys.exit(main(sys.argv))'
_SCRIPT = "#!/bin/sh\nexec {interpreter} -I -S -B -c '" + _MAIN + "' \"$@\"\n"


#: Package managers told to work from their caches: a sandbox without network otherwise leaves each
#: install retrying until the command's time runs out (an ``npm install`` a real session ran took a
#: replay's whole timeout), where offline it fails at once, or succeeds from a cache.
OFFLINE_ENV = {
    "npm_config_offline": "true",  # npm, and pnpm (it reads npm's settings)
    "YARN_ENABLE_OFFLINE_MODE": "1",
    "PIP_NO_INDEX": "1",
    "UV_OFFLINE": "1",
    "CARGO_NET_OFFLINE": "true",
    "GOPROXY": "off",
    "HF_HUB_OFFLINE": "1",
}


def offline_env(network: bool) -> dict[str, str]:
    """:data:`OFFLINE_ENV` for a sandbox without network, else nothing."""
    return {} if network else OFFLINE_ENV


def patch_source() -> Path:
    """The host directory of ``logmine.patch`` (bound read-only at ``PATCH_MOUNT``)."""
    return Path(logmine.patch.__file__).resolve().parent


def host_interpreter() -> Path:
    """The real interpreter running logmine (through any venv), to run the tool inside bwrap."""
    return Path(os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable))


def start_token() -> str:
    return f"__logmine_start_{secrets.token_hex(8)}__"


def startup_env(token: str) -> dict[str, str]:
    """The variables that make bash run the start-up script and print ``token``."""
    return {"BASH_ENV": STARTUP, "LOGMINE_START": token}


def write_tools(root: Path, interpreter: str, limits: Limits) -> Path:
    """Lay the tools out under ``root`` (created); returns ``root``. ``interpreter``: a path inside."""
    package = root / "lib" / "logmine"
    for directory in (root, root / "bin", root / "lib", package, package / "patch"):
        directory.mkdir(mode=0o755)
        directory.chmod(0o755)  # whatever the umask: the sandbox user must enter them
    files = {
        root / "startup.bash": (startup_script(limits), 0o644),
        package / "__init__.py": ("", 0o644),
        root / "bin" / "apply_patch": (_SCRIPT.format(interpreter=shlex.quote(interpreter), lib=f"{TOOL_ROOT}/lib"),
                                       0o755),
    }
    for path, (text, mode) in files.items():
        path.write_text(text)
        path.chmod(mode)
    return root


def with_tool_path(env: dict[str, str] | None) -> dict[str, str]:
    """``env`` with the sandbox's tool directory (``apply_patch``) first on any ``PATH`` it sets."""
    env = dict(env or {})
    if "PATH" in env:
        env["PATH"] = ":".join([TOOL_BIN] + [p for p in env["PATH"].split(":") if p and p != TOOL_BIN])
    return env
