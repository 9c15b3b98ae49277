"""The notebooks in notebooks/ run top to bottom on the demo corpus, so they cannot rot."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NEEDS_TORCH = {"03-sft-composition.ipynb", "04-pass-rates-and-filtering.ipynb"}


@pytest.fixture(scope="module")
def kernel_dirs(tmp_path_factory) -> Path:
    """A kernelspec that runs this interpreter (the venv's), whatever kernels the machine has installed."""
    root = tmp_path_factory.mktemp("kernels")
    spec = root / "logmine-test"
    spec.mkdir()
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "logmine (test)",
        "language": "python",
        "env": {"MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    }))
    return root


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs(name, kernel_dirs, monkeypatch, tmp_path):
    if name in NEEDS_TORCH:
        pytest.importorskip("torch")
        pytest.importorskip("transformers")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    monkeypatch.delenv("LOGMINE_STORE", raising=False)  # always the demo corpus
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebooks' temporary stores end up under tmp_path
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert all(not cell.get("outputs") for cell in book.cells if cell.cell_type == "code"), \
        f"{name} is stored with outputs: clear them"
    km = KernelManager(kernel_name="logmine-test", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernel_dirs)]))
    client = nbclient.NotebookClient(book, km=km, timeout=120, resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    errors = [out for cell in book.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
              if out.get("output_type") == "error"]
    assert not errors
