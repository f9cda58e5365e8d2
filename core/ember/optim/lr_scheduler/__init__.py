"""Learning-rate schedulers, following ``torch.optim.lr_scheduler``.

``step()`` uses each scheduler's *chainable* form (the new lr derived from the group's current
lr), so several schedulers may act on one optimizer; ``step(epoch)`` (deprecated in PyTorch)
uses the closed form where one exists. Learning rates are Python floats.

The schedulers live in sibling modules by family (``_base``: the base class and the lambda
schedulers; ``_decay``: rule-based decay; ``_cyclic``: annealing and cycles; ``_composite``:
schedulers of schedulers; ``_plateau``: ReduceLROnPlateau) and are all re-exported here, where
they report their module as ``ember.optim.lr_scheduler`` (so pickles and reprs name this path).
"""
from ._base import (EPOCH_DEPRECATION_WARNING, LambdaLR, LRScheduler, MultiplicativeLR,
                    _format_param, _LRScheduler)
from ._composite import ChainedScheduler, SequentialLR
from ._cyclic import CosineAnnealingLR, CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from ._decay import (ConstantLR, ExponentialLR, LinearLR, MultiStepLR, PolynomialLR, StepLR)
from ._plateau import ReduceLROnPlateau

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR",
           "PolynomialLR", "LRScheduler"]

for _cls in (*(globals()[_n] for _n in __all__), _LRScheduler):
    _cls.__module__ = __name__
del _cls

_ = (EPOCH_DEPRECATION_WARNING, _format_param)  # re-exported for swa_utils and subclasses
