"""verify before segment: one typed error, with the command to run first."""

from __future__ import annotations

import pytest

from logmine.segment.records import NoTasks
from logmine.store import Store
from logmine.verify import NothingToVerify, VerifyConfig, verify


def test_verify_without_tasks_says_to_segment_first(tmp_path):
    Store(tmp_path / "store").close()  # a store that nothing was segmented into
    with pytest.raises(NoTasks) as info:
        verify(VerifyConfig(store=tmp_path / "store"))
    assert isinstance(info.value, NothingToVerify)
    assert info.value.one_line() == f"no tasks in {tmp_path / 'store'} (run `logmine segment` first)"
