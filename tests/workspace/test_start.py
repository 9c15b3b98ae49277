"""The rebuilt start tree's reader: files of a workspace, never what a link points at outside it."""

from __future__ import annotations

from logmine.workspace import read_inside


def test_read_inside_never_leaves_the_workspace(tmp_path):
    base, outside = tmp_path / "ws", tmp_path / "host-secret.txt"
    (base / "sub").mkdir(parents=True)
    outside.write_text("host file")
    (base / "ok.txt").write_text("mine")
    (base / "link.txt").symlink_to(outside)
    (base / "dirlink").symlink_to(tmp_path)
    (base / "bin.dat").write_bytes(b"\xff\xfe")
    assert read_inside(base, "ok.txt") == "mine"
    assert read_inside(base, "link.txt") is None
    assert read_inside(base, "dirlink/host-secret.txt") is None
    assert read_inside(base, "../host-secret.txt") is None
    assert read_inside(base, "bin.dat") is None and read_inside(base, "missing") is None
