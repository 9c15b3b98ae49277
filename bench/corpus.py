"""Corpora of real Codex sessions for the bench scripts, made from a list of sources.

A source is ``{"file": "sessions/owner__name/FILE", "repo": "owner/name", "path": PATH, "commit": SHA}``:
the session file ``PATH`` of GitHub's ``owner/name`` as it was at ``SHA``, copied to ``corpus/FILE``.
``bench/redaction_sources.json`` and ``bench/real_yield_sources.json`` are such lists. ``git`` and
network access to github.com are needed.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path


def fetch(sources: list[dict], corpus: Path, clones: bool = False) -> None:
    """Copy every source's file into ``corpus``; with ``clones``, keep a fresh ``git clone`` of each
    repository (default branch, nothing installed) in ``corpus/clones/owner__name`` as well, as
    ``bench/real_yield.py`` wants. Without, the clones hold no blobs until read and are thrown away."""
    corpus.mkdir(parents=True, exist_ok=True)
    (corpus / "sources.json").write_text(json.dumps(sources, indent=1))
    with tempfile.TemporaryDirectory() as tmp:
        for repo in sorted({s["repo"] for s in sources}):
            clone = (corpus / "clones" if clones else Path(tmp)) / repo.replace("/", "__")
            how = [] if clones else ["--filter=blob:none", "--no-checkout"]
            if not (clone / ".git").is_dir():
                done = subprocess.run(["git", "clone", "-q", *how, f"https://github.com/{repo}", str(clone)],
                                      capture_output=True, text=True)
                if done.returncode:
                    print(f"{repo}: clone failed: {done.stderr.strip()[:200]}")
                    continue
            for s in (s for s in sources if s["repo"] == repo):
                blob = subprocess.run(["git", "-C", str(clone), "show", f"{s['commit']}:{s['path']}"], capture_output=True)
                if blob.returncode:
                    print(f"{repo}: {s['path']} not at {s['commit'][:12]}")
                    continue
                (corpus / s["file"]).parent.mkdir(parents=True, exist_ok=True)
                (corpus / s["file"]).write_bytes(blob.stdout)
    print(f"corpus: {corpus}")
