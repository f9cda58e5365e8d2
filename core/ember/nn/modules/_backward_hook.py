"""Full backward hooks of a module (``register_full_backward_hook``).

Like PyTorch's ``BackwardHook``: the module's tensor inputs and outputs pass through identity
autograd Functions. The one on the outputs records ``grad_output`` when backward reaches it; the
one on the inputs then sees ``grad_input``, calls the hooks and may replace what flows on.
"""
from __future__ import annotations

from ..._tensor import Tensor
from ...autograd.function import Function
from ...dispatch import keys as K


class _Identity(Function):
    @staticmethod
    def forward(ctx, on_grads, *tensors):
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.on_grads(grads))


class BackwardHook:
    def __init__(self, module, hooks):
        self.module = module
        self.hooks = hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.inputs_hooked = False

    @staticmethod
    def _wrap(values, on_grads):
        single = isinstance(values, Tensor)
        seq = [values] if single else list(values)
        idx = [i for i, v in enumerate(seq) if isinstance(v, Tensor)]
        if not any(seq[i].requires_grad for i in idx):
            return values, False
        new = _Identity.apply(on_grads, *[seq[i] for i in idx])
        for k, i in enumerate(idx):
            seq[i] = new[k]
        return (seq[0] if single else type(values)(seq) if isinstance(values, tuple)
                else seq), True

    def setup_input_hook(self, args):
        self.n_inputs = sum(isinstance(a, Tensor) for a in args)
        if not K.state.grad_enabled:
            return args
        args, self.inputs_hooked = self._wrap(args, self._on_input_grads)
        return args

    def setup_output_hook(self, out):
        if not K.state.grad_enabled or not isinstance(out, (Tensor, tuple, list)):
            return out
        return self._wrap(out, self._on_output_grads)[0]

    def _call_hooks(self, grad_input):
        for hook in self.hooks:
            r = hook(self.module, grad_input, self.grad_outputs)
            if r is None:
                continue
            r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
            if len(r) != len(grad_input):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                   f"got {len(r)}, but expected {len(grad_input)}")
            if not self.inputs_hooked and any(g is not None for g in r):
                raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                   "should always return None or None for all gradients.")
            grad_input = r
        return grad_input

    def _on_output_grads(self, grads):
        self.grad_outputs = tuple(grads)
        if not self.inputs_hooked:
            self._call_hooks((None,) * self.n_inputs)
        return grads

    def _on_input_grads(self, grads):
        return self._call_hooks(tuple(grads))
