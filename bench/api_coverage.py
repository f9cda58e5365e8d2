"""How much of torch's public API ember has, per namespace (issues #25, #30).

    python bench/api_coverage.py [--missing] [--excluded] [--json PATH] [--write-snapshot]

The reference lists come from torch when it is installed: every public callable (function or
class, defined in torch) reachable as an attribute of each namespace in ``NAMESPACES`` —
``torch`` itself (factories included), ``Tensor``'s methods and attributes, ``nn.functional``,
``nn``, ``linalg``, ``fft``, ``special``, ``masked``, ``signal.windows``, ``optim``, the
``nn.utils`` and ``autograd`` families, ``distributions``, ``utils.data``, ``sparse``,
``random``, … — plus, for ``torch`` and ``Tensor``, the names of
``torch.overrides.get_testing_overrides()`` (torch's own list of its overridable functions, which
counts Tensor properties too). Before issue #30 the measure was that override list alone (4
namespaces); ``--json`` keeps both. ``torch values`` and ``Tensor values`` count the public
names that are not callables: torch's constants, dtypes, layouts, objects
(``default_generator``) and submodules, and Tensor's properties and attributes not counted
above (``T``, ``grad``, ``is_cuda``…).

Without torch the lists are read from ``bench/api_coverage_torch.json``, a snapshot written by
``--write-snapshot`` (torch 2.13).

A name counts as present when ember has an attribute of that name at the same place
(``ember.<name>``, ``ember.Tensor.<name>``, ``ember.nn.functional.<name>``, …). Deliberate
exclusions are rules with a reason each (``EXCLUSIONS``); every excluded name is printed with its
reason under ``--excluded``. Missing names that another issue owns are tagged with it
(``OWNERS``), so the report says who will close each gap.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import subprocess
import sys

SNAPSHOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api_coverage_torch.json")

NAMESPACES = ("torch", "Tensor", "nn.functional", "nn", "linalg", "fft", "special", "masked",
              "signal.windows", "optim", "optim.lr_scheduler", "optim.swa_utils", "nn.init",
              "nn.utils", "nn.utils.rnn", "nn.utils.parametrize", "nn.utils.parametrizations",
              "nn.parameter", "nn.parallel", "nn.attention", "autograd", "autograd.functional",
              "autograd.forward_ad", "autograd.graph", "func", "distributions",
              "distributions.constraints", "distributions.transforms", "utils",
              "utils.data", "utils.checkpoint", "sparse", "random", "testing", "amp",
              "futures", "jit", "profiler", "export", "onnx")
# the non-callable names of a namespace: "<namespace> values", resolved at <namespace>
VALUE_NAMESPACES = ("torch values", "Tensor values")
COUNTED = NAMESPACES + VALUE_NAMESPACES
INFORMATIONAL: tuple = ()

# (namespaces, regex, reason): a name matching the regex in one of the namespaces is excluded
EXCLUSIONS: list[tuple[tuple[str, ...], str, str]] = [
    (("torch", "Tensor", "nn.functional"), r"^_(?!_)",
     "private name (one leading underscore): not public API"),
    (("Tensor",), r"^__(array_wrap|get|torch_function|torch_dispatch)__$",
     "protocol hook of torch's own machinery (numpy ufunc wrapping, descriptor, torch_function)"),
    (("torch", "Tensor"),
     r"^(q_|quantize_|quantized_|dequantize$|int_repr$|fake_quantize|fused_moving_avg_obs|"
     r"empty_quantized$|"
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
    (("Tensor", "torch values"), r"^(complex32|chalf)$",
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
     r"ipu|mtia|dim_order)$",
     "storage/stream internals or vendor devices ember has no backend for"),
    (("nn.functional",),
     r"^(Optional|assert_int_or_pair|boolean_dispatch|handle_torch_function|"
     r"has_torch_function(_unary|_variadic)?)$",
     "typing/helper name imported into torch.nn.functional, not an nn function"),
    (("nn.functional",), r"^(grouped_mm|scaled_mm|scaled_grouped_mm)$",
     "float8/grouped GEMM entry points for GPUs; ember has no float8 dtypes"),
    (("nn",), r"^(SyncBatchNorm)$",
     "cross-process batch norm over NCCL process groups (CUDA only in torch)"),
    (("torch",),
     r"^(AliasDb|AnyType|Argument|ArgumentSpec|AwaitType|Block|BoolType|CallStack|Capsule|"
     r"ClassType|Code|CompilationUnit|CompleteArgumentSpec|ComplexType|ConcreteModuleType|"
     r"ConcreteModuleTypeBuilder|DeepCopyMemoTable|DeserializationStorageContext|DeviceObjType|"
     r"DictType|EnumType|ErrorReport|ExecutionPlan|FileCheck|FloatType|FunctionSchema|"
     r"FutureType|Gradient|Graph|GraphExecutorState|IODescriptor|InferredType|IntType|"
     r"InterfaceType|JITException|ListType|LiteScriptModule|Node|NoneType|NumberType|"
     r"OperatorInfo|OptionalType|PyObjectType|PyTorchFileReader|PyTorchFileWriter|RRefType|"
     r"Script\w*|SerializationStorageContext|StaticModule|StreamObjType|StringType|SymBoolType|"
     r"SymIntType|TensorType|TracingState|TupleType|Type|UnionType|Use|Value|ModuleDict|"
     r"ParameterDict|BufferDict|import_ir_module\w*|parse_ir|parse_schema|parse_type_comment|"
     r"merge_type_from_type_comment|unify_type_list|AggregationType|LockingLogger|NoopLogger|"
     r"LoggerBase)$",
     "TorchScript's IR, type system and logging (torch._C's JIT bindings): ember.jit.script and "
     "trace are identities, there is no TorchScript IR"),
    (("jit",),
     r"^(Attribute|CompilationUnit|Error|ONNXTracedModule|RecursiveScript\w+|ScriptFunction|"
     r"ScriptModule|ScriptWarning|TopLevelTracedModule|TracedModule|TracerWarning|"
     r"TracingCheckError|enable_onednn_fusion|export_opnames|freeze|fuser|interface|isinstance|"
     r"jit_module_from_flatbuffer|last_executed_optimized_graph|load|onednn_fusion_enabled|"
     r"optimize_for_inference|optimized_execution|run_frozen_optimizations|save|"
     r"save_jit_module_to_flatbuffer|script_if_tracing|script_method|set_fusion_strategy|"
     r"set_module|strict_fusion|trace_module)$",
     "TorchScript compilation, serialization and fusion: ember.jit keeps fork/wait and "
     "identity script/trace (graphs are ember.compile's and ember.export's)"),
    (("torch",), r"^(\w+Storage|StorageBase|TypedStorage|UntypedStorage|is_storage)$",
     "torch's typed/untyped storage classes: an ember tensor's Storage is a backend handle "
     "(runtime/storage.py), not torch's storage API"),
    (("torch",), r"^(DispatchKey|DispatchKeySet|ExcludeDispatchKeyGuard|DisableTorchFunction|"
     r"DisableTorchFunctionSubclass|Tag|classproperty|get_file_path|"
     r"prepare_multiprocessing_environment|profiler_allow_cudagraph_cupti_lazy_reinit_cuda12|"
     r"compiled_with_cxx11_abi|set_flush_denormal|init_num_threads)$",
     "torch's dispatcher, build and C++-runtime internals"),
    (("torch",), r"^Sym(Int|Float|Bool)$",
     "SymInt/SymFloat/SymBool of torch's symbolic tracer (see the sym_ rule)"),
    (("torch",), r"^(get|set)_autocast_(ipu|xla)_(dtype|enabled)$|^is_autocast_(ipu|xla)_enabled$|"
     r"^set_autocast_(ipu|xla)_enabled$",
     "autocast state of IPU/XLA devices, which ember has no backend for"),
    (("torch", "nn.functional", "autograd"),
     r"^(handle_torch_function|has_torch_function\w*|is_tensor_like|boolean_dispatch|"
     r"assert_int_or_pair)$",
     "__torch_function__ protocol helpers (ember has no __torch_function__ override protocol) "
     "and torch.nn.functional's private helpers exported by name"),
    (("nn.functional",), r"^(ScalingType|SwizzleType)$",
     "float8 scaling enums of grouped/scaled GEMMs (see the grouped_mm rule)"),
    (("special", "nn.functional", "distributions.transforms", "optim.lr_scheduler", "profiler"),
     r"^(Tensor|Optimizer|Distribution|pad|softplus)$",
     "a class or function imported into the namespace from elsewhere, not its own API"),
    (("sparse",), r"^(SparseSemiStructured\w*|to_sparse_semi_structured)$",
     "2:4 semi-structured sparsity for NVIDIA sparse tensor cores (cuSPARSELt/CUTLASS)"),
    (("masked",), r"^(MaskedTensor|masked_tensor|as_masked_tensor|is_masked_tensor)$",
     "torch's prototype MaskedTensor subclass (torch warns it is a prototype); the masked "
     "reductions take mask= on strided tensors"),
    (("torch",), r"^(BenchmarkConfig|BenchmarkExecutionStats|ThroughputBenchmark|FatalError|"
     r"Storage|empty_quantized|hspmm)$",
     "TorchScript's C++ benchmark utility, C++ runtime error type, the storage base class, a "
     "quantized factory and hybrid sparse products (see the storage, quantization and sparse "
     "rules)"),
    (("utils",), r"^(ThroughputBenchmark|generate_methods_for_privateuse1_backend|"
     r"rename_privateuse1_backend|get_cpp_backtrace|set_module)$",
     "torch's PrivateUse1 backend hooks (ember's backends are plug-ins registered by entry "
     "point), C++ backtraces and a module-renaming helper"),
    (("testing",), r"^FileCheck$", "TorchScript IR checker (see the TorchScript rule)"),
    (("nn.utils.rnn", "nn.utils.parametrize", "utils.checkpoint", "autograd.graph", "nn"),
     r"^(PackedSequence_|bind|copy_method_params|OpaqueBase|get_swap_module_params_on_conversion|"
     r"is_opaque_reference_type|is_traceable_wrapper_subclass|LoggingTensorMode|capture_logs|"
     r"TorchDispatchMode|SavedTensor|tree_map|Variable|factory_kwargs)$",
     "a private helper or a class imported into the namespace from elsewhere, not its own API"),
    (("autograd.graph",), r"^(set_override_stale_capture_stream|"
     r"set_warn_on_accumulate_grad_stream_mismatch)$",
     "CUDA-stream bookkeeping of torch's autograd engine (ember's engine runs on the calling "
     "thread's streams)"),
    (("autograd", "profiler"), r"^(DeviceType|ProfilerActivity|ProfilerConfig|ProfilerEvent|"
     r"ProfilerState|SavedTensor|RecordScope|kineto_available|is_fbcode)$",
     "Kineto profiler and autograd C++ bindings re-exported by torch (ember.profiler has its "
     "own recorder)"),
    # the non-callable names (VALUE_NAMESPACES)
    (("torch values",), r"^(builtins|ctypes|functools|glob|importlib|inspect|math|os|platform|"
     r"sys|textwrap|threading|types|warnings|torch|windows)$",
     "a module torch's __init__ imports (Python's standard library, torch itself, "
     "torch.signal.windows leaked by an import), not torch API"),
    (("torch values",), r"^(TYPE_CHECKING|USE_GLOBAL_DEPS|USE_RTLD_GLOBAL_WITH_LIBTORCH|"
     r"has_lapack|has_mkl|has_openmp|has_spectral|PRIVATE_OPS|cpp|classes)$",
     "typing flag, build/loader flags of torch's C++ library (deprecated has_* flags; "
     "torch.backends reports them) and TorchScript's C++ class registries"),
    (("torch values",), r"^(qint8|qint32|quint8|quint4x2|quint2x4|per_tensor_affine|"
     r"per_channel_affine|per_channel_affine_float_qparams|per_tensor_symmetric|"
     r"per_channel_symmetric|quantization|ao)$",
     "quantization: ember has no quantized dtypes, qschemes or torch.ao"),
    (("torch values",), r"^(uint16|uint32|uint64)$",
     "wide unsigned integer dtypes: ember's dtype lattice, promotion and CPU/OpenCL kernels "
     "cover uint8 only (torch itself implements few ops for them: 'limited support')"),
    (("torch values",), r"^(bit|bits1x8|bits2x4|bits4x2|bits8|bits16|u?int[1-7])$",
     "bit-packed and sub-byte dtypes: shell dtypes torch has no CPU arithmetic for"),
    (("torch values",), r"^(float8_\w+|float4_\w+)$",
     "float8/float4 dtypes: storage formats for GPU scaled matmuls, no CPU arithmetic; ember "
     "has none"),
    (("torch values",), r"^(sparse_csr|sparse_csc|sparse_bsr|sparse_bsc)$",
     "sparse compressed layouts (CSR/CSC/BSR/BSC); ember has strided and sparse COO"),
    (("torch values",), r"^(jagged|nested)$",
     "nested (jagged) tensors: ember has no nested tensor type"),
    (("torch values",), r"^legacy_contiguous_format$",
     "torch's internal memory format for legacy serialization (an alias of contiguous_format)"),
    (("torch values",), r"^(AVG|SUM|monitor)$",
     "torch.monitor's event counters and their aggregation kinds (a C++ telemetry API)"),
    (("torch values",), r"^(hub|package|storage|overrides|torch_version)$",
     "torch.hub downloads models from GitHub (ember has no network model zoo), torch.package "
     "archives code with models, torch.storage/torch.overrides are the storage classes and "
     "__torch_function__ protocol ember does not have (see their rules), torch_version is "
     "torch's version-comparison module (ember.version holds ember's)"),
    (("Tensor values",), r"^volatile$",
     "removed in torch 0.4 (reading it only warns): use torch.no_grad"),
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

def _resolve(root, path):
    from ember._api.binding import attribute_path
    return attribute_path(root, path)


def _defined_in_torch(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "" or module.split(".")[0] == "torch"


def public_callables(mod) -> set:
    """The public functions and classes of a torch namespace (not submodules, not typing or
    stdlib names imported into it)."""
    out = set()
    for name in dir(mod):
        if name.startswith("_"):
            continue
        try:
            obj = getattr(mod, name)
        except Exception:  # noqa: BLE001 - a lazy attribute that fails to load is not API
            continue
        if inspect.ismodule(obj) or not callable(obj) or not _defined_in_torch(obj):
            continue
        out.add(name)
    return out


def public_values(obj, skip=()) -> set:
    """The public names of a torch namespace that are not callables (or are modules):
    constants, dtypes, layouts, objects, submodules; for a class, its properties and plain
    attributes. Names in ``skip`` (counted elsewhere) are left out."""
    out = set()
    for name in dir(obj):
        if name.startswith("_") or name in skip:
            continue
        try:
            value = getattr(obj, name)
        except Exception:  # noqa: BLE001 - a lazy attribute that fails to load is not API
            continue
        if inspect.ismodule(value) or not callable(value):
            out.add(name)
    return out


def fresh_values() -> dict[str, list[str]]:
    """``public_values`` of torch and Tensor right after ``import torch``, in a fresh
    interpreter: a submodule someone imported since (``torch.quasirandom``) is an attribute of
    torch from then on, and the list must not depend on what ran before."""
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); import torch; "
              "from api_coverage import public_values; "
              "print(json.dumps({'torch': sorted(public_values(torch)), "
              "'Tensor': sorted(public_values(torch.Tensor))}))")
    done = subprocess.run([sys.executable, "-c", script, os.path.dirname(SNAPSHOT)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def override_lists() -> dict[str, set]:
    """The pre-#30 measure: ``torch.overrides.get_testing_overrides()``'s functions reachable as
    ``torch.<name>`` and Tensor's methods and attributes."""
    import torch
    out = {"torch": set(), "Tensor": set()}
    for fn in torch.overrides.get_testing_overrides():
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
    return out


