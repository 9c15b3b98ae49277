"""Finding a session's clone under the search roots: remote URLs compared in one form."""

from __future__ import annotations

import pytest

from logmine.workspace.clones import normalise_url


@pytest.mark.parametrize("url", ["git@github.com:o/r.git", "https://github.com/o/r", "ssh://git@github.com/o/r.git"])
def test_remote_urls_compare_normalised(url):
    assert normalise_url(url) == "github.com/o/r"
