"""Export stage: tasks → training data.

- ``export sft`` (:mod:`logmine.export.sft`): one chat example per task, messages + tools, and with a
  tokenizer the token-level form with ActObs weights (:mod:`~logmine.export.trajectory` builds the
  conversation, :mod:`~logmine.export.render` tokenizes and weights it);
- ``export tmax`` (:mod:`logmine.export.tmax`): RL rows with runnable task bundles.

Names are loaded lazily so that importing one exporter does not import the others (or transformers).
"""

from logmine.lazy import lazy_exports

_EXPORTS = {
    "SftExportConfig": "logmine.export.sft", "SftExportSummary": "logmine.export.sft",
    "SftExportError": "logmine.export.sft", "export_sft": "logmine.export.sft",
    "Trajectory": "logmine.export.trajectory", "TrajectoryOptions": "logmine.export.trajectory",
    "build_trajectory": "logmine.export.trajectory", "format_observation": "logmine.export.trajectory",
    "CANONICAL_TOOLS": "logmine.export.trajectory",
    "Renderer": "logmine.export.render", "TokenizedExample": "logmine.export.render",
    "TmaxExportConfig": "logmine.export.tmax", "TmaxExportSummary": "logmine.export.tmax",
    "ExportError": "logmine.export.tmax", "export_tmax": "logmine.export.tmax",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
