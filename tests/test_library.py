"""ember.library: new ops from outside the core, per-backend kernels, namespaces."""
import numpy as np
import pytest

import ember
from ember import library
from ember.dispatch import dispatcher


def test_custom_op_runs_everywhere_through_its_composite():
    @library.custom_op("testlib::scaled_exp")
    def scaled_exp(x, scale):
        return ember.exp(x) * scale

    x = ember.tensor([0.0, 1.0, 2.0])
    out = scaled_exp(x, 3.0)
    np.testing.assert_allclose(out.numpy(), 3.0 * np.exp([0.0, 1.0, 2.0]), rtol=1e-6)
    assert ember.ops.testlib.scaled_exp is scaled_exp.op


def test_register_kernel_overrides_the_composite_for_one_device():
    @library.custom_op("testlib::plus_one")
    def plus_one(x):
        return x + 1

    calls = []

    @plus_one.register_kernel("cpu")
    def plus_one_cpu(x):
        calls.append(x.shape)
        return ember.from_numpy(x.numpy() + 1)

    out = plus_one(ember.zeros(2))
    assert calls == [ember.Size([2])]
    assert out.tolist() == [1.0, 1.0]


def test_custom_op_with_device_types_has_no_composite():
    @library.custom_op("testlib::host_only", device_types="cpu")
    def host_only(x):
        return ember.from_numpy(np.sort(x.numpy()))

    assert host_only.op.composite is None
    assert host_only(ember.tensor([3, 1, 2])).tolist() == [1, 2, 3]


def test_library_define_and_impl():
    lib = library.Library("testlib2", "DEF")
    op = lib.define("triple(Tensor x) -> Tensor")
    lib.impl("triple", lambda x: ember.from_numpy(x.numpy() * 3), "cpu")
    assert op.name == "testlib2::triple"
    assert ember.ops.testlib2.triple(ember.tensor([1, 2])).tolist() == [3, 6]


def test_library_errors_are_clear():
    lib = library.Library("testlib3", "DEF")
    with pytest.raises(ValueError, match="needs a namespace"):
        library.custom_op("nonamespace")(lambda x: x)
    with pytest.raises(KeyError, match="no op named 'testlib3::missing'"):
        lib.impl("missing", lambda x: x, "cpu")
    lib.define("dup(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="already defined"):
        lib.define("dup(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="unknown device type 'nosuchdev'"):
        lib.impl("dup", lambda x: x, "nosuchdev")
    with pytest.raises(AttributeError, match="no ops are defined in namespace 'nowhere'"):
        ember.ops.nowhere


def test_op_without_kernel_names_op_and_backend():
    lib = library.Library("testlib4", "DEF")
    op = lib.define("nokernel(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError,
                       match="op 'testlib4::nokernel' has no kernel for backend 'cpu'"):
        op(ember.ones(1))


def test_plugin_library_may_only_touch_its_own_devices():
    lib = library.Library("plugin_x", "FRAGMENT", allowed_devices={"somedev"})
    lib.define("f(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="may only register kernels for"):
        lib.impl("f", lambda x: x, "cpu")
    assert "plugin_x::f" not in ember.runtime.registry.get("cpu").kernels


def test_register_fake_sets_meta():
    @library.custom_op("testlib::with_meta")
    def with_meta(x):
        return x * 2

    @with_meta.register_fake
    def _(x):
        return x.shape, x.dtype

    assert dispatcher.get_op("testlib::with_meta").meta is not None
