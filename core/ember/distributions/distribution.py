"""``Distribution``: the base class (``torch.distributions.Distribution``'s API)."""
from __future__ import annotations

import warnings
import ember

from .. import Size, Tensor
from . import constraints
from .utils import lazy_property
from .._warn import user_stacklevel

__all__ = ["Distribution"]


def _em():
    return ember


def _all_true(t):
    return bool(t.all())


class Distribution:
    """A probability distribution over tensors of shape ``batch_shape + event_shape``.

    Parameters are checked against ``arg_constraints`` when ``validate_args`` is on (the
    default, as in PyTorch under ``__debug__``; ``Distribution.set_default_validate_args``
    changes it), and values given to ``log_prob``/``cdf``/``icdf`` against ``support``.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              f"`arg_constraints = {{}}` or initialize the distribution with "
                              f"`validate_args=False` to turn off validation.",
                              stacklevel=user_stacklevel())
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue  # lazily-constructed arguments are not checked
                value = getattr(self, param)
                if not _all_true(constraint.check(value)):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of "
                                     f"shape {tuple(value.shape)}) of distribution "
                                     f"{self!r} to satisfy the constraint {constraint!r}, "
                                     f"but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()):
        with _em().no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError

    def _sample_with(self, sampler, sample_shape, *params):
        """The body of ``sample`` for a family that ember draws from directly: the random op
        ``sampler`` (``ember.poisson``...) on ``params`` expanded to the sample's shape, without
        recording a graph."""
        shape = tuple(self._extended_shape(sample_shape))
        with _em().no_grad():
            return sampler(*(p.expand(*shape) for p in params))

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=user_stacklevel())
        return self.sample(Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=Size()):
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = len(value.size()) - len(self._event_shape)
        if tuple(value.size()[start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual = value.size()
        expected = Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          f"validation. Please initialize the distribution with "
                          f"`validate_args=False` to turn off validation.",
                          stacklevel=user_stacklevel())
            return
        if not _all_true(support.check(value)):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) to be within the support ({support!r}) "
                             f"of the distribution {self!r}, but found invalid values:\n"
                             f"{value}")

    def _expand_params(self, cls, batch_shape, _instance, names, copied=()):
        """The common body of ``expand``: a ``cls`` instance (``cls`` the class defining
        ``expand``, whose ``__init__`` a subclass must share) whose tensor parameters ``names`` are this
        one's expanded to ``batch_shape`` (lazily computed twins such as probs/logits only when
        present, the present one becoming ``_param``), with ``copied`` attributes shared."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        for name in copied:
            setattr(new, name, getattr(self, name))
        for name in names:
            if name in self.__dict__:
                value = self.__dict__[name].expand(batch_shape)
                setattr(new, name, value)
                if name in ("probs", "logits") and "_param" in self.__dict__:
                    new._param = value
        return self._init_expanded(new, batch_shape)

    def _init_expanded(self, new, batch_shape):
        """The common tail of ``expand``: ``new``, its parameters already set, initialised with
        ``batch_shape`` and this event shape without checking them again, validating later
        input as this one does. (PyTorch's ``super(cls, new).__init__``: the one ``__init__``
        above every family's is this class's, and mixins such as LocationScale take the
        family's own arguments.)"""
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} "
                                      f"that defines a custom __init__ method must also define "
                                      f"a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in names)
        return self.__class__.__name__ + "(" + args + ")"
