"""The OpInfo samples on which ember differed from torch until issue #30 fixed ember: each row
re-runs those samples (on cpu and opencl) in the default run, so the fix stays fixed even where
the quick slice of tests/test_torch_opinfo.py does not reach them. A sample exclusions.OPINFO
lists as a known gap on some device (xfail) may fail there.

Row: (OpInfo, dtype, sample indices, areas, what was wrong).
"""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")

import ember  # noqa: E402
from torch_oracle import opinfo  # noqa: E402
from torch_oracle.outcomes import PASS, XFAIL, XPASS  # noqa: E402

DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])
F, M, I, B = "forward", "method", "inplace", "backward"

FIXED = [
    ("unique_consecutive", "float32", (183,), (F, M), "a length-1 dim: reshape(0, -1) of nothing"),
    ("logspace.tensor_overload", "int64", (150,), (F,), "integer ends not truncated first"),
    ("linspace.tensor_overload", "int64", (96,), (F,), "integer ends not truncated first"),
    ("cov", "float32", (9,), (F, M), "one variable: PyTorch squeezes to 0-d"),
    ("cov", "complex64", (2,), (F, M), "complex input: weights made complex, clamp refused"),
    ("cov", "float64", (37,), (F, M, B), "float32 aweights: the norm is computed in float32"),
    ("corrcoef", "complex64", (1,), (F, M), "complex: parts clipped separately"),
    ("cdist", "float32", (7,), (F,), "empty x1: reshape(-1, 0, M) is ambiguous"),
    ("cdist", "float64", (7,), (B,), "empty x1"),
    ("histogram", "float32", (160,), (F, M), "no data: edges over [0, 1]"),
    ("histogramdd", "float32", (72,), (F,), "no data: edges over [0, 1]"),
    ("diff", "float32", (22,), (F, M), "n=0 returns the input without prepend/append"),
    ("scatter_reduce.sum", "bool", (0, 3), (F, M, I), "bool sum is logical or, stays bool"),
    ("scatter_reduce.prod", "bool", (0, 3), (F, M, I), "bool prod is logical and, stays bool"),
    ("linalg.norm", "float32", (68,), (F,), "positive-order matrix norms of an empty matrix: 0"),
    ("special.chebyshev_polynomial_t", "float32", (1,), (F,), "fractional degree truncated"),
    ("special.hermite_polynomial_h", "float32", (1,), (F,), "fractional degree truncated"),
    ("ldexp", "complex64", (0,), (F, M, I), "complex exponent: complex power of 2"),
    ("ldexp", "int64", (0,), (I,), "ldexp_ of an integer tensor refused like torch"),
    ("nn.functional.pad.replicate_negative", "float32", (0, 2), (F,), "negative replicate pads"),
    ("nn.functional.pad.circular", "float32", (7,), (F,), "negative circular pads crop first"),
    ("nn.functional.pad.reflect", "float32", (11,), (F,), "negative reflect pads"),
    ("index_reduce.mean", "float32", (0,), (F, M, I), "a 0-d self and source"),
    ("quantile", "float32", (3,), (F, M), "keepdim of a 0-d input keeps no dim"),
    ("native_group_norm", "float32", (12,), (F,), "an empty batch"),
    ("native_group_norm", "float64", (0,), (B,), "mean and rstd are differentiable outputs"),
    ("native_layer_norm", "float32", (16,), (F,), "an empty batch"),
    ("sum_to_size", "bool", (0,), (F, M), "sums promote bool; the empty size sums all"),
    ("nn.functional.batch_norm", "float32", (3,), (F,), "a 1-D (channel-less) empty input"),
    ("nn.functional.local_response_norm", "int64", (0,), (F,), "integer window average"),
    ("addbmm", "int64", (2,), (F, M), "integer alpha/beta truncated to the integer type"),
    ("addbmm", "float32", (1,), (I,), "addbmm_ resizes a self that broadcast"),
    ("linalg.lstsq", "float64", (0,), (B,), "empty residuals are differentiable"),
    ("nextafter", "float64", (0,), (B,), "gradient passes to input"),
    ("frexp", "float64", (0,), (B,), "mantissa's gradient is grad / 2**exponent"),
    ("combinations", "float64", (2,), (B,), "no combinations is still in input's graph"),
    ("linalg.matrix_power", "float64", (0,), (B,), "n=0 is differentiable (zero gradient)"),
    ("gather", "float32", (3,), (F, M), "an empty index of any dtype and rank"),
    ("take_along_dim", "float32", (4,), (F, M), "negative indices count from the end"),
    ("nn.functional.embedding_bag", "float32", (8,), (F,), "max_norm renormalisation import"),
    ("logit", "float32", (1,), (F, M, I), "the eps argument"),
    ("istft", "complex64", (0, 1), (F, M), "a two-sided input to a real signal: irfft of the "
                                          "first n_fft // 2 + 1 bins"),
    ("as_strided", "float64", (0,), (I,), "as_strided_ takes storage_offset by keyword"),
    ("as_strided", "float64", (3, 4), (B,), "overlapping views: gradients summed per position"),
    ("as_strided_scatter", "float64", (0, 2, 3), (B,), "the gradient of self is zero where "
                                                      "src is written"),
    ("masked.amax", "float64", (1,), (B,), "masked._output_mask for the gradcheck wrapper"),
    ("masked.cumsum", "float64", (0,), (B,), "masked._output_mask of a normalization"),
    ("masked.logaddexp", "float64", (1,), (B,), "masked._input_mask takes mask= in kwargs"),
    ("matmul", "float32", (7,), (F, M), "a batch of rows with an empty inner dim"),
    ("matmul", "float64", (7,), (B,), "its gradient: reshape(-1, 0) is ambiguous"),
    ("geqrf", "complex64", (0, 1), (F, M), "complex Householder reflectors (zlarfg)"),
    ("ormqr", "complex64", (0, 1), (F, M), "complex Q; transpose is Q^H"),
    ("ormqr", "float64", (0,), (B,), "householder_product's derivative (LAPACK kernel)"),
    ("linalg.householder_product", "float64", (0, 4), (B,), "derivative, also of k = 0"),
    ("matrix_exp", "float32", (0,), (F,), "float32 computed in double on the cpu"),
    ("special.airy_ai", "float32", (0,), (F,), "a new op (scipy's Ai; no derivative)"),
]

