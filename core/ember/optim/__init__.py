"""``ember.optim``: PyTorch's optimizers, learning-rate schedulers and weight averaging
(``swa_utils``).

Optimizers take an iterable of tensors (or of dicts: parameter groups) and update them in place
with ember ops on the parameters' own device; hyper-parameters (lr, betas, …) are Python numbers.
"""
from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import (Optimizer, register_optimizer_step_post_hook,
                        register_optimizer_step_pre_hook, required)
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "Adamax", "ASGD",
           "LBFGS", "NAdam", "RAdam", "RMSprop", "Rprop", "SparseAdam", "Adafactor", "Muon",
           "lr_scheduler",
           "swa_utils", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]
