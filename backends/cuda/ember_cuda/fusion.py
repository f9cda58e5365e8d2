"""The CUDA backend's lowering for ``ember.compile``: a fused pointwise group becomes one
``cupy.ElementwiseKernel``.

cupy's elementwise kernels broadcast and read strided operands themselves, compile with NVRTC
on first use and cache the binary per device, so the lowering only writes the loop body: the
group's statements from ``ember.compiler.pointwise`` in CUDA C++ (whose math functions are
overloaded for float like OpenCL C's), reading ``x0..`` and assigning ``y0..``."""
from __future__ import annotations

from ember.compiler.pointwise import C_TYPES, Dialect
from ember.runtime import dtypes as D

_CUPY_TYPES = {D.float32: "float32", D.float64: "float64", D.bool_: "bool"}


def body(kernel):
    """The elementwise operation: statements, then the outputs' assignments."""
    def var(local):
        return f"x{local.index}" if local.kind == "in" else f"t{local.index}"
    lines = kernel.render(lambda dt: Dialect(dt, var), var)
    lines += [f"y{k} = t{j};" for k, j in enumerate(kernel.outputs)]
    return "\n".join(lines)


def params(kernel):
    ins = ", ".join(f"{_CUPY_TYPES[d]} x{k}" for k, d in enumerate(kernel.input_dtypes))
    outs = ", ".join(f"{_CUPY_TYPES[d]} y{k}" for k, d in enumerate(kernel.output_dtypes))
    return ins, outs


def standalone_source(kernel):
    """A standalone CUDA C kernel with the same body (what the NVRTC test compiles)."""
    args = [f"const {C_TYPES[d]}* in{k}" for k, d in enumerate(kernel.input_dtypes)]
    args += [f"{C_TYPES[d]}* out{k}" for k, d in enumerate(kernel.output_dtypes)]
    loads = "\n".join(f"  {C_TYPES[d]} x{k} = in{k}[i];"
                      for k, d in enumerate(kernel.input_dtypes))
    decls = "\n".join(f"  {C_TYPES[d]} y{k};" for k, d in enumerate(kernel.output_dtypes))
    stores = "\n".join(f"  out{k}[i] = y{k};" for k in range(len(kernel.outputs)))
    return (f'extern "C" __global__ void fused({", ".join(args)}, long long n) {{\n'
            f"  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
            f"  if (i >= n) return;\n{loads}\n{decls}\n{body(kernel)}\n{stores}\n}}\n")


class PointwiseRunner:
    def __init__(self, backend, kernel):
        self.backend, self.kernel = backend, kernel
        self.fn = None

    def __call__(self, inputs):
        be = self.backend
        device = inputs[0].device
        cp = be._api.cupy
        if self.fn is None:
            ins, outs = params(self.kernel)
            self.fn = cp.ElementwiseKernel(ins, outs, body(self.kernel), "ember_fused")
        with be._api.on_device(device.index), be.memory():
            arrays = [be.native(t) for t in inputs]
            shape = cp.broadcast_shapes(*[a.shape for a in arrays]) if hasattr(
                cp, "broadcast_shapes") else __import__("numpy").broadcast_shapes(
                *[a.shape for a in arrays])
            outs = [cp.empty(shape, dtype=d.np) for d in self.kernel.output_dtypes]
            if outs[0].size:
                self.fn(*arrays, *outs)
        return [be.wrap(o, device) for o in outs]


def compile_pointwise(backend, kernel):
    """``Backend.compile_pointwise`` for CUDA (any device the backend runs); groups ending in
    a reduction stay separate ops here."""
    if kernel.reduction is not None:
        return None
    return PointwiseRunner(backend, kernel)