def torch_lists() -> dict[str, list[str]]:
    import torch
    overrides = override_lists()
    out = {}
    for ns in NAMESPACES:
        mod = torch.Tensor if ns == "Tensor" else _resolve(torch, "" if ns == "torch" else ns)
        names = public_callables(mod) if mod is not None else set()
        out[ns] = sorted(names | overrides.get(ns, set()))
    values = fresh_values()
    out["torch values"] = sorted(set(values["torch"]) - set(out["torch"]))
    out["Tensor values"] = sorted(set(values["Tensor"]) - set(out["Tensor"]))
    out["overrides.torch"] = sorted(overrides["torch"])
    out["overrides.Tensor"] = sorted(overrides["Tensor"])
    return out


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
    ns = ns[:-len(" values")] if ns.endswith(" values") else ns
    holder = ember.Tensor if ns == "Tensor" else _resolve(ember, "" if ns == "torch" else ns)
    return holder is not None and hasattr(holder, name)


def coverage(lists: dict[str, list[str]]) -> dict[str, dict]:
    report = {}
    for key in COUNTED + ("overrides.torch", "overrides.Tensor"):
        ns = key.split(".", 1)[1] if key.startswith("overrides.") else key
        have, missing, excluded = [], [], {}
        for name in lists.get(key, []):
            reason = excluded_reason(ns, name)
            if reason is not None:
                excluded[name] = reason
            elif ember_has(ns, name):
                have.append(name)
            else:
                missing.append(name)
        report[key] = {"have": have, "missing": missing, "excluded": excluded}
    return report


