"""ember-openreg, the reference third-party backend (plugins/ember-openreg).

Two layers:

* its arena allocator and its streams, unit-tested in this process (imported from the plugin's
  source directory; nothing is registered with ember here);
* the package as a user gets it: pip-installed into a fresh venv and exercised through the real
  entry-point path in subprocesses, then uninstalled.
"""
import gc
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "ember-openreg"
sys.path.insert(0, str(PLUGIN))
from ember_openreg import memory  # noqa: E402
from ember_openreg.streams import Event, Stream, Worker  # noqa: E402

from ember.runtime.allocator import OutOfMemoryError  # noqa: E402
from helpers_plugins import project_site_without  # noqa: E402


# -- the arena allocator --------------------------------------------------------------------------
def test_parse_size():
    assert memory.parse_size("1G") == 1 << 30
    assert memory.parse_size("256MiB") == 256 << 20
    assert memory.parse_size("4096") == 4096
    assert memory.parse_size("1.5k") == 1536
    for bad in ("", "-1G", "lots", "1T"):
        with pytest.raises(ValueError, match="EMBER_OPENREG_MEMORY"):
            memory.parse_size(bad)


def test_arena_first_fit_reuses_holes_and_coalesces():
    arena = memory.Arena(8192, "openreg:0")
    a, b, c = arena.alloc(1000), arena.alloc(1000), arena.alloc(512)
    assert (a.offset, b.offset, c.offset) == (0, 1024, 2048)      # 512-byte aligned, first fit
    arena.free(b)
    d = arena.alloc(600)                                           # fits the hole b left
    assert d.offset == 1024
    for ch in (a, c, d):
        arena.free(ch)
    assert arena.free_bytes() == arena.largest_free() == 8192      # one segment again
    with pytest.raises(RuntimeError, match="double free"):
        arena.free(c)


def test_arena_random_alloc_free_never_overlaps():
    rng = np.random.default_rng(0)
    arena = memory.Arena(1 << 16, "openreg:0")
    live = []
    for _ in range(600):
        if live and rng.random() < 0.45:
            arena.free(live.pop(int(rng.integers(len(live)))))
        else:
            try:
                live.append(arena.alloc(int(rng.integers(1, 4000))))
            except MemoryError:
                assert arena.largest_free() < 4000
        spans = sorted((ch.offset, ch.offset + ch.size) for ch in live)
        assert all(e1 <= s2 for (_, e1), (s2, _) in zip(spans, spans[1:]))
        assert arena.free_bytes() + sum(ch.size for ch in live) == arena.capacity
    for ch in live:  # every chunk is its own bytes of the one arena buffer
        assert np.shares_memory(ch.mem, arena.buffer) and ch.mem.nbytes == ch.size


def test_caching_allocator_over_arena_oom_names_device_and_sizes():
    alloc = memory.make_allocator("openreg:1", capacity=1 << 20)
    first = alloc.allocate(600 << 10)
    assert alloc.memory_allocated() == 600 << 10 and alloc.memory_reserved() == 600 << 10
    with pytest.raises(OutOfMemoryError, match=r"openreg:1: out of memory trying to allocate "
                                               r"600\.00 KiB.*600\.00 KiB allocated.*limit 1\.00 MiB"):
        alloc.allocate(600 << 10)
    del first
    gc.collect()
    assert alloc.memory_allocated() == 0 and alloc.memory_reserved() == 600 << 10  # cached
    again = alloc.allocate(700 << 10)   # a new size class: the cache is emptied, then it fits
    assert alloc.memory_reserved() == 700 << 10 and again.handle.offset == 0
    del again
    gc.collect()
    alloc.empty_cache()
    assert alloc.memory_reserved() == 0 and alloc.arena.free_bytes() == 1 << 20


def test_env_sets_the_arena_size(monkeypatch):
    monkeypatch.setenv("EMBER_OPENREG_MEMORY", "3M")
    assert memory.make_allocator("openreg:0").arena.capacity == 3 << 20


# -- streams and events (a stub backend: no registry involved) ------------------------------------
class _Stub:
    name = "cpu"  # Stream.device needs a device type ember knows

    def __init__(self):
        self._workers = weakref.WeakSet()
        self.Event = type("Event", (Event,), {"backend": self})
        self.current = None

    def check_index(self, index):
        pass

    def current_device(self):
        return 0

    def workers(self, index):
        return self._workers

    def current_stream(self, index):
        return self.current

    def set_stream(self, stream):
        self.current = stream


def test_worker_runs_in_order_on_its_own_thread():
    w = Worker("test worker")
    seen = []
    for i in range(50):
        w.submit("k", lambda i=i: seen.append((i, threading.get_ident())))
    w.wait(w.launched)
    assert [i for i, _ in seen] == list(range(50))
    assert {t for _, t in seen} == {w.ident} and w.ident != threading.get_ident()
    w.stop()


