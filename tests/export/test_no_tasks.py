"""export sft / export tmax before segment: the same typed error as verify, with the command to run first."""

from __future__ import annotations

import pytest

from logmine.export.sft import SftExportConfig, SftExportError, export_sft
from logmine.export.tmax import ExportError, TmaxExportConfig, export_tmax
from logmine.segment.records import NoTasks
from logmine.store import Store


@pytest.fixture
def empty_store(tmp_path):
    Store(tmp_path / "store").close()  # a store that nothing was segmented into
    return tmp_path / "store"


def test_export_sft_without_tasks(empty_store, tmp_path):
    with pytest.raises(NoTasks) as info:
        export_sft(SftExportConfig(store=empty_store, out=tmp_path / "sft"))
    assert isinstance(info.value, SftExportError)
    assert info.value.one_line() == f"no tasks in {empty_store} (run `logmine segment` first)"
    assert not (tmp_path / "sft").exists()


def test_export_tmax_without_tasks(empty_store, tmp_path):
    with pytest.raises(NoTasks) as info:
        export_tmax(TmaxExportConfig(store=empty_store, out=tmp_path / "tmax"))
    assert isinstance(info.value, ExportError)
    assert info.value.one_line() == f"no tasks in {empty_store} (run `logmine segment` first)"
    assert not (tmp_path / "tmax").exists()
