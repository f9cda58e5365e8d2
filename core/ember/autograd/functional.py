"""``ember.autograd.functional``: derivatives of a whole function (PyTorch's API).

``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp`` and ``hvp`` call the user's function on
fresh tensors that require grad and differentiate its outputs with ``autograd.grad``, as torch's
module does (the same algorithm, options, tuple handling and error messages): ``jvp`` and ``hvp``
use the double-backward trick; ``vectorize=True`` runs all the jacobian's rows as one
``grad(is_grads_batched=True)`` (a vmapped backward), and ``strategy="forward-mode"`` pushes a
standard basis of tangents through ``forward_ad`` under ``ember.func.vmap``. An input that the
outputs do not depend on gets zeros, or an error with ``strict=True``.
"""
from __future__ import annotations

import ember  # ember.func.vmap, read at call time: func is a layer above autograd

from .._tensor import Tensor
from ..dispatch.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from . import forward_ad as fwAD
from ..ops.factories import zeros_like
from ..ops.shape import stack
from .engine import grad as _grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# -- tuples in, tuples out ----------------------------------------------------------------------
def _as_tuple(inp, arg_name=None, fn_name=None):
    """``(was_a_tuple, inp as a tuple of tensors)``; names the argument when one is not a tensor."""
    if arg_name is None and fn_name is None:
        return inp if isinstance(inp, tuple) else tuple(inp) if isinstance(inp, list) else (inp,)
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"the value at index {i} has" if is_tuple else f"the given {arg_name} has"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but {where} type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo ``_as_tuple``: ``to_unpack`` is one flag, or (outer, inner) for nested tuples."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """New tensor objects for the inputs, so the function's own captures of the same tensors
    are told apart: differentiable views when the result must reach the inputs' history."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp) if not inp.is_sparse else inp.clone())
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    """Drop the history of results the caller did not ask to differentiate (create_graph)."""
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but "
                               f"got {el_v.size()}.")


_STRICT_NO_GRAD = {
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
               "independent of the input. This is not allowed in strict mode. You should ensure "
               "that your function is thrice differentiable and that the hessian depends on the "
               "inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
                "function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
                   "user-provided function. This is not allowed in strict mode.",
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
               "outputs must be computed in a differentiable manner from the input when running "
               "in strict mode.",
}


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:  # only grad_inputs have Nones
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_STRICT_NO_GRAD[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
                   is_grads_batched=False):
    """``autograd.grad`` that skips outputs which are None or need no grad (None for every input
    when none is left) and returns None for unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    outs, gouts = zip(*kept)
    return _grad(outs, inputs, gouts, allow_unused=True, create_graph=create_graph,
                 retain_graph=retain_graph, is_grads_batched=is_grads_batched)


_ZERO_ERRORS = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
                         "in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Zeros shaped like ``refs[i]`` where ``grads[i]`` is None — or, under strict, the error
    of that ``stage`` of the computation."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_ERRORS[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               f"create_graph=True.")
        res.append(g)
    return tuple(res)


def _prepare_v(v, inputs, create_graph, fn_name, is_inputs_tuple):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].nelement() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    return v


def _product(outputs, is_outputs_tuple, of, wrt, v, refs, is_result_tuple, create_graph,
             strict, stage):
    """The last backward of every product: ``v`` through ``of`` to ``wrt`` (recorded only with
    create_graph), zeros (or the ``stage``'s strict error) where nothing arrived, and the
    results without history unless create_graph, untupled as the caller passed them."""
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(of, wrt, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, refs, strict, create_graph, stage)
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_result_tuple))


def _call(func, inputs, create_graph, strict, fn_name):
    """``func`` on fresh tensors for ``inputs``: both as tuples, with whether they were."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_inputs_tuple, inputs, is_outputs_tuple, outputs


# -- the public functions -----------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), vᵀ·J)``: the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs = _call(func, inputs, create_graph,
                                                                   strict, "vjp")
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
    return _product(outputs, is_outputs_tuple, outputs, inputs, v, inputs, is_inputs_tuple,
                    create_graph, strict, "back")


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), J·v)`` through the double-backward trick (the vjp of the vjp with
    respect to its cotangent), as torch computes it."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, create_graph, "jvp", is_inputs_tuple)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    return _product(outputs, is_outputs_tuple, grad_inputs, grad_outputs, v, outputs,
                    is_outputs_tuple,
                    create_graph, strict, "back_trick")


def _standard_basis(tensors, numels):
    """One ``(sum(numels), numel_i)`` chunk per tensor; stacked side by side they are the
    identity, so row k is the k-th basis vector of the tensors' concatenated flat space."""
    total = sum(numels)
    chunks = tuple(t.new_zeros(total, n) for t, n in zip(tensors, numels))
    start = 0
    for chunk, n in zip(chunks, numels):
        chunk.diagonal(start).fill_(1)
        start -= n
    return chunks


def _jacfwd(func, inputs, strict=False, vectorize=False):
    if strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`strategy=\"forward-mode\"` are not supported together (yet). Please "
                           "either set `strict=False` or `strategy=\"reverse-mode\"`.")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    numels = tuple(inp.numel() for inp in inputs)
    info = []

    def one_jvp(tangents):
        with fwAD.dual_level():
            duals = tuple(fwAD.make_dual(inp, t.view_as(inp)) for inp, t in zip(inputs, tangents))
            is_out_tuple, dual_outs = _as_tuple(func(*duals), "outputs")
            info.append(is_out_tuple)
            jv, primals = [], []
            for d in dual_outs:
                primal, tangent = fwAD.unpack_dual(d)
                primals.append(primal)
                jv.append(tangent if tangent is not None else zeros_like(primal))
            info.append(primals)
            return tuple(jv)

    per_output = ember.func.vmap(one_jvp)(_standard_basis(inputs, numels))
    is_outputs_tuple, outputs = info
    jac = [[j.permute(*range(1, j.ndim), 0).reshape((*out.shape, *inp.shape))
            for j, inp in zip(jac_out.split(numels, dim=0), inputs)]
           for jac_out, out in zip(per_output, outputs)]
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: ``J[i][j]`` of output i by input j, shaped
    ``output_i.shape + input_j.shape`` (tuples only where ``func`` takes or returns tuples)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError("Expected strategy to be either \"forward-mode\" or "
                             "\"reverse-mode\". Hint: If your function has more outputs than "
                             "inputs, \"forward-mode\" tends to be more performant. Otherwise, "
                             "prefer to use \"reverse-mode\".")
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                      "and `strategy=\"forward-mode\"` are not supported "
                                      "together (yet). Please either set `create_graph=False` "
                                      "or `strategy=\"reverse-mode\"`.")
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs = _call(func, inputs, create_graph,
                                                                   strict, "jacobian")
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                                   "`vectorized=True` are not supported together. Please "
                                   "either set `strict=False` or `vectorize=False`.")
            jac = _jacrev_vectorized(inputs, outputs, create_graph)
        else:
            jac = _jacrev_rows(inputs, outputs, create_graph, strict)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _jacrev_vectorized(inputs, outputs, create_graph):
    """Every row at once: one backward batched over the standard basis of the flat outputs."""
    numels = tuple(out.numel() for out in outputs)
    basis = _standard_basis(outputs, numels)
    flat = tuple(out.reshape(-1) for out in outputs)
    vj = list(_autograd_grad(flat, inputs, basis, create_graph=create_graph,
                             is_grads_batched=True))
    for k, g in enumerate(vj):
        if g is None:
            vj[k] = zeros_like(inputs[k]).expand((sum(numels),) + inputs[k].shape)
    by_input = [[j.view(out.shape + inp.shape) for j, out in zip(g.split(numels, dim=0), outputs)]
                for g, inp in zip(vj, inputs)]
    return tuple(zip(*by_input))


def _jacrev_rows(inputs, outputs, create_graph, strict):
    """One backward per element of each output."""
    jac = ()
    for i, out in enumerate(outputs):
        rows = tuple([] for _ in inputs)
        for k in range(out.nelement()):
            vj = _autograd_grad((out.reshape(-1)[k],), inputs, retain_graph=True,
                                create_graph=create_graph)
            for j, (row, g, inp) in enumerate(zip(rows, vj, inputs)):
                if g is not None:
                    if strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is "
                                           f"independent of input {i}. This is not allowed in "
                                           f"strict mode when create_graph=True.")
                    row.append(g)
                else:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {j}. This is not allowed in "
                                           f"strict mode.")
                    row.append(zeros_like(inp))
        jac += (tuple(stack(row, dim=0).view(out.size() + inputs[j].size())
                      for j, row in enumerate(rows)),)
    return jac


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar-valued ``func`` at ``inputs``: the Jacobian of its (reverse-mode)
    Jacobian; ``H[i][j]`` is shaped ``input_i.shape + input_j.shape``."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError("Expected strategy to be either \"forward-mode\" or "
                             "\"reverse-mode\".")

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            # the inner reverse pass needs inputs that require grad under forward AD
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output_and_jac(func, inputs, strict, fn_name):
    """The single-element output of ``func`` and its gradient (with history, for the second
    derivative)."""
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           f"contain a single element")
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), vᵀ·H)`` for a scalar-valued ``func``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, create_graph, "vhp", is_inputs_tuple)
        is_outputs_tuple, outputs, jac = _scalar_output_and_jac(func, inputs, strict, "vhp")
    return _product(outputs, is_outputs_tuple, jac, inputs, v, inputs, is_inputs_tuple,
                    create_graph, strict, "double_back")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), H·v)`` for a scalar-valued ``func``, through the double-backward trick
    (slower than ``vhp``, equal to it when ``func`` is twice continuously differentiable)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, create_graph, "hvp", is_inputs_tuple)
        is_outputs_tuple, outputs, jac = _scalar_output_and_jac(func, inputs, strict, "hvp")
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    return _product(outputs, is_outputs_tuple, double_back, grad_jac, v, inputs, is_inputs_tuple,
                    create_graph, strict, "double_back_trick")
