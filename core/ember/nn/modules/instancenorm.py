"""InstanceNorm1d/2d/3d (statistics per sample and channel), LocalResponseNorm and the legacy
CrossMapLRN2d, over ``nn/_normalization.py``."""
from __future__ import annotations

import warnings

from .. import _normalization as N
from .module import Module
from .normalization import _BatchNorm
from ..._warn import user_stacklevel

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm",
           "CrossMapLRN2d"]


class _InstanceNorm(_BatchNorm):
    _spatial = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = input.ndim == self._spatial + 1
        channels = input.shape[0 if unbatched else 1]
        if channels != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={0 if unbatched else 1} to "
                                 f"match num_features ({self.num_features}), but got: "
                                 f"{channels}.")
            warnings.warn(f"input's size at dim={0 if unbatched else 1} does not match "
                          f"num_features. You can silence this warning by not passing in "
                          f"num_features, which is not used because affine=False",
                          stacklevel=user_stacklevel())
        x = input.unsqueeze(0) if unbatched else input
        use_input_stats = self.training or not self.track_running_stats
        out = N.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              use_input_stats, self.momentum if self.momentum is not None
                              else 0.1, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    _spatial = 1
    _dims = (2, 3)  # unbatched or batched: _BatchNorm's input check reads it


class InstanceNorm2d(_InstanceNorm):
    _spatial = 2
    _dims = (3, 4)  # unbatched or batched: _BatchNorm's input check reads it


class InstanceNorm3d(_InstanceNorm):
    _spatial = 3
    _dims = (4, 5)  # unbatched or batched: _BatchNorm's input check reads it


class _ResponseNorm(Module):
    """Local response normalisation over ``size`` neighbouring channels (``_fn`` computes it)."""
    _fn = None

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return type(self)._fn(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class LocalResponseNorm(_ResponseNorm):
    _fn = staticmethod(N.local_response_norm)


class CrossMapLRN2d(_ResponseNorm):
    _fn = staticmethod(N.cross_map_lrn2d)

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__(size, alpha, beta, k)
