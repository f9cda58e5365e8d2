"""ember.compile against eager ember and torch (eager, and torch.compile when it runs here).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_compile.py [--threads 2]

Cases (issue #19):
  * sin(x) + cos(x) and a 10-op elementwise chain on 1M float32 elements: ember's fused C loop
    against torch.compile (inductor) and torch eager; on OpenCL, compiled vs eager;
  * an MLP 784-256-256-10 training step, batch 64, SGD(momentum=0.9), compiled with
    mode="reduce-overhead" (forward, backward and optimizer captured as one graph), against
    torch eager, with ember eager beside it;
  * a small GPT training step (nanoGPT's vendored model.py, AdamW, grad clipping): ember eager,
    compile(model), the whole step under mode="reduce-overhead", torch eager;
  * compile time of each: the first call (capture + C compile) with an empty kernel cache.
Times are the minimum of interleaved rounds after a warm-up. On a loaded machine use
``--threads 1 --cpu-time`` with ``OPENBLAS_NUM_THREADS=1``: the thread's CPU clock ignores the
time other processes take the core."""
from __future__ import annotations

import sys
import argparse
import os
import tempfile
import time

import numpy as np

# an empty kernel cache, so "compile ms" includes the C compiler
os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember-bench-"))

import ember  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


_clock = time.perf_counter


def _best(fn, rounds=15, number=10):
    for _ in range(number * 2):     # warm up: OpenMP threads, page faults of fresh outputs
        fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = _clock()
        for _ in range(number):
            fn()
        best = min(best, (_clock() - t0) / number)
    return best * 1e3


def sin_cos(lib, x):
    return lib.sin(x) + lib.cos(x)


def chain10(lib, x):
    y = x * 1.5 + 0.5
    y = lib.tanh(y) * y - x
    y = lib.exp(-y.abs()) + lib.sigmoid(y)
    return lib.relu(y) / (1.0 + x * x)


def _first_call_ms(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - t0) * 1e3


def elementwise(devices):
    data = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    tx = torch.tensor(data) if torch is not None else None
    print(f"{'case':<24}{'device':<8}{'ember eager':>12}{'compiled':>10}{'torch':>9}"
          f"{'torch.compile':>15}{'compiled/best torch':>21}{'compile ms':>12}")
    for name, fn in (("sin+cos 1M", sin_cos), ("10-op chain 1M", chain10)):
        tc = ref = float("nan")
        if torch is not None:
            ref = _best(lambda: fn(torch, tx))
            try:
                tcomp = torch.compile(lambda t, fn=fn: fn(torch, t))
                tcomp(tx)
                tc = _best(lambda: tcomp(tx))
            except Exception:  # noqa: BLE001 - no C compiler / inductor here: leave it empty
                tc = float("nan")
        for dev in devices:
            x = ember.tensor(data, device=dev)
            sync = (lambda: ember.opencl.synchronize()) if dev == "opencl" else (lambda: None)
            compiled = ember.compile(lambda t, fn=fn: fn(ember, t))
            compile_ms = _first_call_ms(compiled, x) + _first_call_ms(compiled, x)
            eager = _best(lambda: (fn(ember, x), sync()))
            fast = _best(lambda: (compiled(x), sync()))
            ratio = fast / np.nanmin([ref, tc]) if dev == "cpu" and torch is not None \
                else float("nan")
            print(f"{name:<24}{dev:<8}{eager:>12.3f}{fast:>10.3f}{ref:>9.3f}{tc:>15.3f}"
                  f"{ratio:>21.2f}{compile_ms:>12.1f}")


def mlp_step():
    from bench_train import mlp, step_fn   # the same model and step as bench_train.py
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((64, 784)).astype(np.float32)
    ys = rng.integers(0, 10, 64)

    def make(lib):
        model = mlp(lib)
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = lib.nn.CrossEntropyLoss()

        def step(x, y):
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        return step
    x, y = ember.tensor(xs), ember.tensor(ys)
    eager = make(ember)
    compiled = ember.compile(make(ember), mode="reduce-overhead")
    compile_ms = sum(_first_call_ms(compiled, x, y) for _ in range(3))   # warm-up + 2 captures
    cases = [("ember eager", lambda: eager(x, y)), ("ember compiled", lambda: compiled(x, y))]
    if torch is not None:
        tstep = make(torch)
        tx, ty = torch.tensor(xs), torch.tensor(ys)
        cases.append(("torch eager", lambda: tstep(tx, ty)))
    times = {}
    for _ in range(3):               # interleaved: the minimum of each over three passes
        for name, fn in cases:
            times[name] = min(times.get(name, float("inf")), _best(fn, rounds=10, number=10))
    print(f"\nMLP 784-256-256-10 step b64 SGD(momentum)   compile (3 calls) {compile_ms:.0f} ms")
    for name, _ in cases:
        extra = f"   {times[name] / times['torch eager']:.2f}x torch" if "torch eager" in times \
            else ""
        print(f"  {name:<16}{times[name]:>8.3f} ms{extra}")
    del step_fn


