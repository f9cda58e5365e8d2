"""Dispatcher contracts with small backends defined here: CPU fallback (warned once per op),
missing kernels, restricted dtypes, device mismatch, cache invalidation."""
import warnings

import numpy as np
import pytest

import ember
from ember.dispatch import dispatcher
from ember.kit import ArrayBackend
from ember.kit.copy import register as register_copies
from ember.kit.factories import register as register_factories
from ember.runtime.registry import registry


class MiniBackend(ArrayBackend):
    """numpy memory, only copies, factories and `add`: everything else is missing."""
    special = None

    def __init__(self, name, fallback, dtypes=None):
        self.name = name
        self.cpu_fallback = fallback
        if dtypes is not None:
            self.dtypes = frozenset(dtypes)
        super().__init__()
        register_copies(self)
        register_factories(self)
        xp, native, wrap = self.xp, self.native, self.wrap
        self.kernels.register("add", lambda a, b, alpha, compute: wrap(
            xp.add(native(a), native(b) * alpha if alpha != 1 else native(b)).astype(compute.np),
            a.device))


@pytest.fixture
def minidev():
    backends = [MiniBackend("minidev", True), MiniBackend("strictdev", False),
                MiniBackend("f32dev", True, dtypes={ember.float32, ember.int64, ember.bool})]
    for b in backends:
        registry.add(b)
    yield backends
    for b in backends:
        registry.remove(b.name)


def test_fallback_runs_on_cpu_warns_once_and_stays_on_device(minidev):
    x = ember.tensor([1.0, 2.0, 3.0]).to("minidev")
    with pytest.warns(UserWarning, match="op 'mul' has no kernel for backend 'minidev'"):
        y = x * x
    assert y.device == ember.device("minidev:0")
    assert y.cpu().tolist() == [1.0, 4.0, 9.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a second call must not warn again
        z = x * x
    assert z.cpu().tolist() == [1.0, 4.0, 9.0]
    with pytest.warns(UserWarning, match="op 'mul_' has no kernel"):
        x.mul_(2)                               # in-place through the fallback writes back
    assert x.cpu().tolist() == [2.0, 4.0, 6.0] and x.device.type == "minidev"


def test_native_kernel_is_used_without_warning(minidev):
    x = ember.ones(3).to("minidev")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (x + x).cpu().tolist() == [2.0, 2.0, 2.0]


def test_missing_kernel_without_fallback_names_op_and_backend(minidev):
    x = ember.ones(2).to("strictdev")
    with pytest.raises(NotImplementedError, match="op 'exp' has no kernel for backend "
                                                  "'strictdev' and strictdev has no CPU "
                                                  "fallback"):
        x.exp()


def test_unsupported_dtype_fails_before_any_kernel(minidev):
    calls = []
    f32 = minidev[2]
    f32.kernels.register("_to_copy", lambda *a: calls.append(a))
    with pytest.raises(TypeError, match=r"dtype ember.float64 is not supported on device "
                                        r"'f32dev:0'"):
        ember.ones(2, device="f32dev").to(ember.float64)
    assert calls == []


def test_device_mismatch_message_and_cpu_scalars(minidev):
    a = ember.ones(3).to("minidev")
    with pytest.raises(RuntimeError, match=r"^Expected all tensors to be on the same device, "
                                           r"but found at least two devices, minidev:0 and "
                                           r"cpu!"):
        a + ember.ones(3)
    assert (a + ember.tensor(2.0)).cpu().tolist() == [3.0, 3.0, 3.0]


def test_broadcast_error_names_sizes():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        ember.ones(2, 3) + ember.ones(2, 4)


def test_registering_a_kernel_invalidates_the_resolution_cache(minidev):
    x = ember.ones(2).to("strictdev")
    with pytest.raises(NotImplementedError):
        x.neg()
    minidev[1].kernels.register("neg", lambda t, compute: minidev[1].wrap(
        -minidev[1].native(t), t.device))
    assert x.neg().cpu().tolist() == [-1.0, -1.0]


def test_dispatch_resolves_once_per_keyset():
    op = dispatcher.get_op("mul")
    x = ember.ones(2)
    x * x
    cached = dict(op._cache)
    x * x
    assert op._cache == cached and cached


def test_an_op_called_with_keywords_records_like_a_positional_call():
    # keywords are moved to their schema positions before any layer sees the call, so the
    # derivative gets every argument (it used to get only the positional ones)
    from ember.ops.resampling import upsample_backward_op
    g = ember.randn(1, 2, 7, 3, dtype=ember.float64, requires_grad=True)
    kw = dict(input_size=[4, 5], output_size=[7, 3], mode="linear", align_corners=True,
              scales=[0.0, 0.0])
    by_name = upsample_backward_op(g, **kw)
    by_place = upsample_backward_op(g, *kw.values())
    (ga,) = ember.autograd.grad(by_name.sum(), g)
    (gb,) = ember.autograd.grad(by_place.sum(), g)
    assert ember.equal(by_name, by_place) and ember.equal(ga, gb)
    with pytest.raises(TypeError, match="upsample_backward.. got an unexpected keyword"):
        upsample_backward_op(g, nosuch=1)
    with pytest.raises(TypeError, match="multiple values for argument 'grad_output'"):
        upsample_backward_op(g, grad_output=g)
