"""``vmap``: the user-facing transform over the batching layer (argument checks with PyTorch's
messages, pytrees of inputs and outputs, chunking, randomness)."""
from __future__ import annotations

import functools

from .._tensor import Tensor
from ..utils._pytree import broadcast_prefix, tree_flatten, tree_unflatten
from ..dispatch import levels as _levels
from ._batched import BatchedTensor, make_batched, move_bdim_to_front
from ..ops import _batching
from ..ops.shape import cat
from ..ops.views import movedim, narrow
from ..runtime.registry import registry

RANDOMNESS = ("error", "different", "same")


def _name(func) -> str:
    return getattr(func, "__name__", None) or repr(func)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorize ``func`` over a batch dimension of its inputs (``torch.func.vmap``).

    ``in_dims`` says, per input (a pytree prefix of the inputs), which dim is the batch (None: not
    batched); ``out_dims`` where the batch goes in each output. ``randomness``: "error" (random
    ops raise), "different" (each example draws its own numbers) or "same" (one draw shared by
    the batch). ``chunk_size`` runs the batch that many examples at a time.
    """
    if randomness not in RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    _check_out_dims(out_dims, func)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        size, flat_dims, flat_args, spec = _process_inputs(func, in_dims, args)
        if chunk_size is None or chunk_size >= size:
            return _flat_vmap(func, size, flat_dims, flat_args, spec, out_dims, randomness,
                              kwargs)
        return _chunked(func, size, flat_dims, flat_args, spec, out_dims, randomness, kwargs,
                        chunk_size)

    return wrapped


def _check_out_dims(out_dims, func):
    leaves = [out_dims] if isinstance(out_dims, int) or out_dims is None else \
        tree_flatten(out_dims)[0]
    for x in leaves:
        if x is not None and (not isinstance(x, int) or isinstance(x, bool)):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be "
                             f"an int, None or a python collection of ints representing where in "
                             f"the outputs the vmapped dimension should appear.")


def _process_inputs(func, in_dims, args):
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to "
                         f"be int or a (potentially nested) tuple matching the structure of "
                         f"inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                         f"inputs, or you are trying to vmap over a function with no inputs. "
                         f"The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    try:
        flat_dims = broadcast_prefix(in_dims, args, "in_dims")
    except ValueError:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`. in_dims has structure "
                         f"{tree_flatten(in_dims)[1]} but inputs has structure {spec}.") from None
    for i, (arg, d) in enumerate(zip(flat_args, flat_dims)):
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             f"for an input but in_dim must be either an integer dimension or "
                             f"None.")
        if d is not None and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             f"for an input but the input is of type {type(arg)}. We cannot "
                             f"vmap over non-Tensor arguments, please use None as the respective "
                             f"in_dim")
        if d is not None and not -arg.ndim <= d < arg.ndim:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                             f"for some input, but that input is a Tensor of dimensionality "
                             f"{arg.ndim} so expected in_dim to satisfy -{arg.ndim} <= in_dim < "
                             f"{arg.ndim}.")
        if d is not None and d < 0:
            flat_dims[i] = d % arg.ndim
    sizes = [a._shape[d] for a, d in zip(flat_args, flat_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0], flat_dims, flat_args, spec


def _to_front(t, d):
    if d == 0:
        return t
    return move_bdim_to_front(t, d)


def _flat_vmap(func, size, flat_dims, flat_args, spec, out_dims, randomness, kwargs):
    layer = _levels.push("vmap", size, randomness, name=_name(func))
    try:
        batched = [a if d is None else make_batched(_to_front(a, d), layer.level)
                   for a, d in zip(flat_args, flat_dims)]
        out = func(*tree_unflatten(batched, spec), **kwargs)
        return _unwrap_outputs(func, out, out_dims, layer)
    finally:
        _levels.pop(layer)


def _unwrap_outputs(func, out, out_dims, layer):
    name = _name(func)
    flat, spec = tree_flatten(out)
    if isinstance(out, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            dims = list(out_dims)
        else:
            dims = None
    else:
        try:
            dims = broadcast_prefix(out_dims, out, "out_dims")
        except ValueError:
            dims = None
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]} but outputs has structure {spec}.")
    return tree_unflatten([_unwrap_one(name, o, d, layer) for o, d in zip(flat, dims)], spec)


def _unwrap_one(name, out, out_dim, layer):
    batched = out.__class__ is BatchedTensor and out._level == layer.level
    if out_dim is None:
        if batched:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when "
                             f"out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                         f"{type(out)}. Did you mean to set out_dims= to None for output?")
    if batched:
        value = out._value
    else:  # the same for every example: broadcast over the batch
        with _levels.Ceiling(layer.level - 1):
            value = _batching.materialize(out, None, layer.batch_size)
    if not -value.ndim <= out_dim < value.ndim:
        raise IndexError(f"vmap({name}, ...): out_dim={out_dim} is out of range for an output of "
                         f"{value.ndim - 1} dims (expected -{value.ndim} <= out_dim < "
                         f"{value.ndim})")
    if out_dim % value.ndim == 0:
        return value
    with _levels.Ceiling(layer.level - 1):
        return movedim(value, 0, out_dim)


# -- chunks -------------------------------------------------------------------------------------
def _chunked(func, size, flat_dims, flat_args, spec, out_dims, randomness, kwargs, chunk_size):
    states = _rng_states() if randomness == "same" else None
    results = []
    for start in range(0, size, chunk_size):
        n = min(chunk_size, size - start)
        part = [a if d is None else narrow(a, d, start, n) for a, d in zip(flat_args, flat_dims)]
        if states is not None:
            _restore_rng(states)
        results.append(_flat_vmap(func, n, flat_dims, part, spec, out_dims, randomness, kwargs))
    flats = [tree_flatten(r) for r in results]
    out_spec = flats[0][1]
    first = results[0]
    dims = [out_dims] if isinstance(first, Tensor) and not isinstance(out_dims, tuple) else \
        (list(out_dims) if isinstance(first, Tensor) else broadcast_prefix(out_dims, first,
                                                                           "out_dims"))
    merged = []
    for k, d in enumerate(dims):
        items = [f[0][k] for f in flats]
        merged.append(items[0] if d is None else cat(items, dim=d))
    return tree_unflatten(merged, out_spec)


def _rng_states():
    """The default generators' states, so each chunk draws the same numbers ('same')."""
    states = []
    for name in registry.names():
        backend = registry.loaded(name)
        if backend is None:
            continue
        for g in getattr(backend, "_generators", {}).values():
            states.append((g, g.get_state()))
    return states


def _restore_rng(states):
    for g, s in states:
        g.set_state(s)
