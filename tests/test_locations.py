"""``$LOGMINE_CACHE`` has one meaning everywhere (``logmine.locations``)."""

from __future__ import annotations

from logmine.environment.build import cache_root
from logmine.locations import cache_dir, default_cache_dir


def test_a_directory_holds_every_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" and cache_root() == tmp_path / "c" / "envs"


def test_off_turns_off_the_speed_caches_and_environments_keep_the_default_place(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("LOGMINE_CACHE", "off")
    assert cache_dir() is None
    assert cache_root() == tmp_path / "xdg" / "logmine" / "envs" == default_cache_dir() / "envs"
    monkeypatch.delenv("LOGMINE_CACHE")
    assert cache_dir() == tmp_path / "xdg" / "logmine"
