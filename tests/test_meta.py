"""The meta device (plugins/ember-meta) and the core's meta functions (ember.ops._meta).

The meta functions are checked against the CPU: every conformance sample runs on both devices
and the meta result must have the CPU result's shapes and dtypes, op by op.
"""
from __future__ import annotations

import collections
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import warnings

import numpy as np
import pytest

import ember
from ember._tensor import Tensor
from ember.dispatch.dispatcher import all_ops
from ember.runtime import registry
from helpers_plugins import project_site_without

ROOT = pathlib.Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "plugins" / "ember-meta"


def _import_plugin():
    try:
        import ember_meta  # installed (its entry point) or already imported
    except ImportError:
        sys.path.insert(0, str(PLUGIN))
        import ember_meta
    return ember_meta


ember_meta = _import_plugin()


@pytest.fixture(scope="module", autouse=True)
def meta_device():
    """The meta backend for this module's tests: through its entry point when the package is
    installed, else registered by hand and removed afterwards, so that other test modules see
    the backends they expect."""
    if registry.is_known("meta"):
        registry.get("meta")
        yield ember.device("meta")
        return
    registry.register_plugin(ember_meta, "meta")
    try:
        yield ember.device("meta")
    finally:
        registry.remove("meta")
        registry.pm.unregister(ember_meta)


# -- meta results equal the CPU's shapes and dtypes on every conformance sample ------------------
def _specs(out):
    if isinstance(out, Tensor):
        return [(tuple(out.shape), out.dtype, out.device.type)]
    if isinstance(out, (tuple, list)):
        return [s for o in out for s in _specs(o)]
    return [("not a tensor", type(out).__name__, None)]


# ops (OpInfo names) whose API reads values before the op runs (bounds / class count checks
# with .item()), so they can't run on meta in ember; PyTorch's one_hot can't either
# Python APIs that check index values on the host (bounds, class indices) before calling ops
# (mvlgamma checks x > (p - 1) / 2, lstsq whether every matrix has full rank for residuals)
API_READS_VALUES = {"take", "one_hot", "nn.embedding", "nn.embedding padding_idx",
                    "nn.cross_entropy", "nn.nll_loss", "mvlgamma", "special multigammaln",
                    "linalg.lstsq",
                    # PyTorch's too checks that no variance is negative, on the host
                    "gaussian_nll_loss",
                    # the output length / range comes from the values, as in PyTorch
                    "bincount", "histc", "unravel_index",
                    # the unpooling indices are bounds-checked on the host
                    "max_unpool2d",
                    # an iterative eigensolver tests convergence on the host, as torch's
                    "lobpcg"}


@pytest.fixture(scope="module")
def conformance_run(meta_device):
    opdb = pytest.importorskip("ember_conformance.opdb")
    backend = registry.get("meta")
    ran = set()
    originals = dict(backend.kernels._kernels)

    def spy(name, fn):
        def kernel(*args, **kwargs):
            ran.add(name)
            return fn(*args, **kwargs)
        return kernel

    for name, fn in originals.items():
        backend.kernels.register(name, spy(name, fn))
    mismatches, meta_errors, compared = [], collections.defaultdict(list), 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for info in opdb.all_opinfos():
                for dt in info.dtypes:
                    for sample in info.samples(dt):
                        try:
                            args, kwargs = sample.build(ember.device("cpu"))
                            ref = info.fn(*args, **kwargs)
                        except Exception:
                            continue  # an invalid sample for this dtype: nothing to compare
                        try:
                            args, kwargs = sample.build(meta_device)
                            got = info.fn(*args, **kwargs)
                        except Exception as e:
                            meta_errors[info.name].append((sample.desc, e))
                            continue
                        compared += 1
                        want = [(s, d, "meta" if dev else None) for s, d, dev in _specs(ref)]
                        if _specs(got) != want:
                            mismatches.append(f"{info.name} [{sample.desc}]: cpu {want}, "
                                              f"meta {_specs(got)}")
    finally:
        for name, fn in originals.items():
            backend.kernels.register(name, fn)
    return compared, mismatches, meta_errors, ran


def test_meta_shapes_and_dtypes_match_the_cpu(conformance_run):
    compared, mismatches, _, _ = conformance_run
    assert compared > 5000
    assert not mismatches, "\n".join(mismatches[:30])


