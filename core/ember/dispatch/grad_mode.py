"""Grad modes: thread-local switches that take the Autograd key out of dispatch (public as
``ember.autograd.grad_mode``).

Turning grad mode off clears the ``AUTOGRAD`` bit of the thread's ``keep`` mask, so an op on a
tensor that requires grad resolves straight to the backend (the same cached handler as for a
plain tensor): no-grad code pays nothing for autograd. Each class works as a context manager and
as a decorator, like PyTorch's.
"""
from __future__ import annotations

import functools
import inspect

from ..dispatch import keys as _keys

_AG = _keys.AUTOGRAD


def is_grad_enabled() -> bool:
    return _keys.state.grad_enabled


def is_inference_mode_enabled() -> bool:
    return _keys.state.inference_mode


def _set_enabled(st, on: bool) -> None:
    st.grad_enabled = on
    include, keep = st.masks
    st.masks = (include, (keep | _AG) if on else (keep & ~_AG))


def _save(st):
    return st.grad_enabled, st.masks[1] & _AG


def _restore(st, saved) -> None:
    # restore the exact bit: an enclosing redispatch may have excluded Autograd on its own
    st.grad_enabled = saved[0]
    include, keep = st.masks
    st.masks = (include, (keep & ~_AG) | saved[1])


class _Mode:
    """Base: a context manager that is also a decorator (sync functions and generators)."""

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} can't decorate a class")
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._clone():
                return fn(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, fn):
        # the mode must hold while the generator body runs, not around the generator's creation
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self._clone():
                    request = gen.send(None)
                while True:
                    try:
                        response = yield request
                    except GeneratorExit:
                        with self._clone():
                            gen.close()
                        raise
                    except BaseException as e:
                        with self._clone():
                            request = gen.throw(e)
                    else:
                        with self._clone():
                            request = gen.send(response)
            except StopIteration as e:
                return e.value
        return wrapper

    def _clone(self):
        return type(self)()


class _SetsGradMode(_Mode):
    """A region whose grad mode is ``_grad_enabled``; the previous mode comes back on exit."""
    _grad_enabled = None

    def __enter__(self):
        st = _keys.state
        self._prev = _save(st)
        _set_enabled(st, self._grad_enabled)

    def __exit__(self, *exc):
        _restore(_keys.state, self._prev)


class _NoParamMode(_SetsGradMode):
    """``@no_grad`` works with and without parentheses (PyTorch 2's decorators)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments")
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        self._prev = None


class no_grad(_NoParamMode):
    """Ops inside record nothing: results don't require grad."""
    _grad_enabled = False


class enable_grad(_NoParamMode):
    """Turn grad mode back on inside a ``no_grad`` region."""
    _grad_enabled = True


class set_grad_enabled(_Mode):
    """``set_grad_enabled(False)`` as a function call sets the mode for the thread right away;
    as a context manager or decorator it is restored on exit (PyTorch's semantics)."""

    def __init__(self, mode: bool):
        st = _keys.state
        self._prev = _save(st)
        self.mode = bool(mode)
        _set_enabled(st, self.mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _restore(_keys.state, self._prev)

    def _clone(self):
        return _Scoped(self.mode)

    def __call__(self, fn):
        # used as a decorator: undo the eager switch made by __init__
        _restore(_keys.state, self._prev)
        return super().__call__(fn)


class _Scoped(_SetsGradMode):
    """set_grad_enabled's scoped twin, used when it decorates a function."""

    def __init__(self, mode):
        self._grad_enabled = mode
        self._prev = None

    def _clone(self):
        return _Scoped(self._grad_enabled)


class inference_mode(_Mode):
    """``no_grad`` that also reports ``is_inference_mode_enabled()``; ``inference_mode(False)``
    is a no-op region (PyTorch's)."""

    def __new__(cls, mode=True):
        if callable(mode):  # @inference_mode without parentheses
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self._prev = None

    def __enter__(self):
        st = _keys.state
        self._prev = (_save(st), st.inference_mode, st.masks[0] & _keys.INFERENCE)
        if self.mode:
            _set_enabled(st, False)
            st.inference_mode = True
            st.masks = (st.masks[0] | _keys.INFERENCE, st.masks[1])
        else:
            st.inference_mode = False
            st.masks = (st.masks[0] & ~_keys.INFERENCE, st.masks[1])

    def __exit__(self, *exc):
        st = _keys.state
        _restore(st, self._prev[0])
        st.inference_mode = self._prev[1]
        st.masks = ((st.masks[0] & ~_keys.INFERENCE) | self._prev[2], st.masks[1])

    def _clone(self):
        return inference_mode(self.mode)
