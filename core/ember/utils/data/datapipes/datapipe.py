"""``IterDataPipe`` and ``MapDataPipe``: composable datasets with functional registration.

A DataPipe is a Dataset built from another DataPipe: ``__iter__`` (iterable style) or
``__getitem__`` (map style) reads the source and applies one transformation. Classes registered
with ``@functional_datapipe("name")`` become a method ``.name(...)`` on every pipe of their style.

Iterable pipes follow torch's *single iterator per pipe* rule: starting a new iterator of a pipe
(its first ``next``) calls ``reset()`` and invalidates the pipe's older iterators, which then raise
instead of silently sharing state. Every ``__iter__`` defined on a subclass is wrapped once, when
the class is created, to do that bookkeeping; the wrapper also appends the pipe's name and
arguments to an exception raised inside it ("This exception is thrown by __iter__ of ...").
"""
from __future__ import annotations

import functools
import inspect
from abc import ABCMeta
from typing import Dict, Generic, TypeVar

from ..dataset import Dataset, IterableDataset

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

_SINGLE_ITERATOR_MSG = "single iterator per IterDataPipe constraint"
_THROWN_BY = "thrown by __iter__ of"


# -- how a pipe describes itself in messages --------------------------------------------------------
def _short_repr(value, limit=60):
    if isinstance(value, (IterDataPipe, MapDataPipe)):
        return type(value).__name__
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _describe(datapipe) -> str:
    """``MapperIterDataPipe(datapipe=..., fn=<function f>)``: the name and constructor arguments."""
    state = getattr(datapipe, "__dict__", {})
    args = ", ".join(f"{k}={_short_repr(v)}" for k, v in sorted(state.items())
                     if not k.startswith("_"))
    return f"{type(datapipe).__name__}({args})"


def _annotate(exc: BaseException, datapipe) -> None:
    """Name the innermost pipe an exception came through (once), as torch does."""
    args = exc.args
    note = f"\nThis exception is {_THROWN_BY} {_describe(datapipe)}"
    if not args or not isinstance(args[0], str):
        if isinstance(exc, OSError):
            return  # OSError prints errno/filename from its attributes; keep them readable
        exc.args = args + (note,) if args else (note,)
    elif _THROWN_BY not in args[0] and _SINGLE_ITERATOR_MSG not in args[0]:
        exc.args = (args[0] + note,) + args[1:]


def _invalid_iterator(datapipe):
    return RuntimeError(
        "This iterator has been invalidated because another iterator has been created from the "
        f"same IterDataPipe: {_describe(datapipe)}\nThis may be caused multiple references to the "
        "same IterDataPipe. We recommend using `.fork()` if that is necessary. "
        f"({_SINGLE_ITERATOR_MSG})")


# -- iterator bookkeeping -----------------------------------------------------------------------------
def _start_iteration(datapipe) -> int:
    """A new iterator of ``datapipe`` begins: give it the next id and reset the pipe."""
    starter = datapipe._start_child_iteration
    if starter is not None:
        return starter()
    current = datapipe._valid_iterator_id
    datapipe._valid_iterator_id = 0 if current is None else current + 1
    datapipe._number_of_samples_yielded = 0
    datapipe.reset()
    return datapipe._valid_iterator_id


def _guarded(datapipe, items, iterator_id=None):
    """Yield ``items``; before each further item, check no newer iterator took over.

    With ``iterator_id`` None, ``items`` is the pipe's own generator: the iteration starts
    (id, ``reset()``) at the first ``next()``, as in torch, and the generator is closed at the
    end. This runs once per item per pipe, so the common case is one attribute comparison.
    """
    own_generator = iterator_id is None
    if own_generator:
        iterator_id = _start_iteration(datapipe)
    child_check = datapipe._child_iterator_is_current
    try:
        if child_check is None:
            for item in items:
                yield item
                if datapipe._valid_iterator_id != iterator_id:
                    raise _invalid_iterator(datapipe)
        else:
            for item in items:
                yield item
                if not child_check(iterator_id):
                    raise _invalid_iterator(datapipe)
    except Exception as exc:
        _annotate(exc, datapipe)
        raise
    finally:
        if own_generator:
            items.close()


def _hook_iter(iter_fn):
    if inspect.isgeneratorfunction(iter_fn):
        @functools.wraps(iter_fn)
        def __iter__(self):
            return _guarded(self, iter_fn(self))
    else:
        @functools.wraps(iter_fn)
        def __iter__(self):
            result = iter_fn(self)
            if result is self:  # a pipe that is its own iterator (__next__)
                _start_iteration(self)
                return self
            return _guarded(self, result, _start_iteration(self))
    __iter__._ember_hooked = True
    return __iter__


class _DataPipeMeta(ABCMeta):
    """The metaclass of both styles (torch's name; isinstance checks use it)."""


class _IterDataPipeMeta(_DataPipeMeta):
    def __new__(mcls, name, bases, namespace, **kwargs):
        iter_fn = namespace.get("__iter__")
        if iter_fn is not None and not getattr(iter_fn, "_ember_hooked", False) \
                and not namespace.get("_ember_unhooked", False):
            namespace["__iter__"] = _hook_iter(iter_fn)
        return super().__new__(mcls, name, bases, namespace, **kwargs)


