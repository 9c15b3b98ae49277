"""Train stage: SFT with the ActObs loss (:mod:`.sft`) and multi-turn GRPO (:mod:`.grpo`).

Import from the modules: the package imports nothing, so reading a config does not import torch.
"""
