#!/usr/bin/env python3
"""Precision and recall of redaction on real Codex sessions, against labels kept in this repository.

Real sessions committed by accident to public repositories hold real code: i18n catalogues, login
forms, ``process.env`` lookups, test fixtures with passwords. Every value a rule replaces in them is
labelled in ``bench/redaction_labels.json`` (by the SHA-256 digest of the value as the log holds it,
never the value): ``secret``, or why it is not one (``code``, ``prose``, ``placeholder``, ``id``,
``not_secret``). This prints, with the rules as they are and with the precision rules of
context-based kinds switched off (``before``):

- findings (distinct values per file) by kind, and how many are labelled secret;
- precision overall and per kind, and how many findings are code or prose (the issue's target: none);
- recall per kind of the labelled secrets (those found by either run);
- findings with no label (label them: ``--dump`` writes, to a private file, each finding with its
  value and context).

    python bench/redaction.py --corpus DIR                  # DIR/sources.json, DIR/sessions/...
    python bench/redaction.py --fetch DIR                   # clone each source's repository, copy its file
    python bench/redaction.py --corpus DIR --dump /tmp/f.jsonl   # values in clear: never commit it

``sources.json`` lists ``{"file": "sessions/<owner__name>/<name>", "repo", "path", "commit",
"licence"}``; ``--fetch`` makes the corpus from it (``git`` and network access to github.com needed).
The labelled files whose licence allows it are also in ``tests/fixtures/redaction/`` (the lines that
hold a finding), where ``tests/redact/test_precision.py`` pins the floor.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import fetch  # noqa: E402

from logmine.redact import engine, patterns  # noqa: E402
from logmine.redact.engine import Redactor  # noqa: E402

LABELS = Path(__file__).with_name("redaction_labels.json")
SOURCES = Path(__file__).with_name("redaction_sources.json")
NOT_SECRET = ("code", "prose", "placeholder", "id", "not_secret")


class _Recording(Redactor):
    """A redactor that also keeps, for the private dump, each finding's value and context."""

    def __init__(self) -> None:
        super().__init__(findings=True)
        self.clear: dict[str, tuple[str, str]] = {}  # digest -> (value, context)

    def _replace(self, text, finds, counts):
        for s, e, *_ in finds:
            digest = hashlib.sha256(text[s:e].encode("utf-8", "surrogatepass")).hexdigest()[:12]
            self.clear.setdefault(digest, (text[s:e], text[max(0, s - 120):e + 60]))
        return super()._replace(text, finds, counts)


def findings_of(path: Path, precision: bool = True, clear: dict | None = None) -> dict[tuple[str, str], str]:
    """{(digest, kind): rule} of every value redaction replaces in the session file ``path``;
    ``precision`` False: with the context-based kinds' precision rules off. ``clear``: filled with
    digest -> (value, context) for the dump."""
    saved = engine.plausible, patterns.plausible
    if not precision:
        engine.plausible = patterns.plausible = lambda value, kind: True
    try:
        redactor = _Recording()
        lines = path.read_text(errors="replace").splitlines()
        if path.suffix == ".json":
            redactor.redact_json_line("\n".join(lines))
        else:
            redactor.redact_jsonl(lines)
    finally:
        engine.plausible, patterns.plausible = saved
    if clear is not None:
        for finding in redactor.findings:
            value, context = redactor.clear[finding.digest]
            clear.setdefault(finding.digest, (value, context, finding.kind, finding.rule))
    return {(f.digest, f.kind): f.rule for f in redactor.findings}


def measure(corpus: Path, labels: dict, dump: Path | None = None) -> dict:
    """The figures over every file of ``corpus/sources.json`` (or of ``corpus/sessions`` when absent)."""
    files = _files(corpus)
    runs = {"after": defaultdict(dict), "before": defaultdict(dict)}
    clear: dict[str, dict] = {}
    for rel in files:
        file_clear: dict = {}
        runs["after"][rel] = findings_of(corpus / rel, True, file_clear if dump else None)
        runs["before"][rel] = findings_of(corpus / rel, False, file_clear if dump else None)
        if dump:
            clear[rel] = file_clear
    if dump:
        _dump(dump, clear, labels, runs)
    return {name: _score(found, labels) for name, found in runs.items()} | {"files": len(files)}