# -- the two styles ---------------------------------------------------------------------------------
class _FunctionalRegistry:
    """Shared by both styles: ``cls.functions`` and ``.name(...)`` lookup."""

    functions: Dict[str, functools.partial]
    getstate_hook = None
    reduce_ex_hook = None
    repr_hook = None
    str_hook = None

    def __getattr__(self, attribute_name):
        functions = type(self)._style().functions
        if attribute_name in functions:
            f = functions[attribute_name]
            bound = functools.partial(f, self)
            functools.update_wrapper(wrapper=bound, wrapped=f, assigned=("__doc__",))
            return bound
        raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                             f"'{attribute_name}'")

    def __dir__(self):
        return list(super().__dir__()) + list(type(self)._style().functions)

    @classmethod
    def register_function(cls, function_name, function):
        cls.functions[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register,
                                      enable_df_api_tracing=False):
        existing = cls.functions.get(function_name)
        if existing is not None:
            previous = _registered_class(existing.args[0])
            # Re-running a class definition (a notebook cell, an example that spells out a
            # built-in) replaces it; a different class may not take a name that is in use.
            if previous.__qualname__ != _registered_class(cls_to_register).__qualname__:
                raise Exception(f"Unable to add DataPipe function name {function_name} as it "
                                f"is already taken")
        function = functools.partial(_construct_from_functional, cls_to_register)
        functools.update_wrapper(wrapper=function, wrapped=cls_to_register, assigned=("__doc__",))
        cls.functions[function_name] = function

    @classmethod
    def set_getstate_hook(cls, hook_fn):
        if _style_base(cls).getstate_hook is not None and hook_fn is not None:
            raise RuntimeError("Attempt to override existing getstate_hook")
        _style_base(cls).getstate_hook = hook_fn

    @classmethod
    def set_reduce_ex_hook(cls, hook_fn):
        if _style_base(cls).reduce_ex_hook is not None and hook_fn is not None:
            raise RuntimeError("Attempt to override existing reduce_ex_hook")
        _style_base(cls).reduce_ex_hook = hook_fn

    def __getstate__(self):
        state = self.__dict__
        hook = _style_base(type(self)).getstate_hook
        return hook(state) if hook is not None else state

    def __reduce_ex__(self, *args, **kwargs):
        hook = _style_base(type(self)).reduce_ex_hook
        if hook is not None:
            try:
                return hook(self)
            except NotImplementedError:
                pass
        return super().__reduce_ex__(*args, **kwargs)

    def __repr__(self):
        hook = _style_base(type(self)).repr_hook
        return hook(self) if hook is not None else str(type(self).__qualname__)

    def __str__(self):
        hook = _style_base(type(self)).str_hook
        return hook(self) if hook is not None else str(type(self).__qualname__)


def _registered_class(registered):
    """The class behind a registration (``non_deterministic`` wraps classes)."""
    return getattr(registered, "cls", None) or getattr(registered, "deterministic_fn", registered)


def _construct_from_functional(cls, source_dp, *args, **kwargs):
    return cls(source_dp, *args, **kwargs)


def _style_base(cls):
    return IterDataPipe if issubclass(cls, IterDataPipe) else MapDataPipe


class IterDataPipe(_FunctionalRegistry, IterableDataset[T_co], metaclass=_IterDataPipeMeta):
    """Iterable-style DataPipe: subclasses define ``__iter__`` (and ``__len__`` if they can).

    Chain pipes with their functional names (``dp.map(fn).filter(pred).batch(8)``) or with the
    class constructors (``Batcher(Filter(Mapper(dp, fn), pred), 8)``). Use module-level
    functions rather than lambdas when the pipe goes to DataLoader workers started with
    ``spawn``/``forkserver``: those pickle the pipe.
    """

    functions: Dict[str, functools.partial] = {}
    _valid_iterator_id = None
    _number_of_samples_yielded = 0
    # children of fork/demux share their parent's iterator state through these two hooks
    _start_child_iteration = None
    _child_iterator_is_current = None

    @classmethod
    def _style(cls):
        return IterDataPipe

    def reset(self) -> None:
        """Called when a new iterator starts; pipes with per-iteration state clear it here."""


class MapDataPipe(_FunctionalRegistry, Dataset[T_co], metaclass=_DataPipeMeta):
    """Map-style DataPipe: subclasses define ``__getitem__`` and usually ``__len__``."""

    functions: Dict[str, functools.partial] = {}

    @classmethod
    def _style(cls):
        return MapDataPipe


class DataChunk(list, Generic[T]):
    """A batch made by ``batch``/``groupby``: a list that ``unbatch`` knows to open."""

    def __init__(self, items=()):
        super().__init__(items)
        self.items = items if isinstance(items, list) else list(self)  # torch's attribute

    def as_str(self, indent: str = "") -> str:
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def __iter__(self):
        yield from super().__iter__()

    def raw_iterator(self):
        yield from self