# (ModuleInfo, dtype, input index, training, what was wrong)
MODULES_FIXED = [
    ("nn.BatchNorm1d", "float64", 6, True, "an empty batch leaves the running statistics"),
    ("nn.FractionalMaxPool3d", "float64", 4, True, "more rows of _random_samples than batch"),
    ("nn.GaussianNLLLoss", "float64", 4, True, "var with one size-1 dim (homoscedastic)"),
    ("nn.LPPool1d", "float64", 0, True, "relu's gradient at NaN passes the gradient"),
    ("nn.CrossEntropyLoss", "float64", 20, True, "every target ignored: zero gradient"),
]

# (OptimizerInfo, optim_input description, what was wrong)
OPTIMIZERS_FIXED = [
    ("LBFGS", "Tensor lr", "a 1-element tensor lr"),
    ("SparseAdam", "default", "steps on sparse COO gradients"),
    ("SparseAdam", "Tensor lr", "a 1-element tensor lr"),
]


@pytest.mark.parametrize("name,dtype,indices,areas,what", FIXED,
                         ids=[f"{r[0]}-{r[1]}-{'-'.join(map(str, r[2]))}" for r in FIXED])
def test_fixed_samples_match_torch(name, dtype, indices, areas, what):
    op = opinfo.find(name)
    fwd = tuple(a for a in areas if a != B)
    got = opinfo.check_forward(op, DEVICES, (getattr(torch, dtype),), fwd, indices=set(indices)) \
        if fwd else []
    if B in areas:
        got += opinfo.check_backward(op, DEVICES, indices=set(indices))
    assert got, f"{name}: no sample at {indices} in {dtype} (torch's samples changed?)"
    bad = [f"{o.area} {o.device} {o.sample}: {o.message}" for o in got
           if o.status not in (PASS, XFAIL, XPASS)]
    assert not bad, f"{name} ({what}):\n" + "\n".join(bad)


@pytest.mark.parametrize("name,dtype,index,training,what", MODULES_FIXED,
                         ids=[f"{r[0]}-{r[1]}-{r[2]}" for r in MODULES_FIXED])
def test_fixed_module_inputs_match_torch(name, dtype, index, training, what):
    from torch_oracle import modules
    info = next(i for i in modules.module_db() if i.name == name)
    mi = modules._inputs(info, getattr(torch, dtype), training)[index]
    for device in DEVICES:
        modules.check_input(info, mi, getattr(torch, dtype), training, device, "values")


@pytest.mark.parametrize("name,desc,what", OPTIMIZERS_FIXED,
                         ids=[f"{r[0]}-{r[1]}" for r in OPTIMIZERS_FIXED])
def test_fixed_optimizer_inputs_match_torch(name, desc, what):
    from torch_oracle import optimizers
    info = next(i for i in optimizers.optim_db() if i.optim_cls.__name__ == name)
    oi = next(o for o in info.optim_inputs_func(device="cpu", dtype=torch.float64)
              if o.desc == desc)
    for device in DEVICES:
        optimizers.check_input(info, oi.kwargs, device)