def test_every_meta_kernel_is_exercised_by_the_comparison(conformance_run):
    ran = conformance_run[3]
    backend = registry.get("meta")
    # (library ops, "ns::name", belong to other test modules: the opdb covers built-in ops)
    generated = {n for n in backend.kernels.names()
                 if n not in ember_meta.DATA_DEPENDENT and "::" not in n}
    # the opdb's nan_to_num_ entry returns log(x)'s copy, not the tensor it was given, so it
    # fails on every device; test_in_place_ops_return_self_and_check_shapes covers it
    assert generated - ran <= {"nan_to_num_"}


def test_meta_fails_only_where_values_are_needed(conformance_run):
    meta_errors = conformance_run[2]
    data_dependent = set(ember_meta.DATA_DEPENDENT)
    from ember_conformance.opdb import all_opinfos
    covers = {info.name: set(info.covers) for info in all_opinfos()}
    unexpected = []
    for name, errors in meta_errors.items():
        for desc, e in errors:
            if covers[name] & data_dependent and isinstance(e, NotImplementedError) and \
                    "can't run on the meta device" in str(e):
                continue
            if name in API_READS_VALUES and "cannot be called on meta tensors" in str(e):
                continue
            if isinstance(e, NotImplementedError) and str(e).startswith(
                    tuple(f"{op}: can't run on the meta device" for op in data_dependent)):
                continue  # boolean masks index through nonzero
            unexpected.append(f"{name} [{desc}]: {type(e).__name__}: {e}")
    assert not unexpected, "\n".join(unexpected[:30])


# -- coverage -----------------------------------------------------------------------------------
def test_every_op_has_a_meta_function_or_a_reason():
    """Each registry op either has a meta function, runs as a composite of ops (views are
    metadata only), or is listed as data-dependent with a reason. New ops must pick one."""
    # ops in other namespaces belong to libraries (and to other test modules' test ops), which
    # opt in with register_fake; the built-in set must be complete
    missing = sorted(n for n, op in all_ops().items()
                     if op.meta is None and op.composite is None
                     and n not in ember_meta.DATA_DEPENDENT
                     and "::" not in n)
    assert missing == []
    for name, reason in ember_meta.DATA_DEPENDENT.items():
        assert all_ops()[name].meta is None, f"{name} is listed data-dependent but has a meta"
        assert len(reason) > 20


def test_data_dependent_ops_fail_clearly():
    x = ember.empty(3, 4, device="meta")
    mask = ember.empty(3, 4, dtype=ember.bool, device="meta")
    for fn, name in [(lambda: ember.nonzero(x), "nonzero"),
                     (lambda: ember.masked_select(x, mask), "masked_select"),
                     (lambda: ember.unique(x), "unique"), (lambda: x[mask], "nonzero")]:
        with pytest.raises(NotImplementedError, match=f"{name}: can't run on the meta device"):
            fn()


# -- tensors without data -----------------------------------------------------------------------
def test_factories_allocate_nothing_and_print_like_torch():
    x = ember.empty(2, 3, device="meta")
    assert x.is_meta and x.device == ember.device("meta") and str(x.device) == "meta"
    assert x._storage.data is None and x.untyped_storage().nbytes == 24
    assert x.stride() == (3, 1)
    assert repr(x) == "tensor(..., device='meta', size=(2, 3))"
    assert repr(ember.zeros(2, dtype=ember.int64, device="meta")) == \
        "tensor(..., device='meta', size=(2,), dtype=ember.int64)"
    huge = ember.randn(10**6, 10**6, device="meta")
    assert huge.shape == (10**6, 10**6) and huge.nbytes == 4 * 10**12
    assert ember.arange(0, 10, 3, device="meta").shape == (4,)
    assert ember.eye(3, 5, device="meta").shape == (3, 5)
    assert ember.tensor([[1, 2, 3]], device="meta").dtype is ember.int64


def test_data_access_fails_clearly():
    x = ember.ones(2, 3, device="meta")
    with pytest.raises(RuntimeError, match=r"Tensor.item\(\) cannot be called on meta tensors"):
        x[0, 0].item()
    with pytest.raises(RuntimeError, match="cannot be called on meta tensors"):
        bool(x[0, 0])
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        x.tolist()
    with pytest.raises(NotImplementedError, match=r"Cannot copy out of meta tensor; no data!.*"
                                                  r"shape \[2, 3\]"):
        x.cpu()
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        x.numpy()


