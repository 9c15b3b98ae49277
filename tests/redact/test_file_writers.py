"""Every file a stage writes outside the store passes the redaction gate (``logmine.redact.files``).

This reads the source of the stages that write files (exports, training logs, samples) and fails on
any direct way of writing one — ``Path.write_text``/``write_bytes``, ``pq.write_table``, ``open`` for
writing — that is not in :data:`ALLOWED` with the reason it carries no text from a user's logs. A new
writer therefore fails here until it goes through the gate or is reviewed into the list.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "logmine"
CHECKED = ("export", "train", "evaluate", "agent", "verify", "segment", "run.py")
WRITERS = {"write_text", "write_bytes", "write_table", "to_parquet", "save_to_disk"}

# (module, what is written): why it holds no text from the logs
ALLOWED = {
    ("agent/synthetic.py", "write_text"): "the generated shell-task family: text logmine makes up",
    ("agent/synthetic.py", "write_table"): "rows and tokens of that generated family",
    ("export/tmax.py", "open"): "task-data.tar.gz packs the bundle files, each written through the gate",
    ("export/swe.py", "open"): "start_states/*.tar.gz pack the redacted seeds, each written through the gate",
}


def _writes(path: Path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in WRITERS and not (isinstance(func, ast.Name) and name in ("write_text", "write_table")):
            found.append((name, node.lineno))  # a bare write_text/write_table is the gate's, imported
        elif name == "open" and any(isinstance(a, ast.Constant) and isinstance(a.value, str) and
                                    set(a.value) & set("wax") for a in [*node.args[1:], *(k.value for k in node.keywords
                                                                                       if k.arg == "mode")]):
            found.append(("open", node.lineno))
    return found


def test_every_file_writer_goes_through_the_gate():
    offenders = []
    for entry in CHECKED:
        paths = [ROOT / entry] if entry.endswith(".py") else sorted((ROOT / entry).rglob("*.py"))
        for path in paths:
            rel = str(path.relative_to(ROOT))
            for name, line in _writes(path):
                if (rel, name) not in ALLOWED:
                    offenders.append(f"logmine/{rel}:{line} {name}")
    assert not offenders, "write through logmine.redact.files (or review into ALLOWED): " + ", ".join(offenders)


def test_the_check_sees_a_direct_writer(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("from pathlib import Path\nPath('x').write_text('a')\nopen('y', 'w')\nwrite_text('z', 'ok')\n")
    assert [name for name, _ in _writes(path)] == ["write_text", "open"]
