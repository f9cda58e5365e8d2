"""``ember.profiler``: what ran, where the time went, on which thread — PyTorch's profiler API.

* ``profile(activities=, schedule=, on_trace_ready=, record_shapes=, profile_memory=,
  with_stack=, with_flops=)`` (``profiler.py``) and ``ember.autograd.profiler.profile``
  (``_legacy.py``) record sessions;
* ``_record.py`` records: the dispatcher's PYTHON key handler (every dispatched op, nested
  under the op that dispatched it), ``record_function`` ranges, autograd nodes, backend kernel
  timings; off, it costs nothing (the key is in no key set);
* ``_events.py`` turns records into ``FunctionEvent``s: ``key_averages().table()`` with
  PyTorch's columns, ``export_chrome_trace`` (one row per thread, kernels on device rows),
  ``export_stacks``;
* ``_ops.py`` is ``ember.ops.profiler`` (``torch.ops.profiler._record_function_enter`` & co.).
"""
from ._legacy import record_function
from . import _ops
from .. import library as _library
from .profiler import (ProfilerAction, ProfilerActivity, profile, schedule,
                       supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "record_function", "schedule", "ProfilerAction", "ProfilerActivity",
           "tensorboard_trace_handler", "supported_activities"]

_library.provide_namespace("profiler", _ops.namespace)
