"""Export stage: tasks → training data.

- ``export sft`` (:mod:`logmine.export.sft`): one chat example per task, messages + tools, and with a
  tokenizer the token-level form with ActObs weights (:mod:`~logmine.export.trajectory` builds the
  conversation, :mod:`~logmine.export.render` tokenizes and weights it);
- ``export tmax`` (:mod:`logmine.export.tmax`): RL rows with runnable task bundles
  (:mod:`~logmine.export.bundle`);
- ``export swe`` (:mod:`logmine.export.swe`): SWE-bench-style instances of the tasks verify graded by
  tests, each validated in the sandbox (:mod:`~logmine.export.swe_check`);
- ``export atif`` (:mod:`logmine.export.atif`): one Harbor ATIF trajectory per task, from the same
  conversation as ``export sft``.

Import from the modules: the package imports nothing, so one exporter does not pull in the others
(or transformers).
"""
