"""What torch's device modules do where their device is absent, function by function.

A script written for a GPU calls ``torch.cuda.manual_seed_all(0)``, ``torch.cuda.empty_cache()``
or ``torch.cuda.memory_allocated()`` unconditionally; torch's CPU build answers without a device
(seeding is lazy, counters read 0) and raises only where a device is needed. ember's device
modules do the same whenever the device is not there — no backend provides the type
(``MissingDeviceModule``) or the backend cannot run here (``ember.cuda`` without a driver) — and
raise the backend's reason there, as an error that is both a ``RuntimeError`` and an
``AssertionError`` (torch raises one or the other: "Torch not compiled with CUDA enabled").

The tables are torch 2.13's CPU build, recorded by ``tools/torch_device_modules.py`` into
``tests/data/torch_device_modules.json``, which ``tests/test_device_modules.py`` checks them
against.
"""
from __future__ import annotations

import collections
import contextlib


def _null_context(*args, **kwargs):
    return contextlib.nullcontext()


# the value a function returns without the device (a factory where each call needs a new one)
_COMMON = {
    **dict.fromkeys(["manual_seed", "manual_seed_all", "seed", "seed_all", "empty_cache",
                     "set_rng_state", "set_rng_state_all", "set_stream",
                     "caching_allocator_enable", "reset_peak_memory_stats",
                     "reset_accumulated_memory_stats", "reset_max_memory_allocated",
                     "reset_max_memory_cached", "reset_peak_host_memory_stats",
                     "reset_accumulated_host_memory_stats", "record_memory_history"],
                    lambda *a, **k: None),
    **dict.fromkeys(["device_count", "memory_allocated", "max_memory_allocated",
                     "memory_reserved", "max_memory_reserved", "memory_cached",
                     "max_memory_cached"], lambda *a, **k: 0),
    **dict.fromkeys(["is_available", "is_initialized", "is_bf16_supported",
                     "is_tf32_supported"], lambda *a, **k: False),
    "get_arch_list": lambda *a, **k: [], "get_rng_state_all": lambda *a, **k: [],
    "memory_snapshot": lambda *a, **k: [],
    "memory_stats": lambda *a, **k: collections.OrderedDict(),
    "host_memory_stats": lambda *a, **k: collections.OrderedDict(),
    "memory_stats_as_nested_dict": lambda *a, **k: {},
    "host_memory_stats_as_nested_dict": lambda *a, **k: {},
    "get_gencode_flags": lambda *a, **k: "",
    "stream": _null_context, "caching_allocator_disabled": _null_context,
}

# every other public function of torch's module needs the device: it raises
_RAISES = {
    "cuda": "caching_allocator_alloc caching_allocator_delete can_device_access_peer clock_rate "
            "cudart current_blas_handle current_device current_solver_handle current_stream "
            "default_stream device_memory_used get_allocator_backend get_device_capability "
            "get_device_name get_device_properties get_per_process_memory_fraction "
            "get_rng_state get_sync_debug_mode graph_pool_handle init initial_seed ipc_collect "
            "is_current_stream_capturing list_gpu_processes mem_get_info memory_summary "
            "memory_usage power_draw set_device set_per_process_memory_fraction "
            "set_sync_debug_mode synchronize temperature utilization",
    "xpu": "can_device_access_peer clock_rate current_device current_stream device_memory_used "
           "get_device_capability get_device_name get_device_properties "
           "get_per_process_memory_fraction get_rng_state graph_pool_handle init initial_seed "
           "is_current_stream_capturing mem_get_info memory_usage power_draw set_device "
           "set_per_process_memory_fraction synchronize temperature utilization",
    "mps": "current_allocated_memory driver_allocated_memory empty_cache get_rng_state "
           "recommended_max_memory seed set_per_process_memory_fraction set_rng_state "
           "synchronize",
    "mtia": "current_device current_stream default_stream empty_cache get_device_capability "
            "get_device_properties get_rng_state graph_pool_handle init initial_seed "
            "set_device set_rng_state snapshot stream synchronize",
}

# a device type's own answers, and which functions of _COMMON its module has (None: all)
_OWN = {
    "cuda": ({}, None),
    "xpu": ({}, set(_COMMON) - {
        "caching_allocator_enable", "caching_allocator_disabled", "host_memory_stats",
        "host_memory_stats_as_nested_dict", "memory_cached", "max_memory_cached",
        "reset_max_memory_allocated", "reset_max_memory_cached", "reset_peak_host_memory_stats",
        "reset_accumulated_host_memory_stats", "record_memory_history"}),
    "mps": ({}, {"device_count", "is_available", "manual_seed"}),
    # torch.mtia.is_bf16_supported() is True on any build; its memory_stats a plain dict
    "mtia": ({"is_bf16_supported": lambda *a, **k: True, "memory_stats": lambda *a, **k: {}},
             {"device_count", "is_available", "is_initialized", "is_bf16_supported",
              "get_rng_state_all", "manual_seed", "manual_seed_all", "seed", "seed_all",
              "set_rng_state_all", "set_stream", "max_memory_allocated", "memory_allocated",
              "memory_stats", "record_memory_history", "reset_peak_memory_stats"}),
}


DEVICE_TYPES = tuple(_OWN)


def without_device(device_type: str) -> dict:
    """{function name: what it returns without the device} for ``device_type``'s module (other
    device types, such as opencl, answer as cuda's does)."""
    overrides, only = _OWN.get(device_type, ({}, None))
    table = {k: v for k, v in _COMMON.items()
             if (only is None or k in only) and k not in _raises(device_type)}
    table.update(overrides)
    return table


def _raises(device_type: str) -> set:
    return set(_RAISES.get(device_type, "").split())


def needs_device(device_type: str) -> set:
    """The functions of torch's ``device_type`` module that raise without the device."""
    return _raises(device_type)


def torch_names(device_type: str) -> set:
    """Every function name torch's module for ``device_type`` has (as ember's names it)."""
    return set(without_device(device_type)) | _raises(device_type)
