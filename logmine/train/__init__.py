"""Train stage: SFT with the ActObs loss on the token-level export (``logmine export sft``).

Names are loaded lazily (:mod:`logmine.lazy`), so importing the package does not import torch.
"""

from logmine.lazy import lazy_exports

_EXPORTS = {
    "ConfigError": "logmine.train.config",
    "SftTrainConfig": "logmine.train.config",
    "load_config": "logmine.train.config",
    "TrainError": "logmine.train.sft",
    "TrainSummary": "logmine.train.sft",
    "train_sft": "logmine.train.sft",
    "actobs_loss": "logmine.train.loss",
    "init_model": "logmine.train.tiny",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