def test_stream_launch_is_asynchronous_and_wait_event_orders_streams():
    b = _Stub()
    s1, s2 = Stream(b, 0), Stream(b, 0)
    gate, order = threading.Event(), []
    s1.launch("gate", gate.wait)
    s1.launch("first", order.append, "s1")
    done = s1.record_event()
    s2.wait_event(done)
    s2.launch("second", order.append, "s2")
    assert not s1.query() and not s2.query() and not done.query() and order == []
    gate.set()
    s2.synchronize()
    assert order == ["s1", "s2"] and done.query() and s1.query()


def test_entering_a_stream_orders_it_after_the_current_one():
    b = _Stub()
    b.current = Stream(b, 0)
    side = Stream(b, 0)
    gate, order = threading.Event(), []
    b.current.launch("gate", gate.wait)
    b.current.launch("prepare", order.append, "prepare")
    with side:
        side.launch("use", order.append, "use")
    assert not side.query()
    gate.set()
    side.synchronize()
    assert order == ["prepare", "use"]


def test_event_timing_and_errors():
    b = _Stub()
    s = b.current = Stream(b, 0)
    start, end = b.Event(enable_timing=True), b.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="recorded first"):
        start.elapsed_time(end)
    start.record()
    s.launch("work", np.linalg.inv, np.eye(50))
    end.record(s)
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        b.Event().elapsed_time(end)


def test_kernel_error_is_raised_by_the_next_synchronize():
    s = Stream(_Stub(), 0)
    out = []
    s.launch("bad_kernel", lambda: 1 / 0)
    s.launch("after", out.append, 1)        # the stream keeps going, as on CUDA
    with pytest.raises(RuntimeError, match=r"kernel 'bad_kernel' failed asynchronously.*"
                                           r"ZeroDivisionError"):
        s.synchronize()
    assert out == [1]
    s.synchronize()                         # reported once


def test_stream_thread_ends_with_the_stream():
    s = Stream(_Stub(), 0)
    thread = s._worker._thread
    del s
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()


