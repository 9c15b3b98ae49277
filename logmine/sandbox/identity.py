"""Which user the sandboxed commands run as.

RLIMIT_NPROC is what contains a fork bomb, and the kernel does not apply it to host root (kuid 0),
even inside a user namespace whose uid maps to root. So:

* host root: bwrap runs privileged (no user namespace) and ``setpriv`` drops, inside the sandbox,
  to a fresh unprivileged uid/gid picked per sandbox from the ids this host maps, with no
  capabilities and ``no_new_privs``. The workspace copy is chowned to it. The process limit then
  counts only that sandbox's processes.
* anyone else: a user namespace maps the caller's own uid (bwrap ``--unshare-user``); the kernel
  counts RLIMIT_NPROC per user namespace, so again only the sandbox's processes.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

FIRST_ID = 1_000_000  # above any real account on a normal host
ID_SPAN = 1_000_000


@dataclass(frozen=True, slots=True)
class Identity:
    uid: int
    gid: int
    drop_privileges: bool  # True: privileged bwrap + setpriv to uid/gid; False: user namespace


def sandbox_identity() -> Identity:
    """A fresh identity for one sandbox. Raises OSError when root has no other id to drop to."""
    if os.geteuid() != 0:
        return Identity(os.getuid(), os.getgid(), drop_privileges=False)
    uid = _pick(_ranges(Path("/proc/self/uid_map")))
    gid = uid if _mapped(uid, _ranges(Path("/proc/self/gid_map"))) else _pick(_ranges(Path("/proc/self/gid_map")))
    return Identity(uid, gid, drop_privileges=True)


def drop_argv(identity: Identity) -> list[str]:
    """``setpriv`` prefix that becomes ``identity`` for good (empty when a user namespace does it)."""
    if not identity.drop_privileges:
        return []
    return [
        "setpriv",
        f"--reuid={identity.uid}",
        f"--regid={identity.gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def _ranges(map_file: Path) -> list[tuple[int, int]]:
    """(first, count) of the ids usable in this user namespace."""
    try:
        lines = map_file.read_text().splitlines()
    except OSError:
        return [(0, 1 << 32)]
    return [(int(inside), int(count)) for inside, _outside, count in (line.split() for line in lines)]


def _mapped(value: int, ranges: list[tuple[int, int]]) -> bool:
    return any(first <= value < first + count for first, count in ranges)


def _pick(ranges: list[tuple[int, int]]) -> int:
    """A random mapped id: from FIRST_ID on when mapped, else from the widest stretch of 1000-65533."""
    if _mapped(FIRST_ID, ranges) and _mapped(FIRST_ID + ID_SPAN - 1, ranges):
        return FIRST_ID + secrets.randbelow(ID_SPAN)
    stretches = [(max(first, 1000), min(first + count, 65534)) for first, count in ranges]
    stretches = [(low, high) for low, high in stretches if high > low]
    if not stretches:
        raise OSError("running as root, but this user namespace maps no unprivileged id to drop to")
    low, high = max(stretches, key=lambda stretch: stretch[1] - stretch[0])
    return low + secrets.randbelow(high - low)
