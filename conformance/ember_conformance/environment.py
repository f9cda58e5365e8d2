"""Where a run happened: backend, devices (platform and driver where the backend says),
devices the backend left out, versions, date and command line — the header of every report."""
from __future__ import annotations

import datetime
import platform
import shlex
import sys

import numpy as np

import ember


def describe(device, argv=None) -> dict:
    from ember.runtime.registry import registry
    backend = registry.get(device.type)
    devices = []
    for index in range(backend.device_count()):
        entry = {"device": f"{device.type}:{index}", "name": backend.device_name(index)}
        details = getattr(backend, "device_details", None)   # optional: OpenCL has it
        if details is not None:
            entry.update(details(index))
        devices.append(entry)
    skipped = getattr(backend, "skipped_devices", None)
    return {
        "backend": device.type,
        "device": str(device),
        "devices": devices,
        "left_out": [{"device": d, "why": why} for d, why in (skipped() if skipped else [])],
        "ember": ember.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": shlex.join(["ember-conformance"] + list(sys.argv[1:] if argv is None
                                                           else argv)),
    }


def device_line(env) -> str:
    """One line per device: "opencl:0 NAME — platform P, driver D"."""
    lines = []
    for d in env["devices"]:
        extra = ", ".join(f"{k} {d[k]}" for k in ("platform", "driver") if d.get(k))
        name = "" if d["name"] == d["device"] else f" {d['name']}"
        lines.append(f"{d['device']}{name}" + (f" — {extra}" if extra else ""))
    return "; ".join(lines)