# -- the installed package, through the entry point -----------------------------------------------
@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv that sees the project's packages, with ember-openreg pip-installed."""
    root = tmp_path_factory.mktemp("openreg")
    env_dir = root / "venv"
    # --without-pip: the venv's bundled setuptools would shadow the project's
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"], check=True,
                          capture_output=True, text=True).stdout.strip()
    # ember, numpy & co. come from the project venv (a .pth line that starts with import runs)
    # (without the project venv's own ember-openreg, if it has one: uninstalling must hide it)
    project = project_site_without(root / "project-site", "ember-openreg")
    Path(site, "_ember_project.pth").write_text(f"import site; site.addsitedir({str(project)!r})\n")
    src = root / "ember-openreg"  # build from a copy: the build leaves files next to the sources
    shutil.copytree(PLUGIN, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                               "__pycache__"))
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    r = subprocess.run(pip + ["install", "--no-deps", "--no-build-isolation", "--no-index",
                              str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return {"python": str(python), "pip": pip}


def run(venv, code, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    full.update(env)
    r = subprocess.run([venv["python"], "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=full, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_installed_device_api_memory_and_oom(venv):
    run(venv, """
        import gc, ember
        from ember.runtime.allocator import OutOfMemoryError
        assert ember.openreg.is_available() and ember.openreg.device_count() == 2
        t = ember.arange(6.0).openreg()
        assert str(t.device) == "openreg:0" and t.is_openreg and not t.is_cpu
        t1 = t.openreg(1)
        assert t1.device == ember.device("openreg:1") and t1.tolist() == t.tolist()
        assert "device='openreg:0'" in repr(t)
        ember.openreg.synchronize()
        base = ember.openreg.memory_allocated(0)
        big = ember.empty(3 << 20, dtype=ember.uint8, device="openreg:0")
        assert ember.openreg.memory_allocated(0) == base + (4 << 20)   # 2 MiB size classes
        assert ember.openreg.memory_allocated(1) == 512                 # the copy on openreg:1
        del big; gc.collect()
        ember.openreg.empty_cache()
        assert ember.openreg.memory_allocated(0) == base
        try:
            ember.empty(9 << 20, dtype=ember.uint8, device="openreg:1")
        except OutOfMemoryError as e:
            assert "openreg:1: out of memory trying to allocate 9.00 MiB" in str(e), str(e)
            assert "limit 8.00 MiB" in str(e), str(e)
        else:
            raise AssertionError("no OutOfMemoryError")
        try:
            ember.ones(2, device="openreg:2")
        except RuntimeError as e:
            assert "invalid device index 2" in str(e), str(e)
        else:
            raise AssertionError("openreg:2 did not raise")
    """, EMBER_OPENREG_MEMORY="8M")


def test_installed_kernels_are_queued_on_the_worker_thread(venv):
    run(venv, """
        import threading, warnings, numpy as np, ember
        warnings.simplefilter("error")          # no CPU fallback on this path
        x = ember.ones(256, 256, device="openreg")
        s = ember.openreg.current_stream()
        gate, ids = threading.Event(), []
        s.launch("gate", gate.wait)              # hold the stream, then launch behind it
        y = (x @ x).relu() + 1                   # returns: the kernels are queued, not run
        s.launch("probe", lambda: ids.append(threading.get_ident()))
        assert not s.query() and ids == []
        gate.set()
        assert y.sum().item() == 257 * 256 * 256 # .item() waits for the stream
        assert s.query() and ids and ids[0] != threading.get_ident()
        big = ember.randn(1200, 1200, device="openreg")
        ember.openreg.synchronize()
        z = big @ big
        busy = not s.query()                     # a big matmul is still running
        ember.openreg.synchronize()
        assert busy and s.query() and z.shape == (1200, 1200)
    """)


def test_installed_memory_is_never_aliased_with_the_host(venv):
    run(venv, """
        import numpy as np, ember
        from ember.runtime.registry import registry
        arena = registry.get("openreg").allocator(0).arena.buffer
        host = np.arange(6, dtype=np.float32)
        t = ember.from_numpy(host).to("openreg")
        host[:] = -1                                  # the upload copied
        back = t.cpu().numpy()
        assert back.tolist() == [0, 1, 2, 3, 4, 5]
        assert np.shares_memory(t._storage.data, arena)
        assert not np.shares_memory(back, arena)
        back[:] = 7                                   # the download copied too
        assert t.cpu().numpy().tolist() == [0, 1, 2, 3, 4, 5]
        try:
            t.numpy()
        except TypeError as e:
            assert "can't convert openreg device type tensor to numpy" in str(e)
        else:
            raise AssertionError("numpy() of a device tensor did not raise")
    """)


def test_installed_autograd_mlp_matches_cpu_natively(venv):
    run(venv, """
        import warnings, numpy as np, ember
        rng = np.random.default_rng(0)
        data = [rng.standard_normal(s).astype(np.float32) for s in [(8, 16), (16,), (16, 1),
                                                                      (32, 8), (32, 1)]]
        def train(device):
            W1, b1, W2, X, Y = [ember.tensor(a, device=device) for a in data]
            for p in (W1, b1, W2):
                p.requires_grad_(True)
            for _ in range(3):
                err = ember.relu(X @ W1 + b1) @ W2 - Y
                loss = (err * err).mean()
                loss.backward()
                with ember.no_grad():
                    for p in (W1, b1, W2):
                        p.sub_(p.grad * 0.05)
                        p.grad = None
            return loss.item(), [p.detach().cpu().numpy() for p in (W1, b1, W2)]
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # the MLP's hot path has no CPU fallback
            loss, params = train("openreg:1")
        ref_loss, ref = train("cpu")
        np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
        for p, r in zip(params, ref):
            np.testing.assert_allclose(p, r, rtol=1e-5, atol=1e-6)
        x = ember.tensor(rng.standard_normal(5), device="openreg", requires_grad=True)
        ember.autograd.gradcheck(lambda x: (ember.exp(x) * x).sum(), (x,))
    """)


def test_installed_devices_rng_and_fallback(venv):
    run(venv, """
        import warnings, numpy as np, ember
        a = ember.arange(4.0, device="openreg:1")
        b = a.to("openreg:0")
        assert (a * 2).device == ember.device("openreg:1") and b.tolist() == [0, 1, 2, 3]
        try:
            a + b
        except RuntimeError as e:
            assert "Expected all tensors to be on the same device" in str(e), str(e)
        else:
            raise AssertionError("mixing openreg:0 and openreg:1 did not raise")
        ember.manual_seed(7)
        r1 = [ember.randn(4, device=d).tolist() for d in ("openreg:0", "openreg:1")]
        state = ember.openreg.get_rng_state(0)
        later = ember.rand(3, device="openreg:0").tolist()
        ember.manual_seed(7)
        r2 = [ember.randn(4, device=d).tolist() for d in ("openreg:0", "openreg:1")]
        assert r1 == r2
        ember.openreg.set_rng_state(state, 0)
        assert ember.rand(3, device="openreg:0").tolist() == later
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            s = ember.sort(ember.tensor([3.0, 1.0, 2.0], device="openreg")).values
        assert s.device.type == "openreg" and s.tolist() == [1.0, 2.0, 3.0]
        assert any("'sort' has no kernel for backend 'openreg'" in str(w.message) for w in rec)
    """)


def test_installed_extra_op_and_kernel_isolation(venv):
    run(venv, """
        import numpy as np, ember
        from ember.library import Library
        rng = np.random.default_rng(1)
        x_np, b_np = rng.standard_normal((4, 3)), rng.standard_normal(3)
        x, b = ember.tensor(x_np, device="openreg"), ember.tensor(b_np, device="openreg")
        fused = ember.ops.openreg.fused_bias_gelu
        u = x_np + b_np
        expected = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))
        np.testing.assert_allclose(fused(x, b).cpu().numpy(), expected, rtol=1e-12)
        np.testing.assert_allclose(fused(x.cpu(), b.cpu()).numpy(), expected, rtol=1e-12)
        xg = x.detach().requires_grad_(True)          # with autograd: the composite
        ember.autograd.gradcheck(lambda t: fused(t, b), (xg,))

        # the library a plugin gets may only write its own backends' kernel tables
        own = Library("openreg_extra", "FRAGMENT", allowed_devices={"openreg"})
        try:
            own.impl("ember::add", lambda *a: None, "cpu")
        except RuntimeError as e:
            assert "may only register kernels for ['openreg'], not 'cpu'" in str(e), str(e)
        else:
            raise AssertionError("a plugin library wrote the CPU's kernel table")
        def bad_add(a, b, alpha, compute):
            raise ValueError("bad openreg add")
        own.impl("ember::add", bad_add, "openreg")    # a broken kernel, for openreg only
        assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]
        try:
            ember.ones(2, device="openreg") + 1
        except ValueError as e:
            assert "bad openreg add" in str(e)
        else:
            raise AssertionError("the openreg override did not run")
    """)


def test_installed_conformance_subset_passes(venv):
    out = run(venv, """
        import sys
        from ember_conformance.cli import main
        sys.exit(main(["--backend", "openreg", "--ops", "add,mul,matmul,sum"]))
    """, COLUMNS="200")
    assert "4 op entries" in out and "fail" not in out.split("op entries")[1].split("\\n")[0]
    assert "stream_ordering_with_wait_event" in out and "allocator_statistics" in out


def test_installed_nn_and_serialization(venv):
    import ember
    if not (hasattr(ember, "nn") and hasattr(ember, "optim")):
        pytest.skip("ember.nn / ember.optim are not available yet")
    run(venv, """
        import ember
        nn = ember.nn
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to("openreg")
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        x, y = ember.randn(16, 4, device="openreg"), ember.randn(16, 1, device="openreg")
        losses = []
        for _ in range(20):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[-1] < losses[0], losses
        if hasattr(ember, "save"):
            import io
            buf = io.BytesIO()
            ember.save(model.state_dict(), buf)
            buf.seek(0)
            sd = ember.load(buf, map_location="openreg")
            assert all(v.device.type == "openreg" for v in sd.values())
    """)


def test_installed_cnn_layers_run_through_the_cpu_fallback(venv):
    """Convolution, pooling, batch norm (its running statistics written back) and the fused
    optimizer ops on a plug-in without kernels for them: the CPU fallback and the composites
    give the CPU's results (issue #20)."""
    run(venv, """
        import warnings, numpy as np, ember
        warnings.simplefilter("ignore")
        rng = np.random.default_rng(0)
        x_np = rng.standard_normal((4, 2, 8, 8)).astype(np.float32)
        def train(device):
            ember.manual_seed(0)
            n = ember.nn
            m = n.Sequential(n.Conv2d(2, 3, 3, padding=1), n.BatchNorm2d(3), n.ReLU(),
                             n.MaxPool2d(2), n.Flatten(), n.Linear(48, 5)).to(device)
            opt = ember.optim.Adam(m.parameters(), lr=0.01, fused=True)
            x = ember.tensor(x_np, device=device)
            y = ember.tensor([0, 1, 2, 3], device=device)
            for _ in range(2):
                opt.zero_grad()
                loss = n.functional.cross_entropy(m(x), y)
                loss.backward()
                opt.step()
            return [t.detach().cpu().numpy() for t in m.state_dict().values()]
        for a, b in zip(train("openreg"), train("cpu")):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    """)


def test_uninstall_leaves_ember_working(venv):
    r = subprocess.run(venv["pip"] + ["uninstall", "-y", "ember-openreg"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    run(venv, """
        import ember
        from ember.runtime.registry import registry
        assert "openreg" not in registry.names() and not hasattr(ember, "openreg")
        assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]
        try:
            ember.ones(1, device="openreg")
        except RuntimeError as e:
            assert "device type" in str(e), str(e)
        else:
            raise AssertionError("device='openreg' still works")
    """)
