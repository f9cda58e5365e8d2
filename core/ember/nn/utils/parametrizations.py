"""``ember.nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and ``orthogonal``
as parametrizations (``nn.utils.parametrize``), with PyTorch's algorithms, state-dict keys and
error messages. ``weight_norm`` state dicts written by the legacy hook form
(``weight_g``/``weight_v``) load into the parametrized module, as in PyTorch.
"""
from __future__ import annotations

from enum import Enum, auto

from ..._tensor import Tensor
from ...dispatch.grad_mode import no_grad
from ...ops.factories import zeros_like
from ...ops.random import randn
from ...ops.shape import cat
from .. import functional as F
from ..modules.module import Module
from . import _orthogonal as _maps
from . import parametrize
from .spectral_norm import _default_dim
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# -- weight_norm --------------------------------------------------------------------------------
class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """``module.<name> = g * v / ||v||`` with ``original0 = g`` (the norm over every dim but
    ``dim``; the whole tensor for ``dim=None``) and ``original1 = v``."""
    wn = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, wn, unsafe=True)

    def load_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                  error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(load_hook)
    return module


# -- spectral_norm ------------------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            with no_grad():
                u = mat.new_empty(h).normal_(0, 1)
                v = mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # start from a good estimate of the top singular vectors
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n_power_iterations):
        with no_grad():
            for _ in range(n_power_iterations):
                self._u = F.normalize(mat.mv(self._v), dim=0, eps=self.eps, out=self._u)
                self._v = F.normalize(mat.mT.mv(self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = u.vdot(mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        # the parametrization is not invertible (any multiple of W gives W / sigma); PyTorch
        # keeps the assigned value as is
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """``module.<name> = W / sigma(W)``, sigma the largest singular value estimated by power
    iteration (``n_power_iterations`` steps per access in training mode, buffers ``_u``/``_v``
    of the parametrization). ``dim`` defaults to 1 for transposed convolutions, else 0."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = _default_dim(module)
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# -- orthogonal ---------------------------------------------------------------------------------
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex():
            raise ValueError("orthogonal: complex (unitary) parametrizations are not supported "
                             "by ember yet; use a real weight")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.size(-2), x.size(-1)
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            x = x.tril()
            if n != k:  # embed the tall matrix into a square one
                x = cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)], dim=-1)
            a = x - x.mT  # skew-symmetric
            if self.orthogonal_map is _OrthMaps.matrix_exp:
                q = _maps.matrix_exp(a)
            else:  # the Cayley retraction (I + A/2)(I - A/2)^{-1}
                ident = _maps._identity_like(a)
                q = _maps.solve(ident - a * 0.5, ident + a * 0.5)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = _maps.householder_product(a, tau)
            # the diagonal of x holds the signs (+-1), not differentiated
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        base = self._buffers.get("base")
        if base is not None:
            q = base @ q
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, q):
        with no_grad():
            if q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {q.shape}.")
            q_init = q
            n, k = q.size(-2), q.size(-1)
            transpose = n < k
            if transpose:
                q = q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                a = _maps.householder_reflectors(q)
                return a.mT if transpose else a
            if n == k:
                q = q.clone() if _maps.is_orthogonal(q) else _maps.orthonormalize(q)
            else:  # complete q into a full n x n orthogonal matrix
                extra = randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
                q = _maps.orthonormalize(cat([q, extra], dim=-1))
            self.base = q
            # -Id: then householder(zeros) is the identity, as in PyTorch
            neg_id = zeros_like(q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Make ``module.<name>`` (a matrix or batch of matrices) orthogonal: orthonormal columns
    if it is tall, rows if it is wide. ``orthogonal_map``: "matrix_exp" (default for square
    matrices), "cayley" or "householder" (default otherwise). With ``use_trivialization`` the
    parametrization keeps a base matrix (PyTorch's dynamic trivialization) and the initial
    value is the weight itself if orthogonal, else its orthonormalization (QR)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1) or
                          weight.is_complex() else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