def test_to_meta_keeps_shape_dtype_and_views_share_storage():
    cpu = ember.tensor(np.arange(24, dtype=np.float64).reshape(2, 3, 4))
    m = cpu.to("meta")
    assert (m.shape, m.dtype, m.device.type) == (cpu.shape, cpu.dtype, "meta")
    for f in [lambda t: t.transpose(0, 2), lambda t: t[1, :, ::2], lambda t: t.view(6, 4),
              lambda t: t.expand(5, 2, 3, 4), lambda t: t.unsqueeze(1).diagonal(0, 0, 1),
              lambda t: t.permute(2, 0, 1)[..., 1:]]:
        v, ref = f(m), f(cpu)
        assert v._storage is m._storage
        assert (v.shape, v.stride(), v.storage_offset()) == \
            (ref.shape, ref.stride(), ref.storage_offset())


def test_in_place_ops_return_self_and_check_shapes():
    x = ember.empty(3, 4, device="meta")
    assert x.add_(ember.empty(4, device="meta")) is x
    assert x.uniform_() is x and x.fill_(2.0) is x and x.exp_() is x
    assert x.nan_to_num_() is x and x.clamp_(0, 1) is x
    assert x.copy_(ember.ones(3, 4)) is x  # a CPU source: only its shape matters
    with pytest.raises(RuntimeError, match=r"add_.*\[3, 4\].*\[2, 4\]|\[2, 4\].*\[3, 4\]"):
        x.add_(ember.empty(2, 4, device="meta"))


def test_meta_functions_check_shapes_when_ops_are_called_directly():
    from ember.ops.elementwise import binary_ops
    from ember.ops.linalg import matmul_op
    a, b = ember.empty(2, 3, device="meta"), ember.empty(4, 5, device="meta")
    with pytest.raises(RuntimeError, match=r"matmul: shapes \[2, 3\] and \[4, 5\]"):
        matmul_op(a, b)
    with pytest.raises(RuntimeError, match=r"mul: .*\[2, 3\], \[4, 5\]"):
        binary_ops["mul"][1](a, b, ember.float32)


def test_custom_op_with_fake_runs_on_meta():
    from ember import library

    @library.custom_op("metatest::double_rows", device_types="cpu")
    def double_rows(x):
        return ember.cat([x, x])

    @double_rows.register_fake
    def _(x):
        return (2 * x.shape[0],) + tuple(x.shape[1:]), x.dtype

    out = double_rows(ember.empty(3, 2, device="meta"))
    assert out.is_meta and out.shape == (6, 2)


# -- autograd works structurally ----------------------------------------------------------------
def _mlp(device):
    gen = np.random.default_rng(0)
    params = [ember.tensor(gen.standard_normal(s), dtype=ember.float32, device=device,
                           requires_grad=True) for s in [(8, 16), (16,), (16, 3), (3,)]]
    x = ember.tensor(gen.standard_normal((5, 8)), dtype=ember.float32, device=device)
    w1, b1, w2, b2 = params
    h = ember.gelu(x @ w1 + b1) if hasattr(ember, "gelu") else (x @ w1 + b1).tanh()
    logits = (h @ w2 + b2).log_softmax(-1)
    loss = -(logits[:, 0].mean()) + (w1 * w1).sum() * 1e-3
    loss.backward()
    return loss, params


def test_backward_on_meta_gives_meta_grads_shaped_like_the_cpu_ones():
    loss_cpu, p_cpu = _mlp("cpu")
    loss_meta, p_meta = _mlp("meta")
    assert loss_meta.is_meta and loss_meta.shape == loss_cpu.shape
    assert type(loss_meta.grad_fn).__name__ == type(loss_cpu.grad_fn).__name__
    for pc, pm in zip(p_cpu, p_meta):
        assert pm.grad is not None and pm.grad.is_meta
        assert (pm.grad.shape, pm.grad.dtype) == (pc.grad.shape, pc.grad.dtype)


