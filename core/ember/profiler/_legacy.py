"""PyTorch's legacy profiler API (``torch.autograd.profiler``), re-exported by
``ember.autograd.profiler``; ``ember.profiler.profile`` runs one of these per active window.

``with profile() as prof: ...`` records every dispatched op on the entering thread and on
threads running tasks it forks (``ember.jit.fork``), ``record_function`` ranges and the backward
nodes; afterwards ``prof.key_averages().table(...)``, ``prof.export_chrome_trace(path)`` and
``prof.export_stacks(path)``. ``use_device="opencl"`` (or another backend whose kernels can be
timed) adds the device's kernel times. The recording machinery is ``_record``.
"""
from __future__ import annotations

import functools

from . import _record
from ._events import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


class profile:
    """Context manager recording ops while active (PyTorch's ``torch.autograd.profiler
    .profile``). Only one profiler may run at a time."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        if use_cuda:
            use_device = use_device or "cuda"
        self.use_device = use_device
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self._session = None
        self._events = None
        self.entered = False
        # backends whose kernels are timed (ember.profiler.profile asks for all of them)
        self._device_types = () if use_device is None else (use_device,)

    def _start(self):
        self._session = _record.Session(record_shapes=self.record_shapes,
                                        profile_memory=self.profile_memory,
                                        with_stack=self.with_stack, with_flops=self.with_flops,
                                        device_types=self._device_types)
        self._events = None
        self._session.start()

    def _stop(self):
        self._session.stop()
        self._events = events_of(self._session, self.use_device, self.profile_memory,
                                 self.with_flops)

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._stop()
        return False

    # -- results ----------------------------------------------------------------------------------
    def _check_finished(self):
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running")

    @property
    def function_events(self):
        self._check_finished()
        return self._events

    def events(self):
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        self._check_finished()
        return self._events.key_averages(group_by_input_shape, group_by_stack_n,
                                         group_by_overload_name)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        self._check_finished()
        return self._events.table(sort_by=sort_by, row_limit=row_limit,
                                  max_src_column_width=max_src_column_width,
                                  max_name_column_width=max_name_column_width,
                                  max_shapes_column_width=max_shapes_column_width, header=header,
                                  top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path):
        self._check_finished()
        return self._events.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        self._check_finished()
        if not self.with_stack:
            raise RuntimeError("export_stacks() needs the profiler to run with with_stack=True")
        return self._events.export_stacks(path, metric)

    def total_average(self):
        self._check_finished()
        return self._events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finished()
        return self._events.self_cpu_time_total

    def __str__(self):
        return self.table() if self._events is not None else "<unfinished profiler>"


def events_of(session, use_device, profile_memory, with_flops) -> EventList:
    """The session's records as FunctionEvents (start order), parents and children linked."""
    perf0, wall0_us = session.perf0, session.wall0 / 1e3
    recs = sorted(session.records + session.kernel_records, key=lambda r: (r.start, -r.end))
    events = [FunctionEvent(r, perf0, wall0_us) for r in recs]
    by_id = {e.id: e for e in events}
    for r, e in zip(recs, events):
        if r.kind != "kernel" and r.parent is not None and r.parent.id in by_id:
            parent = by_id[r.parent.id]
            e.cpu_parent = parent
            parent.cpu_children.append(e)
    if use_device is None and session.kernel_records:
        use_device = session.kernel_records[0].device.type
    return EventList(events, use_device=use_device, profile_memory=profile_memory,
                     with_flops=with_flops,
                     trace={"thread_names": dict(session.thread_names),
                            "base_ns": session.wall0})


class record_function:
    """A named range in the profile (context manager and decorator); free when nothing is
    being profiled."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._range = None

    def __enter__(self):
        self._range = _record.UserRange(self.name)
        self._range.enter()
        return self

    def __exit__(self, *exc):
        self._range.exit()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper

