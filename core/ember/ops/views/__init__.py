"""View ops: computed from metadata alone, so every backend shares them (no kernel needed).

Each is an ``Op`` whose composite builds the view; a backend may still register a kernel (the
meta device, a backend with non-strided memory). Writing through a view changes the base because
both hold the same Storage. Each op's derivative sits beside its define:

* ``strided``    ``as_strided`` (the primitive) and ``as_strided_scatter`` (the write every view's
                 backward is made of), with the view geometry they share
* ``reshaping``  views that keep every element: view, reshape, permute/transpose, expand,
                 the dtype and complex-part views
* ``squeezing``  squeeze (one op per PyTorch overload, for its node names) and unsqueeze
* ``slicing``    views that read part of the elements: slice, select, narrow, split, chunk,
                 unbind, unfold, diagonal
"""
from . import strided, reshaping, squeezing, slicing  # noqa: F401 - each imports those before
from .reshaping import (broadcast_tensors, broadcast_to, expand, expand_as, expand_op, flatten,
                        imag, moveaxis, movedim, permute, permute_op, real, reshape,
                        reshape_alias_op, reshape_as, swapaxes, swapdims, t, t_op,
                        transpose, transpose_op, unflatten, unsafe_view_op, view,
                        view_as, view_as_complex, view_as_complex_op, view_as_real,
                        view_as_real_op, view_op)
from .squeezing import (squeeze, squeeze_dim_op, squeeze_dims_op, squeeze_op,  # noqa: F401
                        unsqueeze)
from .slicing import (chunk, diagonal, diagonal_op, narrow, select, select_op, slice_op, split,
                      tensor_split, unbind, unfold, unfold_op)
from .strided import (as_strided, as_strided_op, as_strided_scatter, as_strided_scatter_op,
                      extent, logical_geometry, non_overlapping, view_scatter)