def test_module_to_meta_and_a_ten_billion_parameter_model():
    nn = pytest.importorskip("ember.nn")
    if not hasattr(nn, "Linear"):
        pytest.skip("ember.nn has no Linear yet")
    small = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    small.to("meta")
    assert all(p.is_meta for p in small.parameters())
    out = small(ember.empty(3, 4, device="meta"))
    assert out.is_meta and out.shape == (3, 2)
    # 10 layers of 31623 x 31623 (+ bias): 10.0e9 parameters, 40 GB in float32, no memory used
    width = 31623
    big = nn.Sequential(*[nn.Linear(width, width, device="meta") for _ in range(10)])
    count = sum(p.numel() for p in big.parameters())
    assert count == 10 * (width * width + width) and count > 10**10
    assert sum(p.untyped_storage().nbytes for p in big.parameters()) == 4 * count
    y = big(ember.empty(2, width, device="meta"))
    assert y.shape == (2, width) and y.is_meta


# -- installation through the real entry point --------------------------------------------------
_CHECK = textwrap.dedent("""
    import sys, ember
    try:
        t = ember.empty(2, 3, device="meta")
    except RuntimeError as e:
        print("GONE", e)
        sys.exit(0)
    import ember_meta
    print("OK", repr(t), ember_meta.__file__)
""")


def _run(python, code, cwd):
    env = {k: v for k, v in os.environ.items()
           if k not in ("EMBER_BACKENDS", "EMBER_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH")}
    return subprocess.run([python, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_install_and_uninstall_through_the_entry_point(tmp_path):
    import site
    venv = tmp_path / "venv"
    # no pip of its own (it takes seconds to bootstrap): the project venv's pip and packages
    # are made visible with a .pth file, and pip installs into this venv
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    own = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    # the project's packages without its own ember-meta, if it has one installed
    parents = [str(project_site_without(tmp_path / "project-site", "ember-meta"))]
    parents += [p for p in site.getsitepackages() if os.path.isdir(p) and
                os.path.realpath(p) != os.path.realpath(sysconfig.get_paths()["purelib"])]
    pathlib.Path(own, "_project_venv.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in parents))
    # built from a copy: setuptools writes build/ and *.egg-info next to the sources
    src = tmp_path / "ember-meta"
    shutil.copytree(PLUGIN, src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__"))
    pip = [python, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["install", "--no-deps", "--no-build-isolation", "--no-index",
                          str(src)], check=True, cwd=tmp_path, timeout=180,
                   capture_output=True)
    r = _run(python, _CHECK, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("OK tensor(..., device='meta', size=(2, 3))"), r.stdout
    assert r.stdout.strip().endswith(str(pathlib.Path(own, "ember_meta", "__init__.py")))
    subprocess.run(pip + ["uninstall", "-y", "ember-meta"], check=True, timeout=120,
                   capture_output=True)
    r = _run(python, _CHECK, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("GONE") and "meta" in r.stdout
    assert not any(pathlib.Path(own).glob("ember_meta*"))


def test_the_conformance_runner_checks_a_data_less_backend_on_shapes_and_dtypes(meta_device):
    """``ember-conformance --backend meta``: a device without values (Backend.has_data False)
    is compared on shapes and dtypes; what it cannot run is unsupported (naming the values it
    would need), never a crash or a failure on a value read."""
    runner = pytest.importorskip("ember_conformance.runner")
    from ember_conformance.opdb import all_opinfos
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = runner.run("meta", check_fd=False)
    failed = [f"{r.suite} {r.name} {r.dtype}: {r.message}" for r in results if not r.ok]
    assert not failed, "\n".join(failed[:20])
    forward = [r for r in results if r.suite == "forward"]
    assert sum(r.status == "pass" for r in forward) > 1900
    covers = {info.name: set(info.covers) for info in all_opinfos()}
    data_dependent = set(ember_meta.DATA_DEPENDENT)
    for r in forward:
        if r.status == "unsupported" and not r.message.endswith("is not supported"):
            assert r.message.startswith("needs values"), r.message
            assert r.name in API_READS_VALUES or covers[r.name] & data_dependent or any(
                f"{op}: can't run on the meta device" in r.message for op in data_dependent), \
                (r.name, r.message)
    contracts = {r.name: r.status for r in results if r.suite not in
                 ("forward", "gradient", "vmap", "jvp", "coverage")}
    assert contracts["views_share_storage"] == "pass"
    assert contracts["copy_round_trip_all_dtypes"] == "skip"
