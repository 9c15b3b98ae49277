"""``ls`` outputs as sessions show them: plain (one name per line, as a tool's output has it), long,
with ``-F`` marks; what each says the directory held. Listings that cannot be read give nothing."""

from __future__ import annotations

from logmine.segment.listing import parse_listing

LONG = """total 12
drwxr-xr-x 3 root root 4096 Dec  8 00:45 .
drwxr-xr-x 3 root root 4096 Dec  8 00:45 ..
-rw-r--r-- 1 root root    0 Dec  8 00:45 .env
-rw-r--r-- 1 root root    0 Dec  8 00:45 a b.txt
lrwxrwxrwx 1 root root    4 Dec  8 00:45 link -> x.py
drwxr-xr-x@ 2 max  staff  160 Jan 29  2025 sub
"""


def _read(command, output, where="/u/p"):
    found = parse_listing(command, output, where, 3)
    return None if found is None else (found.path, found.names)


def test_plain_and_long_listings_name_what_the_directory_held():
    assert _read("ls", "_bmad\n_bmad-output\n") == ("/u/p", ("_bmad", "_bmad-output"))
    assert _read("ls -la", LONG) == ("/u/p", (".env", "a b.txt", "link", "sub"))
    assert _read("cd web && ls -AF", "src/\nrun.sh*\npackage.json\n") == ("/u/p/web", ("src", "run.sh", "package.json"))
    assert _read("ls /u/p/api", "") == ("/u/p/api", ())


def test_listings_that_do_not_show_one_directory_whole_give_nothing():
    assert _read("ls a b", "a:\nx\n\nb:\ny\n") is None  # two paths
    assert _read("ls -R", ".:\nx\n\n./d:\ny\n") is None  # recursive
    assert _read("ls | head -3", "a\nb\nc\n") is None  # piped: a part
    assert _read("ls *.py", "a.py\n") is None  # a glob names files, not the directory
    assert _read("ls -l --time-style=long-iso", "-rw-r--r-- 1 r r 0 2026-12-08 00:45 a\n") is None  # unread form
    assert _read("lsof -i", "x\n") is None
