"""``ember.profiler.profile``: PyTorch's ``torch.profiler`` API over ember's recorder.

``activities`` chooses what is recorded: ``ProfilerActivity.CPU`` (host ops) and any device
activity (``CUDA``, ``XPU``, ``MTIA``, ``HPU``, ``PrivateUse1``: ember maps them all to "the
kernels of every loaded backend that can time them", the OpenCL backend through its profiling
queues). ``schedule(wait=, warmup=, active=, repeat=, skip_first=)`` picks the steps that are
recorded; ``step()`` advances it and ``on_trace_ready(prof)`` runs at the end of each active
window (``tensorboard_trace_handler(dir)`` writes the chrome trace there). Without a schedule
everything between ``start()`` and ``stop()`` is one window.
"""
from __future__ import annotations

import gzip
import json
import os
import socket
import time
import warnings
from enum import Enum

from ._legacy import profile as _legacy_profile
from ._events import chrome_trace
from ..runtime.registry import registry
from .._warn import user_stacklevel

__all__ = ["profile", "schedule", "ProfilerAction", "ProfilerActivity",
           "tensorboard_trace_handler", "supported_activities"]


class ProfilerActivity(Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"


class ProfilerAction(Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """CPU, plus PrivateUse1 when a loaded backend can time its kernels."""
    out = {ProfilerActivity.CPU}
    for name in registry.names():
        if name == "cpu":
            continue
        b = registry.peek(name)
        if b is not None and hasattr(b, "start_kernel_timing") and b.is_available():
            out.add(ProfilerActivity.PrivateUse1)
    return out


def _default_activities():
    """PyTorch's default: CPU, and the device when one is in use (here: a non-CPU backend
    that has run something; none is loaded just to ask)."""
    in_use = any(name != "cpu" and name in registry._ready for name in registry.names())
    return {ProfilerActivity.CPU, ProfilerActivity.PrivateUse1} if in_use else \
        {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """The step -> ProfilerAction function of PyTorch's ``torch.profiler.schedule``: after
    ``skip_first`` steps, cycles of ``wait`` idle, ``warmup`` and ``active`` recorded steps
    (the last one saves), ``repeat`` times (0: forever)."""
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=user_stacklevel())

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step should be non-negative, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait and step < wait:
            return ProfilerAction.NONE
        if skip_first_wait:
            step -= wait
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        k = step % cycle
        if k < wait:
            return ProfilerAction.NONE
        if k < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if k < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(_step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` handler writing ``<dir>/<worker>.<ms>.pt.trace.json[.gz]``."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{int(time.time() * 1000)}.pt.trace.json"
        path = os.path.join(dir_name, name + (".gz" if use_gzip else ""))
        data = json.dumps(chrome_trace(prof.events(), path)).encode()
        if use_gzip:
            with gzip.open(path, "wb") as f:
                f.write(data)
        else:
            with open(path, "wb") as f:
                f.write(data)
    return handler


class profile:
    """PyTorch's ``torch.profiler.profile`` (context manager, or ``start``/``step``/``stop``)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None):
        activities = set(activities) if activities else _default_activities()
        if use_cuda:
            activities.add(ProfilerActivity.CUDA)
        for a in activities:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile(): activities must be ProfilerActivity values, got "
                                f"{a!r}")
        self.activities = activities
        self.schedule = schedule or _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self.profiler = None        # the window being recorded or last recorded
        self._recording = False
        self._metadata = {}

    def _device_types(self):
        """Every non-CPU backend's name when a device activity is asked for."""
        if self.activities <= {ProfilerActivity.CPU}:
            return ()
        return tuple(n for n in registry.names() if n != "cpu")

    # -- life cycle -----------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._enter(self.current_action)

    def step(self):
        """Advance the schedule by one step (call once per training iteration)."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transition(prev, self.current_action)

    def stop(self):
        if self._recording:
            self._finish_window(save=True)

    def _enter(self, action):
        if action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._start_window()

    def _transition(self, prev, now):
        recording = prev in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if recording and (prev is ProfilerAction.RECORD_AND_SAVE or
                          now not in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)):
            self._finish_window(save=True)
            recording = False
        if not recording and now in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._start_window()

    def _start_window(self):
        self.profiler = _legacy_profile(record_shapes=self.record_shapes,
                                        with_flops=self.with_flops,
                                        profile_memory=self.profile_memory,
                                        with_stack=self.with_stack)
        self.profiler._device_types = self._device_types()
        self.profiler._start()
        self._recording = True

    def _finish_window(self, save):
        self.profiler._stop()
        self._recording = False
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # -- results (of the last window) -----------------------------------------------------------
    def _results(self):
        if self.profiler is None or self.profiler._events is None:
            raise RuntimeError("ember.profiler: no recorded window yet (call stop() or let the "
                               "schedule reach the end of an active window)")
        return self.profiler

    def events(self):
        return self._results().events()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        return self._results().key_averages(group_by_input_shape, group_by_stack_n,
                                            group_by_overload_name)

    def export_chrome_trace(self, path):
        data = chrome_trace(self.events(), path)
        data["traceEvents"] += [{"name": k, "ph": "M", "args": {"value": v}, "pid": 0,
                                 "tid": 0} for k, v in self._metadata.items()]
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "wt") as f:
            json.dump(data, f)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        return self._results().export_stacks(path, metric)

    def add_metadata(self, key, value):
        self._metadata[key] = value

    def add_metadata_json(self, key, value):
        self._metadata[key] = json.loads(value)
