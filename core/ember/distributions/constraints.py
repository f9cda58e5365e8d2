"""Constraints: the regions a distribution's parameters and samples live in
(``torch.distributions.constraints``). ``check(value)`` returns a bool tensor over the batch
(``event_dim`` rightmost dims are reduced); ``biject_to``/``transform_to``
(``constraint_registry``) map unconstrained space onto each of them."""
from __future__ import annotations

import ember

from .utils import _cat_lengths, finfo

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property",
           "greater_than", "greater_than_eq", "independent", "integer_interval", "interval",
           "half_open_interval", "is_dependent", "less_than", "lower_cholesky",
           "lower_triangular", "MixtureSameFamilyConstraint", "multinomial", "nonnegative",
           "nonnegative_integer", "one_hot", "positive", "positive_semidefinite",
           "positive_definite", "positive_integer", "real", "real_vector", "simplex", "square",
           "stack", "symmetric", "unit_interval"]


def _ember():
    return ember


def _all_last(t, k):
    """``t`` with its last ``k`` dims reduced by ``all``."""
    if k == 0:
        return t
    return t.reshape(tuple(t.shape[:t.dim() - k]) + (-1,)).all(-1)


class Constraint:
    """A region of values. ``is_discrete``: whether it is discrete; ``event_dim``: how many
    rightmost dims make one event (``check`` reduces them)."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for values whose support depends on other values (no coordinate-wise
    check); ``is_discrete``/``event_dim`` may be given when they are known statically."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """Whether ``constraint`` is a ``_Dependent`` placeholder."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property on instances that is a ``dependent`` constraint on the class (a
    distribution's ``support`` that depends on its parameters)."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _OnBase(Constraint):
    """A constraint built on ``base_constraint`` (which must be one), discrete when it is."""

    def __init__(self, base_constraint):
        if not isinstance(base_constraint, Constraint):
            raise AssertionError(f"base_constraint must be a Constraint, got "
                                 f"{type(base_constraint).__name__}")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete


class _IndependentConstraint(_OnBase):
    """``base_constraint`` with ``reinterpreted_batch_ndims`` more dims reduced in
    ``check``."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        super().__init__(base_constraint)
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise AssertionError(f"reinterpreted_batch_ndims must be an int >= 0, got "
                                 f"{reinterpreted_batch_ndims!r}")
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        return _all_last(result, self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}({self.base_constraint!r}, " \
               f"{self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(_OnBase):
    """The component distribution's constraint, checked with the mixture dim put back."""

    @property
    def event_dim(self):
        return self.base_constraint.event_dim

    def check(self, value):
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        keep = value.dim() - self.event_dim
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_constraint!r})"


class _Bounded(Constraint):
    """A constraint with bounds, shown in its repr (``_bounds``: their attribute names)."""

    _bounds = ()

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)}" for name in self._bounds)
        return f"{self.__class__.__name__[1:]}({fields})"


class _LowerBounded(_Bounded):
    _bounds = ("lower_bound",)

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()


class _UpperBounded(_Bounded):
    _bounds = ("upper_bound",)

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()


class _TwoSided(_Bounded):
    _bounds = ("lower_bound", "upper_bound")

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return value.eq(0) | value.eq(1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = value.eq(0) | value.eq(1)
        return is_boolean.all(-1) & value.sum(-1).eq(1)


def _whole(value, bounded):
    """``bounded`` where ``value`` holds whole numbers: an integer tensor needs no ``% 1`` test
    (it would hold everywhere, at two ops a call on the sampling path)."""
    if value.dtype.is_floating_point or value.is_complex() or value.dtype is ember.bool:
        return (value % 1).eq(0) & bounded
    return bounded


class _IntegerInterval(_TwoSided):
    is_discrete = True

    def check(self, value):
        return _whole(value, (value >= self.lower_bound) & (value <= self.upper_bound))


class _IntegerLessThan(_UpperBounded):
    is_discrete = True

    def check(self, value):
        return _whole(value, value <= self.upper_bound)


class _IntegerGreaterThan(_LowerBounded):
    is_discrete = True

    def check(self, value):
        return _whole(value, value >= self.lower_bound)


class _Real(Constraint):
    def check(self, value):
        return value.eq(value)  # False for NaN


class _GreaterThan(_LowerBounded):
    def check(self, value):
        return value > self.lower_bound


class _GreaterThanEq(_LowerBounded):
    def check(self, value):
        return value >= self.lower_bound


class _LessThan(_UpperBounded):
    def check(self, value):
        return value < self.upper_bound


class _Interval(_TwoSided):
    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)


class _HalfOpenInterval(_TwoSided):
    def check(self, value):
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & (value.sum(-1) - 1).abs().lt(1e-6)


class _Multinomial(Constraint):
    """Nonnegative counts summing to at most ``upper_bound`` (PyTorch's weaker check)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return _all_last(value.tril().eq(value), 2)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        lower = _all_last(value.tril().eq(value), 2)
        return lower & value.diagonal(0, -2, -1).gt(0).all(-1)


class _CorrCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        tol = finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = (value.detach() * value.detach()).sum(-1).sqrt()
        unit = (row_norm - 1.0).abs().le(tol).all(-1)
        return _LowerCholesky().check(value) & unit


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        return _ember().full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1],
                             dtype=_ember().bool, device=value.device)


class _Symmetric(_Square):
    def check(self, value):
        square = super().check(value)
        if not bool(square.all()):
            return square
        d = (value - value.mT).abs()
        return d.le(1e-6 + 1e-5 * value.mT.abs()).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return _ember().linalg.eigvalsh(value).ge(0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return _ember().linalg.cholesky_ex(value).info.eq(0)


class _OnSlices(Constraint):
    """Constraints ``cseq`` (which must all be constraints) applied to slices along ``dim``;
    discrete when any of them is."""

    def __init__(self, cseq, dim=0):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)


class _Cat(_OnSlices):
    """Constraints ``cseq`` applied to consecutive slices of lengths ``lengths`` along
    ``dim``."""

    def __init__(self, cseq, dim=0, lengths=None):
        super().__init__(cseq, dim)
        self.lengths = _cat_lengths(lengths, self.cseq, "cseq")

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return _ember().cat(checks, self.dim)


class _Stack(_OnSlices):
    """Constraints ``cseq`` applied to the slices along ``dim``."""

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value):
        vs = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return _ember().stack([c.check(v) for v, c in zip(vs, self.cseq)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
