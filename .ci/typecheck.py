"""Type check of ``logmine/`` with mypy against a baseline that may only shrink.

mypy reports errors per file; ``.ci/mypy-baseline.json`` holds how many each file had when the check
was introduced (or last shrunk). The check fails when a file has more errors than its baseline (a
file not listed has a baseline of 0, so new modules start clean), and says which baseline entries can
be lowered. ``--update`` rewrites the baseline from this run: only after fixing errors, never to
admit new ones.

    python .ci/typecheck.py [--update]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".ci" / "mypy-baseline.json"
ERROR = re.compile(r"^(?P<file>[^:\s]+\.py):\d+: error: ")


def main() -> int:
    done = subprocess.run([sys.executable, "-m", "mypy", "logmine"], cwd=ROOT, capture_output=True, text=True)
    lines = done.stdout.splitlines()
    errors = [line for line in lines if ERROR.match(line)]
    if done.returncode not in (0, 1) or (done.returncode == 1 and not errors):
        print(done.stdout[-3000:] + done.stderr[-3000:])
        print("typecheck: mypy did not run")
        return 2
    counts = Counter(ERROR.match(line)["file"] for line in errors)
    if "--update" in sys.argv[1:]:
        BASELINE.write_text(json.dumps(dict(sorted(counts.items())), indent=1) + "\n")
        print(f"typecheck: baseline written, {sum(counts.values())} error(s) in {len(counts)} file(s)")
        return 0
    baseline: dict[str, int] = json.loads(BASELINE.read_text())
    worse = sorted(f for f, n in counts.items() if n > baseline.get(f, 0))
    better = sorted(f for f, n in baseline.items() if counts.get(f, 0) < n)
    for name in worse:
        print(f"{name}: {counts[name]} error(s), baseline {baseline.get(name, 0)}")
        print("\n".join(f"  {line}" for line in errors if line.startswith(name + ":")))
    if better:
        print(f"typecheck: fewer errors than the baseline in {len(better)} file(s) ({', '.join(better[:5])}): "
              "lower it with `python .ci/typecheck.py --update`")
    print(f"typecheck: {sum(counts.values())} error(s), baseline {sum(baseline.values())}")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
