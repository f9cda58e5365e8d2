"""CUDA benchmarks: ember beside torch on the same GPU, in one process (ratios > 1: ember is
slower). Needs an NVIDIA GPU, ember's CUDA backend and (for the comparison column) a CUDA build
of torch:

    python bench/bench_cuda.py [--quick] [--out results.json] [--cases matmul,latency,gpt,nccl]

Cases:
* **matmul**: C = A @ B of n x n matrices (n = 8192; 4096 with --quick), TFLOP/s, in float32
  (full precision), TF32 (``set_float32_matmul_precision("high")``), float16 and bfloat16;
* **latency**: microseconds per op issued back to back and synchronized once (the launch
  overhead a training step pays per op): add/mul/sum of 8 elements, add of 1M elements;
* **gpt**: ms per training step of ``bench/tiny_gpt.py`` (vocab 8192, context 256, width 512,
  8 heads, 4 layers, batch 16; AdamW), in float32 and under bfloat16 autocast;
* **nccl**: all-reduce of 64 MiB on one GPU (a world of one rank; no MPI needed), GB/s.

ember and torch run interleaved rounds; each number is the best round (timing noise only ever
adds). The JSON written with ``--out`` holds every number and the issue #33 targets: bfloat16
GEMM >= 70% of torch's TFLOP/s, the GPT step <= 1.5x torch's time.
"""
from __future__ import annotations

import sys
import argparse
import json
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_gpt  # noqa: E402


def _sync(lib):
    lib.cuda.synchronize()


def _best(fns, repeat, rounds):
    """{name: best seconds per call} over interleaved rounds of ``repeat`` calls each."""
    for name, (fn, lib) in fns.items():
        fn()
        _sync(lib)
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, (fn, lib) in fns.items():
            _sync(lib)
            t = time.perf_counter()
            for _ in range(repeat):
                fn()
            _sync(lib)
            best[name] = min(best[name], (time.perf_counter() - t) / repeat)
    return best


def _libs(torch):
    import ember
    out = {"ember": ember}
    if torch is not None:
        out["torch"] = torch
    return out


def case_matmul(libs, quick):
    n = 4096 if quick else 8192
    rows = []
    for label, dtype, precision in (("float32", "float32", "highest"),
                                    ("tf32", "float32", "high"), ("float16", "float16", None),
                                    ("bfloat16", "bfloat16", None)):
        fns = {}
        for name, lib in libs.items():
            a = lib.randn(n, n, device="cuda").to(getattr(lib, dtype))
            b = lib.randn(n, n, device="cuda").to(getattr(lib, dtype))

            def run(lib=lib, a=a, b=b, precision=precision):
                if precision is not None:
                    lib.set_float32_matmul_precision(precision)
                return a @ b
            fns[name] = (run, lib)
        best = _best(fns, repeat=5 if quick else 10, rounds=3)
        for lib in libs.values():
            lib.set_float32_matmul_precision("highest")
        rows.append({"case": f"matmul {n}^3 {label}", "unit": "TFLOP/s",
                     **{k: 2 * n ** 3 / v / 1e12 for k, v in best.items()}})
    return rows


def case_latency(libs, quick):
    rows = []
    for label, make in (("add 8", lambda lib, x: (lambda: x + x)),
                        ("mul 8", lambda lib, x: (lambda: x * 2.0)),
                        ("sum 8", lambda lib, x: (lambda: x.sum()))):
        fns = {name: (make(lib, lib.randn(8, device="cuda")), lib) for name, lib in libs.items()}
        best = _best(fns, repeat=200 if quick else 1000, rounds=3)
        rows.append({"case": f"latency {label}", "unit": "us/op",
                     **{k: v * 1e6 for k, v in best.items()}})
    fns = {}
    for name, lib in libs.items():
        big = lib.randn(1 << 20, device="cuda")
        fns[name] = ((lambda big=big: big + big), lib)
    best = _best(fns, repeat=100, rounds=3)
    rows.append({"case": "latency add 1M", "unit": "us/op", **{k: v * 1e6 for k, v in
                                                                 best.items()}})
    return rows


def case_gpt(libs, quick):
    shape = dict(batch=8 if quick else 16, vocab=8192, ctx=128 if quick else 256,
                 dim=512, heads=8, layers=4)
    rows = []
    for label, amp in (("float32", False), ("bf16 autocast", True)):
        fns = {}
        for name, lib in libs.items():
            step, _ = tiny_gpt.training_step(lib, "cuda", **shape)

            def run(step=step, lib=lib, amp=amp):
                if amp:
                    with lib.autocast("cuda", dtype=lib.bfloat16):
                        return step()
                return step()
            fns[name] = (run, lib)
        best = _best(fns, repeat=3 if quick else 10, rounds=3)
        rows.append({"case": f"gpt step {label}", "unit": "ms",
                     **{k: v * 1e3 for k, v in best.items()}})
    return rows