def percent(n: int, d: int) -> float:
    return 100.0 * n / d if d else 100.0


def print_report(report: dict, source: str, *, show_missing: bool, show_excluded: bool) -> None:
    print(f"ember API coverage against {source}")
    print(f"{'namespace':<27}{'have':>6}{'of':>6}{'%':>8}{'excluded':>10}")
    tot_have = tot_all = 0
    for ns in COUNTED + INFORMATIONAL:
        r = report[ns]
        h, m = len(r["have"]), len(r["missing"])
        if ns in COUNTED:
            tot_have += h
            tot_all += h + m
        tag = "" if ns in COUNTED else "   (informational: separate issue)"
        print(f"{ns:<27}{h:>6}{h + m:>6}{percent(h, h + m):>7.1f}%{len(r['excluded']):>10}{tag}")
    print(f"{'total':<27}{tot_have:>6}{tot_all:>6}{percent(tot_have, tot_all):>7.1f}%")
    old = [report[k] for k in ("overrides.torch", "overrides.Tensor") if k in report]
    h = sum(len(r["have"]) for r in old)
    n = h + sum(len(r["missing"]) for r in old)
    print(f"(the pre-#30 measure, torch.overrides' torch and Tensor names: {h}/{n}, "
          f"{percent(h, n):.1f}%)")
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
