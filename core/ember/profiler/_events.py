"""What a profile holds once stopped: events, their averages, the table, the exports.

``FunctionEvent`` is one recorded range (times in microseconds, like PyTorch's), with its
parent and children on the same thread. ``EventList.key_averages()`` groups events by name
(and input shapes, and the first stack frames, when asked) into ``FunctionEventAvg`` rows;
``table()`` prints them with PyTorch's columns: Name, Self CPU %, Self CPU, CPU total %,
CPU total, CPU time avg, the device's Self/total/avg columns when kernels were timed, CPU Mem /
Self CPU Mem (and the device's) with ``profile_memory``, # of Calls, Input Shapes, Source
Location and Total FLOPs when recorded. ``export_chrome_trace`` writes the Chrome/Perfetto
trace-event JSON: one row per thread (forked tasks on their pool threads), kernels on their
device's rows.
"""
from __future__ import annotations

import json
import math
import os
from collections import OrderedDict
from operator import attrgetter

_SPACING = 2
_DEFAULT_WIDTH = 12


def format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_time_share(us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{us * 100.0 / total_us:.2f}%"


def format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return f"{nbytes} B"


class _Times:
    """The ``*_str`` forms and averages shared by events and their averages."""

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    @property
    def device_time(self):
        return self.device_time_total / max(self.count, 1)

    # the CUDA-era names of the device times
    cuda_time = device_time
    self_cuda_time_total = property(attrgetter("self_device_time_total"))
    cuda_time_total = property(attrgetter("device_time_total"))

    def __getattr__(self, name):
        if name.endswith("_str"):
            base = name[:-4]
            if base in ("cpu_time", "device_time", "cpu_time_total", "self_cpu_time_total",
                        "device_time_total", "self_device_time_total"):
                return format_time(getattr(self, base))
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class FunctionEvent(_Times):
    """One recorded range. Times are microseconds; memory is bytes."""

    def __init__(self, rec, perf0, wall0_us):
        self.id = rec.id
        self.name = self.key = rec.name
        self.kind = rec.kind
        self.thread = rec.tid
        self.start_us = wall0_us + (rec.start - perf0) / 1e3
        self.duration_us = (rec.end - rec.start) / 1e3
        if rec.kind == "kernel":   # device time only; the op that launched it holds it in
            self.cpu_time_total = self.self_cpu_time_total = 0.0   # its device total
            self.device_time_total = self.self_device_time_total = self.duration_us
        else:
            self.cpu_time_total = self.duration_us
            self.self_cpu_time_total = max(0.0, (rec.end - rec.start - rec.child_time) / 1e3)
            self.device_time_total = (rec.device_time + rec.child_device_time) / 1e3
            self.self_device_time_total = 0.0
        self.cpu_memory_usage = rec.mem
        self.self_cpu_memory_usage = rec.mem - rec.child_mem
        self.device_memory_usage = rec.dev_mem
        self.self_device_memory_usage = rec.dev_mem - rec.child_dev_mem
        self.input_shapes = rec.shapes if rec.shapes is not None else []
        self.input_types = rec.dtypes if rec.dtypes is not None else []
        self.stack = rec.stack if rec.stack is not None else []
        self.flops = rec.flops
        self.device = rec.device
        self.device_type = "cpu" if rec.kind != "kernel" else getattr(rec.device, "type", "")
        self.count = 1
        self.cpu_parent = None
        self.cpu_children = []
        self.is_async = False
        self.is_user_annotation = rec.kind == "user_annotation"
        self.node_id = -1
        self.overload_name = ""
        self.stream = rec.stream

    @property
    def time_range(self):
        return (self.start_us, self.start_us + self.duration_us)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={format_time(self.cpu_time_total)} "
                f"self_cpu_time={format_time(self.self_cpu_time_total)} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg(_Times):
    """The events of one key, summed (``count`` of them)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = -1
        self.is_async = False
        self.is_user_annotation = False
        self.device_type = "cpu"
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.flops = 0
        self.cpu_parent = None
        self.overload_name = ""

    def add(self, other):
        if self.key is None:      # the first event added names the average
            for attr in ("key", "input_shapes", "stack", "is_user_annotation", "device_type",
                         "cpu_parent"):
                setattr(self, attr, getattr(other, attr))
        for attr in ("cpu_time_total", "self_cpu_time_total", "device_time_total",
                     "self_device_time_total", "cpu_memory_usage", "self_cpu_memory_usage",
                     "device_memory_usage", "self_device_memory_usage", "count", "flops"):
            setattr(self, attr, getattr(self, attr) + getattr(other, attr))
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={format_time(self.self_cpu_time_total)} "
                f"cpu_time={format_time(self.cpu_time)} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with PyTorch's summaries and exports."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False,
                 trace=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._trace = trace   # (pid, thread names, kernel events) for the chrome trace

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """One ``FunctionEventAvg`` per name (and input shapes / top ``group_by_stack_n``
        frames when asked), in order of first appearance."""
        groups = OrderedDict()
        for e in self:
            key = (e.key,)
            if group_by_input_shapes:
                key += (str(e.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(e.stack[:group_by_stack_n])
            groups.setdefault(key, FunctionEventAvg()).add(e)
        return EventList(groups.values(), use_device=self._use_device,
                         profile_memory=self._profile_memory, with_flops=self._with_flops)

    def total_average(self):
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The events as a text table with PyTorch's columns (see the module doc)."""
        return build_table(self, sort_by=sort_by, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           profile_memory=self._profile_memory, with_flops=self._with_flops,
                           use_device=self._use_device,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Flame-graph input: one line per event with a stack, ``outer;...;inner value``."""
        allowed = ("self_cpu_time_total", "self_cuda_time_total", "self_device_time_total")
        if metric not in allowed:
            raise ValueError(f"metric should be one of: {list(allowed)}")
        attr = "self_device_time_total" if "cuda" in metric or "device" in metric else metric
        translate = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for e in self:
                value = int(getattr(e, attr))
                if e.stack and value > 0:
                    frames = ";".join(entry.translate(translate) for entry in reversed(e.stack))
                    f.write(f"{frames} {value}\n")

    def export_chrome_trace(self, path):
        """Write the events as Chrome trace-event JSON (chrome://tracing, Perfetto)."""
        with open(path, "w") as f:
            json.dump(chrome_trace(self, path), f)


# -- the table ------------------------------------------------------------------------------------
def _sort_attr(sort_by, use_device):
    attr = sort_by.replace("cuda", "device").replace("xpu", "device")
    attr = attr.replace("privateuse1", "device")
    if use_device:
        attr = attr.replace(use_device, "device")
    return attr


def build_table(events, *, sort_by=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, header=None,
                profile_memory=False, with_flops=False, use_device=None,
                top_level_events_only=False, time_unit=None):
    if len(events) == 0:
        return ""
    if sort_by is not None:
        attr = _sort_attr(sort_by, use_device)
        if not hasattr(events[0], attr):
            raise AttributeError(f"table(sort_by={sort_by!r}): events have no attribute "
                                 f"{attr!r}; use e.g. 'self_cpu_time_total', 'cpu_time_total', "
                                 f"'cpu_time', 'count', 'cpu_memory_usage', 'flops'")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage != 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    name_w = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    shapes_w = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_column_width)
    dev = (use_device or "device").upper()

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if has_device_mem:
            headers += [f"{dev} Mem", f"Self {dev} Mem"]
    headers.append("# of Calls")
    widths = [(name_w, ">")] + [(_DEFAULT_WIDTH, ">")] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append((shapes_w, ">"))
    if stacks:
        src_w = min(max(len(entry) for s in stacks for entry in s) + 4, max_src_column_width)
        headers.append("Source Location")
        widths.append((src_w, "<"))
    flops_scale = None
    if with_flops:
        positive = [e.flops for e in events if e.flops > 0]
        if positive:
            flops_scale, unit = _flops_unit(min(positive))
            headers.append(f"Total {unit}")
            widths.append((_DEFAULT_WIDTH, ">"))
    row_format = "".join("{: " + d + str(w) + "}" + " " * _SPACING for w, d in widths)
    sep = "".join("-" * w + " " * _SPACING for w, _ in widths)
    line_length = sum(w + _SPACING for w, _ in widths) - _SPACING

    self_cpu_total = sum(e.self_cpu_time_total for e in events)
    self_dev_total = sum(e.self_device_time_total for e in events)

    def t(us):
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return format_time(us)

    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, format_time_share(e.self_cpu_time_total, self_cpu_total),
               t(e.self_cpu_time_total),
               format_time_share(e.cpu_time_total, self_cpu_total), t(e.cpu_time_total),
               t(e.cpu_time)]
        if has_device_time:
            row += [t(e.self_device_time_total),
                    format_time_share(e.self_device_time_total, self_dev_total),
                    t(e.device_time_total), t(e.device_time)]
        if profile_memory:
            row += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
            if has_device_mem:
                row += [format_memory(e.device_memory_usage),
                        format_memory(e.self_device_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if stacks:
            row.append(_trim(e.stack[0], src_w) if e.stack else "")
        if flops_scale is not None:
            row.append("--" if e.flops <= 0 else f"{e.flops * flops_scale:8.3f}")
        out.append(row_format.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for entry in e.stack[1:]:
                out.append(row_format.format(*(blank[:headers.index("Source Location")] +
                                               [_trim(entry, src_w)] +
                                               blank[headers.index("Source Location"):])))
            out.append(row_format.format(*([""] * len(headers))))
    out.append(sep)
    out.append(f"Self CPU time total: {t(self_cpu_total)}")
    if has_device_time:
        out.append(f"Self {dev} time total: {t(self_dev_total)}")
    return "\n".join(out) + "\n"


def _trim(path, width):
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _flops_unit(flops):
    units = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    k = int(max(0, min(math.log10(flops) / 3, len(units) - 1)))
    return 10.0 ** (-3 * k), units[k]


# -- the chrome trace ----------------------------------------------------------------------------
_CATEGORY = {"op": "cpu_op", "user_annotation": "user_annotation", "autograd": "cpu_op",
             "kernel": "kernel"}


def chrome_trace(events, path=None):
    """The trace-event JSON object: host ranges on (pid, thread id) rows, kernels on rows of
    their own device "process" (one row per stream)."""
    pid = os.getpid()
    trace = events._trace or {}
    names = trace.get("thread_names", {})
    base_ns = trace.get("base_ns", 0)
    out = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
            "args": {"name": "python"}},
           {"name": "process_labels", "ph": "M", "pid": pid, "tid": 0,
            "args": {"labels": "CPU"}}]
    threads = sorted({e.thread for e in events if e.kind != "kernel"})
    for tid in threads:
        label = names.get(tid, "")
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                    "args": {"name": f"thread {tid} ({label})" if label else f"thread {tid}"}})
        out.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                    "args": {"sort_index": tid}})
    kernel_rows = {}   # (device, stream) -> (pid, tid) of its row
    device_pids = {}
    for e in events:
        if e.kind != "kernel":
            continue
        dkey, stream = str(e.device), str(e.stream)
        if dkey not in device_pids:
            device_pids[dkey] = dpid = len(device_pids)
            out.append({"name": "process_name", "ph": "M", "pid": dpid, "tid": 0,
                        "args": {"name": dkey}})
            out.append({"name": "process_labels", "ph": "M", "pid": dpid, "tid": 0,
                        "args": {"labels": f"device {dkey}"}})
        if (dkey, stream) not in kernel_rows:
            dpid = device_pids[dkey]
            tid = 1 + sum(1 for d, _ in kernel_rows if d == dkey)
            kernel_rows[(dkey, stream)] = (dpid, tid)
            out.append({"name": "thread_name", "ph": "M", "pid": dpid, "tid": tid,
                        "args": {"name": stream}})
    for e in events:
        if e.kind == "kernel":
            dpid, tid = kernel_rows[(str(e.device), str(e.stream))]
            row = {"ph": "X", "cat": "kernel", "name": e.name, "pid": dpid, "tid": tid,
                   "ts": e.start_us, "dur": e.duration_us,
                   "args": {"device": str(e.device), "stream": str(e.stream),
                            "External id": e.id}}
        else:
            args = {"External id": e.id}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
                args["Input type"] = e.input_types
            if e.device is not None:
                args["Device"] = str(e.device)
            if e.stack:
                args["Call stack"] = ";".join(e.stack)
            if e.flops:
                args["flops"] = e.flops
            row = {"ph": "X", "cat": _CATEGORY.get(e.kind, "cpu_op"), "name": e.name,
                   "pid": pid, "tid": e.thread, "ts": e.start_us, "dur": e.duration_us,
                   "args": args}
        out.append(row)
    return {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
            "baseTimeNanoseconds": base_ns, "traceEvents": out,
            "traceName": os.fspath(path) if path is not None else ""}