def case_nccl(libs, quick):
    import ember
    from ember.distributed._types import RedOpType
    from ember.distributed.backend import BackendContext
    from ember.runtime import registry
    from ember_cuda.nccl import ProcessGroupNCCL
    n = (64 << 20) // 4
    be = registry.get("cuda")
    ctx = BackendContext("bench", 0, 1, [0], timedelta(seconds=60), ["cuda"])
    pg = ProcessGroupNCCL(ctx, be, be._api.nccl_module())
    x = ember.ones(n, device="cuda")
    fns = {"ember": ((lambda: pg.allreduce(x, RedOpType.SUM).wait()), ember)}
    torch = libs.get("torch")
    if torch is not None:
        import torch.distributed as tdist
        if not tdist.is_initialized():
            tdist.init_process_group("nccl", store=tdist.HashStore(), rank=0, world_size=1,
                                     device_id=torch.device("cuda", 0))
        t = torch.ones(n, device="cuda")
        fns["torch"] = ((lambda: tdist.all_reduce(t)), torch)
    best = _best(fns, repeat=5 if quick else 20, rounds=3)
    pg.shutdown()
    return [{"case": "nccl all_reduce 64 MiB (1 GPU)", "unit": "GB/s",
             **{k: n * 4 / v / 1e9 for k, v in best.items()}}]


CASES = {"matmul": case_matmul, "latency": case_latency, "gpt": case_gpt, "nccl": case_nccl}
HIGHER_IS_BETTER = {"TFLOP/s", "GB/s"}


def targets(rows):
    """The issue's targets, checked where both numbers exist."""
    out = {}
    for r in rows:
        if "torch" not in r or "ember" not in r:
            continue
        if r["case"].endswith("bfloat16") and r["case"].startswith("matmul"):
            out["bf16 GEMM >= 70% of torch"] = {"ratio": r["ember"] / r["torch"],
                                               "met": r["ember"] >= 0.7 * r["torch"]}
        if r["case"] == "gpt step float32":
            out["GPT step <= 1.5x torch"] = {"ratio": r["ember"] / r["torch"],
                                            "met": r["ember"] <= 1.5 * r["torch"]}
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args(argv)
    import ember
    if not ember.cuda.is_available():
        print(f"no GPU: ember's CUDA backend is unavailable: {ember.cuda.unavailable_reason()}")
        return 3
    try:
        import torch
        if not torch.cuda.is_available():
            print("torch has no CUDA here: ember's numbers only")
            torch = None
    except ImportError:
        print("torch is not installed: ember's numbers only")
        torch = None
    libs = _libs(torch)
    rows, errors = [], {}

    def save():   # after every case: a run cut short keeps what it measured
        if args.out:
            Path(args.out).write_text(json.dumps({
                "device": ember.cuda.get_device_name(), "quick": args.quick,
                "torch": None if torch is None else torch.__version__, "rows": rows,
                "targets": targets(rows), "errors": errors}, indent=2))
    for name in [c.strip() for c in args.cases.split(",") if c.strip()]:
        done = len(rows)
        try:
            rows += CASES[name](libs, args.quick)
        except Exception as e:   # one failing case must not hide the others
            errors[name] = f"{type(e).__name__}: {e}"
            print(f"case {name} failed: {errors[name]}", flush=True)
        save()
        for r in rows[done:]:
            print("  ", r, flush=True)
    print(f"device: {ember.cuda.get_device_name()}"
          + (f"  (torch {torch.__version__})" if torch is not None else ""))
    print(f"{'case':36} {'unit':8} {'ember':>10} {'torch':>10} {'ember/torch':>12}")
    for r in rows:
        e, t = r.get("ember"), r.get("torch")
        ratio = "" if t is None or e is None else f"{e / t:12.2f}"
        print(f"{r['case']:36} {r['unit']:8} {e:10.3f} " +
              (f"{t:10.3f} " if t is not None else f"{'-':>10} ") + ratio)
    goals = targets(rows)
    for name, g in goals.items():
        print(f"target {name}: {'met' if g['met'] else 'NOT met'} (ratio {g['ratio']:.2f})")
    save()
    return 1 if errors else 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    sys.exit(main())