def _files(corpus: Path) -> list[str]:
    listed = corpus / "sources.json"
    if listed.exists():
        return [s["file"] for s in json.loads(listed.read_text()) if (corpus / s["file"]).exists()]
    return sorted(str(p.relative_to(corpus)) for p in (corpus / "sessions").rglob("*") if p.is_file())


def _key(rel: str) -> str:
    """A file's name in the labels: ``owner__name/file`` (the corpus directory may be anywhere)."""
    return "/".join(Path(rel).parts[-2:])


def _score(found: dict, labels: dict) -> dict:
    by_kind: dict[str, Counter] = defaultdict(Counter)
    unlabelled = []
    for rel, items in found.items():
        file_labels = labels.get(_key(rel), {})
        for digest, kind in items:
            label = file_labels.get(digest, {}).get("label")
            by_kind[kind]["findings"] += 1
            if label is None:
                unlabelled.append(f"{_key(rel)} {digest} {kind}")
            else:
                by_kind[kind][label] += 1
    secrets = {(_key(rel), d): v["kind"] for rel in found for d, v in labels.get(_key(rel), {}).items()
               if v["label"] == "secret"}
    hit = {(_key(rel), d) for rel, items in found.items() for d, _ in items}
    recall: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for key, kind in secrets.items():
        recall[kind][1] += 1
        recall[kind][0] += key in hit
    total = sum(by_kind.values(), Counter())
    labelled = total["findings"] - len(unlabelled)
    return {
        "findings": total["findings"], "secret": total["secret"], "unlabelled": unlabelled,
        "code_or_prose": total["code"] + total["prose"],
        "precision": round(total["secret"] / labelled, 3) if labelled else None,
        "by_kind": {k: dict(c) for k, c in sorted(by_kind.items())},
        "recall": {k: f"{a}/{b}" for k, (a, b) in sorted(recall.items())},
    }


def _dump(path: Path, clear: dict, labels: dict, runs: dict) -> None:
    with path.open("w") as out:
        for rel, values in clear.items():
            after = {d for d, _ in runs["after"][rel]}
            for digest, (value, context, kind, rule) in values.items():
                label = labels.get(_key(rel), {}).get(digest, {}).get("label")
                out.write(json.dumps({"file": _key(rel), "digest": digest, "kind": kind, "rule": rule,
                                      "after": digest in after, "label": label, "value": value,
                                      "context": context}) + "\n")
    print(f"findings with their values (private; never commit): {path}")


def _print(figures: dict) -> None:
    print(f"files: {figures['files']}")
    for name in ("before", "after"):
        f = figures[name]
        print(f"\n== {name}{' (precision rules of context-based kinds off)' if name == 'before' else ''}")
        print(f"findings {f['findings']}, labelled secret {f['secret']}, code or prose {f['code_or_prose']}, "
              f"precision {f['precision']}, unlabelled {len(f['unlabelled'])}")
        print(f"{'kind':28} {'findings':>8} {'secret':>7} {'code':>5} {'prose':>6} {'placeh.':>7} {'id':>4} {'other':>6}")
        for kind, c in f["by_kind"].items():
            print(f"{kind:28} {c.get('findings', 0):>8} {c.get('secret', 0):>7} {c.get('code', 0):>5} "
                  f"{c.get('prose', 0):>6} {c.get('placeholder', 0):>7} {c.get('id', 0):>4} {c.get('not_secret', 0):>6}")
        print("recall of labelled secrets by kind: " + (", ".join(f"{k} {v}" for k, v in f["recall"].items()) or "-"))
        for line in f["unlabelled"][:20]:
            print(f"  unlabelled: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="DIR with sources.json and sessions/")
    parser.add_argument("--fetch", type=Path, help="make the corpus in DIR from bench/redaction_sources.json")
    parser.add_argument("--dump", type=Path, help="write each finding with its value (private)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.fetch:
        fetch(json.loads(SOURCES.read_text()), args.fetch)
        return
    if not args.corpus:
        parser.error("--corpus or --fetch")
    labels = json.loads(LABELS.read_text()) if LABELS.exists() else {}
    figures = measure(args.corpus, labels, args.dump)
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        _print(figures)


if __name__ == "__main__":
    main()
