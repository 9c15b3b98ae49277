"""How the bubblewrap command line is built (no sandbox is started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from logmine.sandbox.bwrap import Layout, MountPlan, bwrap_argv, check_mount_at
from logmine.sandbox.hostview import etc_view, host_view, python_roots
from logmine.sandbox.identity import Identity

LAYOUT = Layout(Path("/state/workspace"), Path("/state/tool"), Path("/state/etc"), Path("/src/logmine/patch"),
                "/home/dev/projects/fixadd")
ROOT = Identity(1_234_567, 1_234_567, drop_privileges=True)
USER = Identity(1000, 1000, drop_privileges=False)


def _argv(identity=ROOT, network=False):
    return bwrap_argv(LAYOUT, identity, network=network, cwd="/home/dev/projects/fixadd/src", status_fd=7, tmp_mb=64)


def _mounts(argv, option):
    return [(argv[i + 1], argv[i + 2]) for i, arg in enumerate(argv) if arg == option]


def test_the_host_root_is_never_mounted_and_system_dirs_are_read_only():
    argv = _argv()
    binds = _mounts(argv, "--ro-bind") + _mounts(argv, "--bind")
    assert all(dest != "/" and src != "/" for src, dest in binds)
    assert ("/usr", "/usr") in _mounts(argv, "--ro-bind")
    assert _mounts(argv, "--bind") == [("/state/workspace", "/home/dev/projects/fixadd")]  # the only writable bind
    assert ("/state/etc/passwd", "/etc/passwd") in _mounts(argv, "--ro-bind")
    assert not any(dest in ("/etc/shadow", "/etc/ssh", "/etc/pip.conf", "/etc/npmrc", "/etc/profile")
                   for _src, dest in binds)
    assert ("/src/logmine/patch", "/opt/logmine/lib/logmine/patch") in _mounts(argv, "--ro-bind")


def test_namespaces_and_lifetime():
    argv = _argv()
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
                 "--new-session"):
        assert flag in argv
    assert argv[argv.index("--json-status-fd") + 1] == "7"
    assert argv[argv.index("--chdir") + 1] == "/home/dev/projects/fixadd/src"
    assert argv[-1] == "--"
    assert "--unshare-net" not in _argv(network=True)


def test_private_tmp_is_a_sized_tmpfs_with_a_home():
    argv = _argv()
    at = argv.index("--tmpfs")
    assert argv[at - 4 : at + 2] == ["--size", str(64 << 20), "--perms", "1777", "--tmpfs", "/tmp"]
    assert argv[argv.index("/tmp/home") - 3 : argv.index("/tmp/home") + 1] == ["--perms", "0777", "--dir", "/tmp/home"]


def test_root_uses_no_user_namespace_others_map_their_own_uid():
    assert "--unshare-user" not in _argv(ROOT)  # setpriv drops inside (RLIMIT_NPROC ignores uid 0)
    argv = _argv(USER)
    assert argv[argv.index("--unshare-user") : argv.index("--unshare-user") + 5] == [
        "--unshare-user", "--uid", "1000", "--gid", "1000"]


def test_missing_parents_are_made_enterable_before_a_mount():
    plan = MountPlan()
    plan.add("--ro-bind", "/usr", "/usr")
    plan.add("--ro-bind", "/x/tool", "/opt/logmine")
    plan.add("--ro-bind", "/x/patch", "/opt/logmine/lib/logmine/patch")  # inside a bind: exists there
    plan.add("--tmpfs", "/tmp", empty=True)
    plan.add("--bind", "/x/ws", "/tmp/a/b")  # inside a tmpfs: must be made
    assert plan.argv == [
        "--ro-bind", "/usr", "/usr",
        "--perms", "0755", "--dir", "/opt", "--ro-bind", "/x/tool", "/opt/logmine",
        "--ro-bind", "/x/patch", "/opt/logmine/lib/logmine/patch",
        "--tmpfs", "/tmp",
        "--perms", "0755", "--dir", "/tmp/a", "--bind", "/x/ws", "/tmp/a/b",
    ]


@pytest.mark.parametrize("mount_at", ["/", "/usr/src/app", "/etc", "/tmp", "/opt", "/opt/logmine/x", "/tmp/home",
                                      "relative/path", "/proc/x"])
def test_mount_at_cannot_hide_or_enter_what_the_sandbox_mounts(mount_at):
    with pytest.raises(ValueError):
        check_mount_at(mount_at)


def test_mount_at_is_normalised_and_may_be_any_project_path():
    assert check_mount_at("/home/dev/projects/fixadd/") == "/home/dev/projects/fixadd"
    assert check_mount_at("/workspace") == "/workspace"
    assert check_mount_at("/tmp/build/repo") == "/tmp/build/repo"
    for root in python_roots():
        with pytest.raises(ValueError):
            check_mount_at(root + "/lib")


def test_the_etc_copy_holds_only_what_any_user_may_read_and_no_credentials():
    etc = Path(etc_view())
    names = {p.name for p in etc.iterdir()}
    assert {"passwd", "group"} <= names
    assert not names & {"shadow", "gshadow", "ssh", "pip.conf", "npmrc", "profile", "profile.d", "bash.bashrc",
                        "environment", "sudoers", "machine-id"}
    assert (etc / "passwd").read_text() == "" and (etc / "group").read_text() == ""  # each sandbox binds its own
    assert not (etc / "ssl" / "private").exists()
    assert ("--ro-bind", str(etc), "/etc") in host_view()
