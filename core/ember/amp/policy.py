"""What autocast does to each op: PyTorch's op lists, as a table keyed by op name.

An op (a registry op, or an ``nn.functional`` function that is a composite here) has at most one
rule per device family: the CPU family follows PyTorch's CPU autocast lists, every other device
type (OpenCL, CUDA, plug-ins) PyTorch's CUDA lists, which are the GPU ones:

* ``LOWER``    cast floating inputs (not float64) to the autocast dtype: matrix products,
               convolutions, linear.
* ``FP32``     cast float16/bfloat16 inputs to float32 (and a ``dtype`` argument with them):
               losses everywhere; on accelerators also reductions (sum, prod, cumsum),
               softmax/log_softmax, norms, exp/log/pow and other range-sensitive math.
* ``PROMOTE``  cast the floating inputs to the widest floating dtype among them (cat, stack on
               the CPU; dot, atan2, index_put… on accelerators).
* ``BANNED``   raise: binary_cross_entropy on accelerators (unsafe in float16, as in PyTorch).

Ops not listed run in whatever dtypes they are given. Names are ember's op names, which are
PyTorch's (``log_softmax``, ``addmm``, ``vector_norm``…) or, for composites, the functional's
name (``linear``, ``conv2d``, ``cross_entropy``).
"""
from __future__ import annotations

LOWER = "lower_precision_fp"
FP32 = "fp32"
PROMOTE = "promote"
BANNED = "banned"

_CPU_LOWER = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "convolution", "bmm", "mm", "linalg_vecdot", "baddbmm",
              "addmm", "addbmm", "linear", "matmul", "prelu", "scaled_dot_product_attention",
              # composites of bmm/mm in PyTorch, so autocast reaches them there; ops here
              "einsum", "tensordot", "chain_matmul", "linalg_multi_dot")
_CPU_FP32 = ("avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "quantile",
             "nanquantile", "stft", "cdist", "trace", "view_as_complex", "cholesky",
             "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr",
             "pinverse", "max_pool3d", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d",
             "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d",
             "replication_pad3d", "mse_loss", "cosine_embedding_loss", "nll_loss",
             "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss",
             "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss",
             "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "ctc_loss",
             "kl_div", "multilabel_margin_loss", "binary_cross_entropy_with_logits",
             "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn",
             "fft_rfft", "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn", "fft_irfftn",
             "fft_hfft", "fft_ihfft", "linalg_cond", "linalg_matrix_rank", "linalg_solve",
             "linalg_cholesky", "linalg_svdvals", "linalg_eigvals", "linalg_eigvalsh",
             "linalg_inv", "linalg_householder_product", "linalg_tensorinv",
             "linalg_tensorsolve", "geqrf", "qr", "svd", "triangular_solve",
             "fractional_max_pool2d", "fractional_max_pool3d", "adaptive_max_pool3d",
             "linalg_qr", "linalg_svd", "linalg_eig", "linalg_eigh", "linalg_lstsq")
_CPU_PROMOTE = ("stack", "cat", "index_copy")

_GPU_LOWER = ("conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr", "matmul",
              "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm",
              "chain_matmul", "linalg_multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell",
              "rnn_relu_cell", "scaled_dot_product_attention")
_GPU_FP32 = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
             "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm",
             "group_norm", "frobenius_norm", "nuclear_norm", "cosine_similarity",
             "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
             "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss",
             "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
             "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits",
             "cross_entropy", "dist", "pdist", "cdist", "renorm", "logsumexp",
             "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
             "upsample_linear1d", "upsample_bilinear2d", "upsample_bicubic2d",
             "upsample_trilinear3d", "interpolate",
             # PyTorch's "fp32_set_opt_dtype" ops: run in float32 through their dtype argument
             "prod", "softmax", "log_softmax", "cumprod", "cumsum", "vector_norm",
             "linalg_vector_norm", "linalg_matrix_norm", "sum", "norm")
_GPU_PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot",
                "grid_sampler", "index_put", "scatter_add", "tensordot", "cat", "stack")
_GPU_BANNED = ("binary_cross_entropy",)


def _table(lower, fp32, promote, banned=()):
    rules = {}
    for names, rule in ((lower, LOWER), (fp32, FP32), (promote, PROMOTE), (banned, BANNED)):
        for name in names:
            rules[name] = rule
    return rules


CPU = _table(_CPU_LOWER, _CPU_FP32, _CPU_PROMOTE)
ACCELERATOR = _table(_GPU_LOWER, _GPU_FP32, _GPU_PROMOTE, _GPU_BANNED)

BANNED_MESSAGE = (
    "ember.nn.functional.binary_cross_entropy and ember.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using ember.nn.functional."
    "binary_cross_entropy_with_logits\nor ember.nn.BCEWithLogitsLoss.  "
    "binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")


def rules_for(name: str):
    """``(cpu_rule, accelerator_rule)`` for an op or functional name (None: not listed)."""
    return CPU.get(name), ACCELERATOR.get(name)


def rule(name: str, device_type: str):
    return (CPU if device_type == "cpu" else ACCELERATOR).get(name)