def _nanogpt(lib):
    """nanoGPT's model.py (tests/vendored) as a module for ``lib`` (ember, or torch: the
    original imports back)."""
    import types
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "vendored")
    with open(os.path.join(root, "nanogpt_model.py")) as f:
        src = f.read()
    if lib is not ember:
        src = src.replace("import ember as torch", "import torch") \
            .replace("import ember.nn as nn", "import torch.nn as nn") \
            .replace("from ember.nn import functional as F", "from torch.nn import functional as F")
    import sys
    name = f"nanogpt_{lib.__name__}"
    mod = sys.modules[name] = types.ModuleType(name)     # dataclasses look their module up
    exec(compile(src, f"nanogpt_model.py ({lib.__name__})", "exec"), mod.__dict__)
    return mod


def gpt_step():
    """A small GPT training step (nanoGPT's model: 2 layers, 4 heads, d=64, 32 tokens, batch
    8; AdamW from its configure_optimizers, clip_grad_norm_ 1.0): ember eager, ember with
    ``torch.compile(model)``, the whole step under mode="reduce-overhead" (tensor lr), torch
    eager."""
    import contextlib
    import io
    cfg = dict(block_size=32, vocab_size=65, n_layer=2, n_head=4, n_embd=64, dropout=0.0,
               bias=True)
    rng = np.random.default_rng(0)
    X, Y = rng.integers(0, 65, (8, 32)), rng.integers(0, 65, (8, 32))

    def make(lib, how=None):
        M = _nanogpt(lib)
        with contextlib.redirect_stdout(io.StringIO()):
            model = M.GPT(M.GPTConfig(**cfg))
            opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")
        x, y = lib.tensor(X), lib.tensor(Y)
        if how == "step":
            for g in opt.param_groups:
                g["lr"] = ember.tensor(1e-3)
        net = ember.compile(model) if how == "model" else model

        def step():
            logits, loss = net(x, y)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss
        return ember.compile(step, mode="reduce-overhead") if how == "step" else step
    cases = [("ember eager", make(ember)), ("ember compile(model)", make(ember, "model")),
             ("ember reduce-overhead", make(ember, "step"))]
    compile_ms = {name: sum(_first_call_ms(fn) for _ in range(3)) for name, fn in cases[1:]}
    if torch is not None:
        cases.append(("torch eager", make(torch)))
    times = {}
    for _ in range(3):
        for name, fn in cases:
            times[name] = min(times.get(name, float("inf")), _best(fn, rounds=5, number=5))
    print("\nGPT step (nanoGPT 2x4x64, 8x32 tokens, AdamW, clip 1.0)")
    for name, _ in cases:
        extra = f"   {times[name] / times['torch eager']:.2f}x torch" if "torch eager" in times \
            else ""
        first = f"   compile (3 calls) {compile_ms[name]:.0f} ms" if name in compile_ms else ""
        print(f"  {name:<24}{times[name]:>8.3f} ms{extra}{first}")
    speedup = times["ember eager"] / times["ember reduce-overhead"]
    print(f"  compiled step / ember eager: {speedup:.2f}x faster")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--cpu-time", action="store_true",
                        help="time with the thread's CPU clock (robust on a loaded machine; "
                             "use with --threads 1 and OPENBLAS_NUM_THREADS=1)")
    parser.add_argument("--cases", default="elementwise,mlp,gpt")
    opts = parser.parse_args()
    if opts.cpu_time:
        global _clock
        _clock = time.thread_time
    if opts.threads:
        ember.set_num_threads(opts.threads)
        if torch is not None:
            torch.set_num_threads(opts.threads)
    devices = ["cpu"]
    try:
        if ember.opencl.is_available():
            devices.append("opencl")
    except Exception:  # noqa: BLE001 - no OpenCL plug-in: CPU only
        pass
    cases = opts.cases.split(",")
    if "elementwise" in cases:
        elementwise(devices)
    if "mlp" in cases:
        mlp_step()
    if "gpt" in cases:
        gpt_step()


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
