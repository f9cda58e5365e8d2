"""``ember.jit``: the parts of ``torch.jit`` eager programs use.

``fork(fn, *args, **kwargs)`` runs ``fn`` (a function, method or Module) as a task on the
inter-op thread pool and returns an ``ember.futures.Future``; ``wait(future)`` returns its value
or raises the exception the task raised. Tasks see the forking thread's grad mode, inference
mode, anomaly mode and dispatch keys (a running profiler records them on their own thread);
autograd works through forked work. Unlike PyTorch's eager ``fork`` (which runs the function
immediately), the task really runs in parallel: numpy and pyopencl release the GIL in their
kernels.

ember has no TorchScript compiler: ``script`` and ``trace`` return what they are given (the
code then runs eagerly, exactly as written), so scripted programs run unchanged.
"""
from __future__ import annotations

from ..futures import Future
from ..profiler import _record
from . import _interop

__all__ = ["fork", "wait", "Future", "script", "trace", "ignore", "unused", "export",
           "is_scripting", "is_tracing", "annotate"]


def fork(func, *args, **kwargs) -> Future:
    """Run ``func(*args, **kwargs)`` asynchronously on the inter-op pool; a Future of its
    result."""
    if not callable(func):
        raise TypeError(f"fork(): expected a callable, got {type(func).__name__}")
    fut = Future()
    task = _interop.Task(func, args, kwargs, fut)
    fut._task = task
    _interop.submit(task)
    return fut


def wait(future):
    """The value of a forked task's future (its exception is raised here)."""
    if not isinstance(future, Future):
        raise TypeError(f"wait(): expected an ember.futures.Future, got "
                        f"{type(future).__name__}")
    span = _record.UserRange("ember::jit::wait")
    span.enter()
    try:
        return future.wait()
    finally:
        span.exit()


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Identity: ember has no TorchScript compiler, so ``script(fn_or_module)`` returns its
    argument unchanged and the code runs eagerly (``fork``/``wait`` inside it run in
    parallel all the same)."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """Identity: ember does not trace to TorchScript; ``trace(fn_or_module, inputs)`` returns
    ``fn_or_module`` unchanged, which then runs eagerly."""
    return func


def ignore(drop=False, **kwargs):
    """Decorator accepted for TorchScript compatibility; returns the function unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """Decorator accepted for TorchScript compatibility; returns the function unchanged."""
    return fn


def export(fn):
    """Decorator accepted for TorchScript compatibility; returns the function unchanged."""
    return fn


def is_scripting() -> bool:
    """Always False: ember code never runs under the TorchScript compiler."""
    return False


def is_tracing() -> bool:
    """Always False: ember code is never traced."""
    return False


def annotate(the_type, the_value):
    """TorchScript's type hint for a value; returns the value."""
    return the_value
