"""Attention benchmarks (issue #15): ember vs torch (when installed) in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_attention.py \
        [--sections sdpa,long,opencl,encoder] [--reps 30] [--quick]

Sections:
  sdpa     SDPA (8, 8, 128, 64) float32 on the CPU, forward and forward+backward: ember's default
           choice (the blocked fused kernel) and its math path against torch at its default
           thread count and at one thread. Timings interleave ember and torch call by call, so
           load on the machine hits both alike; min and median of ``--reps`` calls.
  long     (1, 8, 4096, 64), causal and not: time against torch, and memory. Memory is measured
           two ways: tracemalloc's peak over the kernel call (numpy reports every allocation to
           it: exactly what the kernel allocates, outputs included) against the 512 MiB of the
           L x S score matrix; and, for ember and torch alike, the peak of resident memory
           above its level before one call, sampled every 0.5 ms in a fresh subprocess.
  opencl   the flash kernels against the math path on OpenCL, same shapes, with the device
           allocator's peak (ember.opencl.max_memory_allocated) over one forward + backward.
  encoder  TransformerEncoder(6 x TransformerEncoderLayer(256, 8, batch_first=True)), batch 16,
           seq 128: one training step (forward, MSE loss, backward, AdamW step) per call, with
           dropout 0.1 (torch's default: SDPA takes the math path in both libraries) and 0.0
           (ember's fused kernels), on the CPU against torch and on OpenCL. A diagnostic row
           runs ember's CPU step with OpenBLAS held to one thread (threadpoolctl): the linear
           layers' matmuls dominate the step, and OpenBLAS's own threads lose much time when
           the machine's cores are shared.

Ratios are ember / torch: below 1 means ember is faster.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np

import ember
import ember.nn.functional as EF
from ember.kit import attention as kit_attention
from ember.nn.attention import SDPBackend, last_sdpa_backend, sdpa_kernel

try:
    import torch
except ImportError:  # torch is optional: the comparison column is left empty
    torch = None


def interleaved(fns, reps):
    """{name: [seconds per call]} running the functions in turn, ``reps`` rounds."""
    for fn in fns.values():
        fn()
        fn()
    times = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def report(title, times, base=None):
    print(f"\n{title}")
    ref = None if base is None else (min(times[base]), statistics.median(times[base]))
    for name, ts in times.items():
        lo, med = min(ts) * 1e3, statistics.median(ts) * 1e3
        ratio = "" if ref is None or name == base else \
            f"   ratio vs {base}: min {lo / (ref[0] * 1e3):.2f}x  median " \
            f"{med / (ref[1] * 1e3):.2f}x"
        print(f"  {name:34s} min {lo:9.2f} ms  median {med:9.2f} ms{ratio}")


def arrays(shape, n=3, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


def ember_calls(device, data, backend=None, **kw):
    """(forward, forward+backward) closures on ember tensors of ``data``."""
    q, k, v = (ember.tensor(a, device=device) for a in data)
    qg, kg, vg = (ember.tensor(a, device=device, requires_grad=True) for a in data)
    sync = (lambda t: t.sum().item()) if device != "cpu" else (lambda t: None)

    def fwd():
        with sdpa_kernel(backend) if backend is not None else _null():
            sync(EF.scaled_dot_product_attention(q, k, v, **kw))

    def fwd_bwd():
        with sdpa_kernel(backend) if backend is not None else _null():
            out = EF.scaled_dot_product_attention(qg, kg, vg, **kw)
        out.sum().backward()
        sync(qg.grad)
        qg.grad = kg.grad = vg.grad = None
    fwd()
    if backend is not None:  # the rows must time what they are labelled with
        assert last_sdpa_backend() is backend, (last_sdpa_backend(), backend)
    return fwd, fwd_bwd


def torch_calls(data, **kw):
    q, k, v = (torch.tensor(a) for a in data)
    qg, kg, vg = (torch.tensor(a, requires_grad=True) for a in data)
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def fwd():
        sdpa(q, k, v, **kw)

    def fwd_bwd():
        sdpa(qg, kg, vg, **kw).sum().backward()
        qg.grad = kg.grad = vg.grad = None
    return fwd, fwd_bwd


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# -- sections -------------------------------------------------------------------------------------
def section_sdpa(args):
    shape = (8, 8, 128, 64)
    data = arrays(shape)
    e_fwd, e_fb = ember_calls("cpu", data)
    m_fwd, m_fb = ember_calls("cpu", data, SDPBackend.MATH)
    e_fwd()
    chosen = f"ember ({last_sdpa_backend().name})"
    default_threads = torch.get_num_threads() if torch else None
    # torch's thread count is set once per group: switching it call by call costs more than
    # the call
    for threads in ([default_threads, 1] if torch else [None]):
        print(f"\n== SDPA {shape} float32, CPU (ember's fused kernel: "
              f"{kit_attention.threads()} threads; torch: {threads} threads)")
        fwd = {chosen: e_fwd, "ember (MATH)": m_fwd}
        fb = {chosen: e_fb, "ember (MATH)": m_fb}
        base = None
        if torch is not None:
            torch.set_num_threads(threads)
            base = f"torch ({threads} thread{'s' if threads > 1 else ''})"
            fwd[base], fb[base] = torch_calls(data)
        try:
            report("forward", interleaved(fwd, args.reps), base)
            report("forward + backward", interleaved(fb, args.reps), base)
        finally:
            if torch is not None:
                torch.set_num_threads(default_threads)


def _rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _memory_child(lib, shape, causal, backward):
    """Run in a fresh process: the peak of resident memory above its level before one call
    (sampled every 0.5 ms from /proc/self/statm), in MiB, as JSON."""
    import threading
    data = arrays(shape)
    if lib == "ember":
        ts = [ember.tensor(a, requires_grad=backward) for a in data]
        fn = EF.scaled_dot_product_attention
    else:
        ts = [torch.tensor(a, requires_grad=backward) for a in data]
        fn = torch.nn.functional.scaled_dot_product_attention
    peak, done = [0.0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mib())
            time.sleep(0.0005)
    before = _rss_mib()
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        out = fn(*ts, is_causal=causal)
        if backward:
            out.sum().backward()
    finally:
        done.set()
        sampler.join()
    print(json.dumps({"rss_growth_mib": max(peak[0], _rss_mib()) - before}))


def _rss_growth(lib, shape, causal, backward):
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import bench_attention as b; b._memory_child({lib!r}, {shape!r}, {causal!r}, "
            f"{backward!r})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["rss_growth_mib"]


def section_long(args):
    shape = (1, 8, 4096, 64)
    scores_mib = shape[0] * shape[1] * shape[2] * shape[2] * 4 / 2**20
    print(f"\n== SDPA {shape} float32, CPU: the L x S scores would take {scores_mib:.0f} MiB")
    data = arrays(shape)
    from ember.runtime.registry import registry
    kit = kit_attention
    cpu = registry.get("cpu")
    q, k, v = (ember.tensor(a) for a in data)
    for causal in (False, True):
        tracemalloc.start()
        out, lse = kit.sdpa_fused_forward(cpu, q, k, v, None, causal, 0.125)
        fwd_peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        tracemalloc.start()
        kit.sdpa_fused_backward(cpu, q, q, k, v, None, out, lse, causal, 0.125)
        bwd_peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        outputs = (out.nbytes + lse.nbytes) / 2**20
        print(f"  causal={causal}: tracemalloc peak forward {fwd_peak:.1f} MiB (outputs "
              f"{outputs:.1f} MiB), backward {bwd_peak:.1f} MiB (gradients "
              f"{3 * q.nbytes / 2**20:.1f} MiB) = {fwd_peak / scores_mib:.3f} and "
              f"{bwd_peak / scores_mib:.3f} of the score matrix")
    for backward in (False, True):
        row = {"ember": _rss_growth("ember", shape, False, backward)}
        if torch is not None:
            row["torch"] = _rss_growth("torch", shape, False, backward)
        what = "forward+backward" if backward else "forward"
        print(f"  peak resident memory above the inputs over one {what} call (fresh process, "
              f"sampled): " +
              ", ".join(f"{k_} {v_:.0f} MiB" for k_, v_ in row.items()))
    reps = max(3, args.reps // 6)
    for causal in (False, True):
        e_fwd, e_fb = ember_calls("cpu", data, is_causal=causal)
        fwd, fb = {"ember": e_fwd}, {"ember": e_fb}
        if torch is not None:
            t_fwd, t_fb = torch_calls(data, is_causal=causal)
            fwd["torch"], fb["torch"] = t_fwd, t_fb
        base = "torch" if torch else None
        report(f"forward, causal={causal}", interleaved(fwd, reps), base)
        report(f"forward + backward, causal={causal}", interleaved(fb, reps), base)


def section_opencl(args):
    if not ember.opencl.is_available():
        print(f"\n== OpenCL: unavailable ({ember.opencl.unavailable_reason()})")
        return
    print(f"\n== OpenCL ({ember.opencl.get_device_name(0)}): flash kernels vs the math path")
    shapes = [(8, 8, 128, 64)] + ([] if args.quick else [(1, 8, 4096, 64)])
    for shape in shapes:
        data = arrays(shape)
        reps = args.reps if shape[2] <= 512 else 2
        f_fwd, f_fb = ember_calls("opencl", data, SDPBackend.FLASH_ATTENTION)
        m_fwd, m_fb = ember_calls("opencl", data, SDPBackend.MATH)
        report(f"{shape} forward", interleaved({"math": m_fwd, "flash": f_fwd}, reps), "math")
        report(f"{shape} forward + backward", interleaved({"math": m_fb, "flash": f_fb}, reps),
               "math")
        peaks = {}
        for name, fn in (("math", m_fb), ("flash", f_fb)):
            ember.opencl.synchronize()
            ember.opencl.reset_peak_memory_stats()
            base = ember.opencl.memory_allocated()
            fn()
            peaks[name] = (ember.opencl.max_memory_allocated() - base) / 2**20
        print(f"  allocator peak over one forward + backward (above the inputs): " +
              ", ".join(f"{k_} {v_:.1f} MiB" for k_, v_ in peaks.items()) +
              f" (L x S scores: {shape[0] * shape[1] * shape[2] ** 2 * 4 / 2**20:.0f} MiB)")


def _encoder(lib, dropout, device=None):
    n = lib.nn
    layer = n.TransformerEncoderLayer(256, 8, dim_feedforward=1024, dropout=dropout,
                                      batch_first=True)
    model = n.TransformerEncoder(layer, 6, enable_nested_tensor=False)
    return model if device is None else model.to(device)


def _training_step(lib, model, x, target):
    opt = lib.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        loss = lib.nn.functional.mse_loss(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()
    return step


def section_encoder(args):
    print("\n== TransformerEncoder: 6 layers, d_model 256, 8 heads, ff 1024, batch 16, seq 128:"
          " one training step (forward, MSE, backward, AdamW)")
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((16, 128, 256)).astype(np.float32)
    t_np = rng.standard_normal((16, 128, 256)).astype(np.float32)
    reps = max(3, args.reps // 6)
    for dropout in (0.1, 0.0):
        steps = {}
        ember.manual_seed(0)
        em = _encoder(ember, dropout)
        steps["ember cpu"] = _training_step(ember, em, ember.tensor(x_np), ember.tensor(t_np))
        try:  # a diagnostic: the CPU backend's matmuls with OpenBLAS held to one thread
            from threadpoolctl import threadpool_limits
            em1 = _encoder(ember, dropout)
            em1.load_state_dict(em.state_dict())
            plain = _training_step(ember, em1, ember.tensor(x_np), ember.tensor(t_np))

            def one_blas_thread(plain=plain):
                with threadpool_limits(1, "blas"):
                    plain()
            steps["ember cpu, BLAS 1 thread"] = one_blas_thread
        except ImportError:
            pass
        if torch is not None:
            torch.manual_seed(0)
            tm = _encoder(torch, dropout)
            steps["torch cpu"] = _training_step(torch, tm, torch.tensor(x_np),
                                                torch.tensor(t_np))
        if ember.opencl.is_available() and not args.quick:
            eo = _encoder(ember, dropout, "opencl")
            steps["ember opencl"] = _training_step(
                ember, eo, ember.tensor(x_np, device="opencl"),
                ember.tensor(t_np, device="opencl"))
        report(f"dropout {dropout}", interleaved(steps, reps), "torch cpu" if torch else None)
        em.train()
        em(ember.tensor(x_np[:1]))
        print(f"  ember's SDPA choice in training: {last_sdpa_backend().name}")


SECTIONS = {"sdpa": section_sdpa, "long": section_long, "opencl": section_opencl,
            "encoder": section_encoder}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sections", default=",".join(SECTIONS))
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--quick", action="store_true", help="fewer and smaller cases")
    args = p.parse_args(argv)
    print(f"ember {ember.__version__ if hasattr(ember, '__version__') else ''} numpy "
          f"{np.__version__}, torch {torch.__version__ if torch else 'not installed'}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    for name in args.sections.split(","):
        SECTIONS[name.strip()](args)


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    main()
