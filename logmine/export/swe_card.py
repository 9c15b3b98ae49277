"""The dataset card (``README.md``) of ``logmine export swe``: what the instances are, how they were
validated, and how SWE-bench-style trainers (SWE-Gym, SkyRL) consume them."""

from __future__ import annotations

from pathlib import Path

from logmine.redact import Redactor, write_text


def card(path: Path, rows: list[dict], images: dict[str, bool], redactor: Redactor) -> None:
    """Write the card for ``rows`` (the instances written) to ``path``, through the redaction gate."""
    based = sum(r["base_commit"] is not None for r in rows)
    repos = sorted({r["repo"] for r in rows})
    if images:
        setup = ("`environment_setup` names the image built for each instance's environment "
                 f"({', '.join(f'`{t}`' for t in sorted(images))}): start a container of it and put the "
                 "repository at `/workspace`.")
    else:
        setup = ("`environment_setup` is the instance's install recipe as a Dockerfile (base image, install "
                 "steps, the repository copied to `/workspace`): build it once per instance, or export with "
                 "`--build-images` to have the image built and named instead.")
    write_text(path, _CARD.format(n=len(rows), based=based, tarballs=len(rows) - based,
                                  repos=", ".join(f"`{r}`" for r in repos) or "none", setup=setup), redactor)


_CARD = """---
tags: [logmine, swe-bench, software-engineering, rl]
configs:
- config_name: default
  data_files:
  - split: test
    path: data/test-*.parquet
---
# logmine SWE-bench-style instances

{n} task instances mined from Codex CLI sessions ({repos}), with SWE-bench's columns: `instance_id`,
`repo`, `base_commit`, `problem_statement`, `patch` (the reference solution), `test_patch` (the
tests the task added or changed), `FAIL_TO_PASS` and `PASS_TO_PASS` (JSON-encoded lists of test ids),
`hints_text` (empty), `created_at`; and `environment_setup`, `test_cmd`, `start_state`, `task_id`,
`session_id`, `source`.

- Start state: {based} instances name a `base_commit` (the start state is exactly that commit of the
  repository); the other {tarballs} carry it as `start_state` = `start_states/<instance_id>.tar.gz` (the
  repository's files at the top level), because the session started from uncommitted work or from a
  directory that is not a git repository.
- Validation: every instance was run the SWE-bench way before it was written, in a sandbox without
  network: on the start state with `test_patch` applied, each FAIL_TO_PASS test failed (or was absent)
  and each PASS_TO_PASS test passed; with `patch` applied too, all of them passed.
- Tests: `test_cmd` runs from the repository root (`$WORKSPACE` stands for it); test ids are the
  runner's own (pytest node ids, unittest's `module.Class.test`), read from the runner's report.
- Environment: {setup}
- Redaction: problem statements, patches and start states went through the same secret redaction as
  the logs, with the same pseudonyms; credential files were left out of the start states.

## Using it

```python
from datasets import load_dataset
instances = load_dataset("parquet", data_files="data/test-00000-of-00001.parquet")["train"]
# or load_dataset("<this directory>")["test"]
```

- **SWE-Gym / SkyRL-style trainers** read the same columns as SWE-bench: the problem statement is the
  prompt, the agent works in the repository at `base_commit`, and the reward is 1 when, after the
  agent's changes plus `test_patch`, every FAIL_TO_PASS and PASS_TO_PASS test passes. For each
  instance: build its environment (`environment_setup`), check out `repo` at `base_commit` into the
  working directory (or, when `start_state` is set, extract that tarball there), let the agent work,
  then apply `test_patch` (`git apply`), run `test_cmd` and grade by test id.
- **The SWE-bench harness** keys its environment specs and log parsers by repository and `version`,
  which these repositories do not have: run the instances with the steps above (logmine's `export tmax`
  bundles carry a ready grader for the same tests), or add a spec per repository.
"""
