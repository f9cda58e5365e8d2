"""``ember.optim``: PyTorch's optimizers and learning-rate schedulers.

Optimizers take an iterable of tensors (or of dicts: parameter groups) and update them in place
with ember ops on the parameters' own device; hyper-parameters (lr, betas, …) are Python numbers.
"""
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import (Optimizer, register_optimizer_step_post_hook,
                        register_optimizer_step_pre_hook, required)
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler",
           "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]
