"""utils.checkpoint's helpers against torch: detach_variable, check_backward_validity,
get/set_device_states, DefaultDeviceType, noop_context_fn and context_fn, CheckpointError,
set_checkpoint_debug_enabled / set_checkpoint_early_stop."""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import ember
import ember.utils.checkpoint as ecp

torch = pytest.importorskip("torch")
import torch.utils.checkpoint as tcp  # noqa: E402


def test_detach_variable_like_torch():
    for lib, cp in ((ember, ecp), (torch, tcp)):
        a = lib.ones(2, requires_grad=True) * 2
        b = lib.ones(2)
        out = cp.detach_variable((a, b, 3))
        assert isinstance(out, tuple) and out[2] == 3
        assert out[0].requires_grad and out[0].grad_fn is None and out[0].is_leaf
        assert not out[1].requires_grad
        with pytest.raises(RuntimeError, match="Only tuple of tensors is supported. Got "
                                               "Unsupported input type: list"):
            cp.detach_variable([a])


def test_check_backward_validity_like_torch():
    for lib, cp in ((ember, ecp), (torch, tcp)):
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            cp.check_backward_validity([lib.ones(1), 2])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cp.check_backward_validity([lib.ones(1, requires_grad=True)])


def test_noop_context_fn_and_default_device_type():
    for cp in (ecp, tcp):
        fwd, rec = cp.noop_context_fn()
        with fwd, rec:
            pass
    acc = ember.accelerator.current_accelerator(True)
    assert ecp.DefaultDeviceType.get_device_type() == (acc.type if acc is not None else "cpu")
    assert tcp.DefaultDeviceType.get_device_type() == "cpu"  # torch's CPU build here


def test_cpu_only_args_have_no_device_states():
    for lib, cp in ((ember, ecp), (torch, tcp)):
        assert cp.get_device_states(lib.ones(2), [lib.zeros(1)], 3) == ([], [])


def test_device_states_round_trip_on_opencl():
    if not ember.opencl.is_available():
        pytest.skip("no OpenCL device")
    x = ember.ones(2, device="opencl")
    ids, states = ecp.get_device_states(x, (ember.ones(1),))
    assert ids == [0] and len(states) == 1 and states[0].dtype == ember.uint8
    a = ember.rand(4, device="opencl")
    ecp.set_device_states(ids, states, device_type="opencl")
    np.testing.assert_array_equal(a.cpu().numpy(), ember.rand(4, device="opencl").cpu().numpy())


def test_context_fn_wraps_forward_and_recomputation():
    for lib, cp in ((ember, ecp), (torch, tcp)):
        seen = []

        def context_fn():
            @contextlib.contextmanager
            def tag(name):
                seen.append(name)
                yield
            return tag("forward"), tag("recompute")

        x = lib.ones(3, requires_grad=True)
        y = cp.checkpoint(lambda t: (t * 3).sin(), x, use_reentrant=False, context_fn=context_fn)
        assert seen == ["forward"]
        y.sum().backward()
        assert seen == ["forward", "recompute"]
        np.testing.assert_allclose(x.grad.numpy(), 3 * np.cos(3.0) * np.ones(3), rtol=1e-6)
        with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
            cp.checkpoint(lambda t: t, x, use_reentrant=True, context_fn=context_fn)


def _changing_function():
    calls = []

    def fn(t):
        calls.append(1)
        return t.sin() if len(calls) == 1 else t[:2].sin()  # recomputed: another shape
    return fn


def test_recomputation_mismatch_raises_checkpoint_error():
    assert issubclass(ecp.CheckpointError, RuntimeError)
    for lib, cp in ((ember, ecp), (torch, tcp)):
        x = lib.ones(3, requires_grad=True)
        y = cp.checkpoint(_changing_function(), x, use_reentrant=False)
        with pytest.raises(cp.CheckpointError, match="Recomputed values"):
            y.sum().backward()


def test_debug_enabled_overrides_and_restores():
    x = ember.ones(3, requires_grad=True)
    with ecp.set_checkpoint_debug_enabled(True):
        y = ecp.checkpoint(_changing_function(), x, use_reentrant=False)
    with pytest.raises(ecp.CheckpointError, match=r"recomputing .*fn on inputs \[\(3,\)\]"):
        y.sum().backward()
    y = ecp.checkpoint(_changing_function(), x, use_reentrant=False)
    with pytest.raises(ecp.CheckpointError) as info:
        y.sum().backward()
    assert "recomputing" not in str(info.value)


def test_early_stop_switch_keeps_gradients():
    for lib, cp in ((ember, ecp), (torch, tcp)):
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        with cp.set_checkpoint_early_stop(False):
            y = cp.checkpoint(lambda t: t.exp() * t, x, use_reentrant=False)
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, 1.0]) * (1 + np.array([0.5, 1.0])),
                                   rtol=1e-6)
