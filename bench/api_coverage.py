"""How much of torch's public API ember has, per namespace (issue #25).

    python bench/api_coverage.py [--missing] [--excluded] [--json PATH] [--write-snapshot]

The reference lists come from torch when it is installed:

* ``torch``          functions of ``torch.overrides.get_testing_overrides()`` reachable as
                     ``torch.<name>`` (torch's own list of its public, overridable functions);
* ``Tensor``         the Tensor methods and attributes of the same list;
* ``nn.functional``  the public functions of ``torch.nn.functional``;
* ``nn``             the ``nn.Module`` subclasses exported by ``torch.nn`` (lazy modules too).

Without torch the lists are read from ``bench/api_coverage_torch.json``, a snapshot written by
``--write-snapshot`` (torch 2.13). ``torch.linalg``, ``torch.fft`` and ``torch.special`` are
printed for information but are not part of the total: they are separate issues (#22, #13).

A name counts as present when ember has an attribute of that name at the same place
(``ember.<name>``, ``ember.Tensor.<name>``, ``ember.nn.functional.<name>``, ``ember.nn.<name>``).
Deliberate exclusions are rules with a reason each (``EXCLUSIONS``); every excluded name is
printed with its reason under ``--excluded``. Missing names that another issue owns are tagged
with it (``OWNERS``), so the report says who will close each gap.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import sys

SNAPSHOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api_coverage_torch.json")

COUNTED = ("torch", "Tensor", "nn.functional", "nn")
INFORMATIONAL = ("linalg", "fft", "special")

# (namespaces, regex, reason): a name matching the regex in one of the namespaces is excluded
EXCLUSIONS: list[tuple[tuple[str, ...], str, str]] = [
    (("torch", "Tensor", "nn.functional"), r"^_(?!_)",
     "private name (one leading underscore): not public API"),
    (("Tensor",), r"^__(array_wrap|get|torch_function|torch_dispatch)__$",
     "protocol hook of torch's own machinery (numpy ufunc wrapping, descriptor, torch_function)"),
    (("torch", "Tensor"),
     r"^(q_|quantize_|quantized_|dequantize$|int_repr$|fake_quantize|fused_moving_avg_obs|"
     r"choose_qparams|qscheme$|_?wrapped_quantized)",
     "quantization: ember has no quantized dtypes or observers"),
    (("torch", "Tensor", "nn.functional"), r"^(cudnn_|miopen_|mkldnn_|fbgemm_|to_mkldnn$)",
     "vendor library internals (cuDNN, MIOpen, oneDNN, FBGEMM)"),
    (("torch", "Tensor"),
     r"^(sparse_(csr|csc|bsr|bsc|compressed)_tensor|(ccol|col|crow|row)_indices(_copy)?$|"
     r"to_sparse_(csr|csc|bsr|bsc)$)",
     "sparse compressed layouts (CSR/CSC/BSR/BSC); ember has strided and sparse COO"),
    (("torch", "Tensor"), r"^(sparse_resize_|sparse_resize_and_clear_|resize_as_sparse_|"
     r"saddmm|hsmm|dsmm|smm|sspaddmm)$",
     "undocumented sparse internals (torch's own docs do not list them)"),
    (("torch",), r"^sym_",
     "SymInt/SymFloat helpers of torch's symbolic tracer; ember.compile keeps its symbolic sizes "
     "inside its graphs (compiler/dynamic.py) and hands user code no SymInt"),
    (("Tensor",), r"^chalf$",
     "complex32 (torch.chalf), experimental in torch and CPU-less there: ember has no complex32 "
     "dtype"),
    (("torch",), r"^batch_norm_(stats|elemt|gather_stats.*|backward_.*|update_stats)$",
     "SyncBatchNorm's CUDA kernels, internal to nn.SyncBatchNorm"),
    (("torch", "nn.functional"),
     r"^(native_batch_norm|native_layer_norm|native_group_norm|native_dropout|native_norm|"
     r"native_channel_shuffle|grid_sampler|grid_sampler_2d|grid_sampler_3d|"
     r"affine_grid_generator|conv_tbc|norm_except_dim|segment_reduce|slice_inverse|"
     r"is_distributed|feature_dropout)$",
     "undocumented ATen entry point behind a documented function (torch's API reference omits it)"),
    (("Tensor",), r"^(slice_inverse|is_distributed|is_set_to|map2_|map_|apply_|index)$",
     "undocumented or CPU-only legacy Tensor internals (torch's API reference omits them)"),
    (("torch", "Tensor"), r"^hash_tensor$",
     "prototype added in torch 2.9 for torch.compile caches, undocumented"),
    (("Tensor",), r"^(storage|storage_type|record_stream|const_data_ptr|module_load|"
     r"share_memory_|is_shared|ipu|mtia|dim_order)$",
     "storage/stream/process-sharing internals or vendor devices ember has no backend for"),
    (("nn.functional",),
     r"^(Optional|assert_int_or_pair|boolean_dispatch|handle_torch_function|"
     r"has_torch_function(_unary|_variadic)?)$",
     "typing/helper name imported into torch.nn.functional, not an nn function"),
    (("nn.functional",), r"^(grouped_mm|scaled_mm|scaled_grouped_mm)$",
     "float8/grouped GEMM entry points for GPUs; ember has no float8 dtypes"),
    (("nn",), r"^(SyncBatchNorm)$",
     "cross-process batch norm over NCCL process groups (CUDA only in torch)"),
]

# missing names that another issue's branch provides: name or regex -> owner
OWNERS: list[tuple[str, str]] = [
    (r"^(conv[123]d|conv_transpose[123]d|convolution|Conv3d|ConvTranspose3d|LazyConv.*3d)$",
     "#20 conv"),
    (r"(pool|Pool)", "#20 pooling"),
    (r"^(batch_norm|layer_norm|group_norm|native_group_norm|native_layer_norm)$", "#20 norm"),
    (r"^(rnn_|lstm|gru|RNN|LSTM|GRU|quantized_rnn)", "#16 recurrent"),
    (r"^(stft|istft|angle|real|imag|view_as_real|view_as_complex|polar|complex|chalf|"
     r"view_as_real_copy|view_as_complex_copy|resolve_conj|resolve_neg|is_conj|is_neg|sgn|"
     r"sgn_)$", "#13 fft / complex"),
    (r"^(cholesky|cholesky_inverse|cholesky_solve|det|logdet|slogdet|inverse|pinverse|"
     r"matrix_exp|matrix_power|qr|svd|svd_lowrank|pca_lowrank|lobpcg|lu|lu_solve|lu_unpack|"
     r"geqrf|orgqr|ormqr|triangular_solve|nuclear_norm|frobenius_norm|chain_matmul|"
     r"i0|i0_|polygamma|polygamma_|mvlgamma|mvlgamma_|igamma|igamma_|igammac|igammac_|"
     r"binomial|poisson|cross)$", "#22 linalg / special / distributions"),
    (r"^(allclose|isclose|equal|DataParallel|cuda|xpu|Container)$", "#21 everyday surface"),
]


# ----------------------------------------------------------------------------- reference lists

def torch_lists() -> dict[str, list[str]]:
    import torch
    import torch.nn.functional as F

    overrides = torch.overrides.get_testing_overrides()
    out: dict[str, set[str]] = {ns: set() for ns in COUNTED + INFORMATIONAL}
    for fn in overrides:
        name = getattr(fn, "__name__", None)
        if isinstance(fn, property):
            out["Tensor"].add(fn.fget.__name__)
            continue
        if name is None:
            continue
        objclass = getattr(fn, "__objclass__", None)
        if objclass is not None and objclass.__name__ in ("TensorBase", "Tensor"):
            out["Tensor"].add(name)
        elif type(fn).__name__ == "getset_descriptor":
            out["Tensor"].add(name)
        elif getattr(fn, "__module__", None) == "torch._tensor":
            out["Tensor"].add(name)
        elif getattr(torch, name, None) is fn:
            out["torch"].add(name)
    for ns in INFORMATIONAL:
        mod = getattr(torch, ns)
        for name in dir(mod):
            obj = getattr(mod, name)
            if not name.startswith("_") and callable(obj) and not inspect.isclass(obj) \
                    and not inspect.ismodule(obj):
                out[ns].add(name)
    for name in dir(F):
        obj = getattr(F, name)
        if name.startswith("__") or inspect.isclass(obj) or inspect.ismodule(obj):
            continue
        if callable(obj):
            out["nn.functional"].add(name)
    for name in dir(torch.nn):
        obj = getattr(torch.nn, name)
        if inspect.isclass(obj) and issubclass(obj, torch.nn.Module):
            out["nn"].add(name)
    return {ns: sorted(names) for ns, names in out.items()}


def reference_lists() -> tuple[dict[str, list[str]], str]:
    try:
        import torch
    except ImportError:
        with open(SNAPSHOT) as f:
            snap = json.load(f)
        return snap["names"], f"snapshot of torch {snap['torch']} ({os.path.basename(SNAPSHOT)})"
    return torch_lists(), f"torch {torch.__version__}"


# ----------------------------------------------------------------------------- classification

def excluded_reason(ns: str, name: str) -> str | None:
    for namespaces, pattern, reason in EXCLUSIONS:
        if ns in namespaces and re.search(pattern, name):
            return reason
    return None


def owner_of(name: str) -> str | None:
    for pattern, owner in OWNERS:
        if re.search(pattern, name):
            return owner
    return None


def ember_has(ns: str, name: str) -> bool:
    import ember
    import ember.nn.functional as F
    where = {"torch": ember, "Tensor": ember.Tensor, "nn.functional": F, "nn": ember.nn}
    if ns in INFORMATIONAL:
        mod = getattr(ember, ns, None)
        return mod is not None and hasattr(mod, name)
    return hasattr(where[ns], name)


def coverage(lists: dict[str, list[str]]) -> dict[str, dict]:
    report = {}
    for ns in COUNTED + INFORMATIONAL:
        have, missing, excluded = [], [], {}
        for name in lists.get(ns, []):
            reason = excluded_reason(ns, name)
            if reason is not None:
                excluded[name] = reason
            elif ember_has(ns, name):
                have.append(name)
            else:
                missing.append(name)
        report[ns] = {"have": have, "missing": missing, "excluded": excluded}
    return report


def percent(n: int, d: int) -> float:
    return 100.0 * n / d if d else 100.0


def print_report(report: dict, source: str, *, show_missing: bool, show_excluded: bool) -> None:
    print(f"ember API coverage against {source}")
    print(f"{'namespace':<15}{'have':>6}{'of':>6}{'%':>8}{'excluded':>10}")
    tot_have = tot_all = 0
    for ns in COUNTED + INFORMATIONAL:
        r = report[ns]
        h, m = len(r["have"]), len(r["missing"])
        if ns in COUNTED:
            tot_have += h
            tot_all += h + m
        tag = "" if ns in COUNTED else "   (informational: separate issue)"
        print(f"{ns:<15}{h:>6}{h + m:>6}{percent(h, h + m):>7.1f}%{len(r['excluded']):>10}{tag}")
    print(f"{'total':<15}{tot_have:>6}{tot_all:>6}{percent(tot_have, tot_all):>7.1f}%")
    if show_missing:
        for ns in COUNTED:
            missing = report[ns]["missing"]
            if not missing:
                continue
            print(f"\nmissing in {ns} ({len(missing)}):")
            by_owner: dict[str, list[str]] = {}
            for name in missing:
                by_owner.setdefault(owner_of(name) or "unowned", []).append(name)
            for owner in sorted(by_owner, key=lambda o: (o == "unowned", o)):
                print(f"  [{owner}] " + " ".join(by_owner[owner]))
    if show_excluded:
        for ns in COUNTED:
            ex = report[ns]["excluded"]
            if not ex:
                continue
            print(f"\nexcluded from {ns} ({len(ex)}):")
            by_reason: dict[str, list[str]] = {}
            for name, reason in ex.items():
                by_reason.setdefault(reason, []).append(name)
            for reason, names in by_reason.items():
                print(f"  {reason}:\n    " + " ".join(names))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--missing", action="store_true", help="list missing names per namespace")
    ap.add_argument("--excluded", action="store_true", help="list excluded names with reasons")
    ap.add_argument("--json", metavar="PATH", help="write the full report as JSON")
    ap.add_argument("--write-snapshot", action="store_true",
                    help=f"write torch's lists to {os.path.basename(SNAPSHOT)} (needs torch)")
    args = ap.parse_args(argv)
    if args.write_snapshot:
        import torch
        with open(SNAPSHOT, "w") as f:
            json.dump({"torch": torch.__version__.split("+")[0], "names": torch_lists()}, f,
                      indent=0, sort_keys=True)
            f.write("\n")
        print(f"wrote {SNAPSHOT}")
        return 0
    lists, source = reference_lists()
    report = coverage(lists)
    print_report(report, source, show_missing=args.missing, show_excluded=args.excluded)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"source": source, "report": report}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    sys.exit(main())
