"""ember.func's seed use cases, each checked against the plain computation it replaces.

    python examples/func_examples.py

1. per-sample gradients: ``vmap(grad(loss), in_dims=(None, 0, 0))`` over a batch of 64 equals
   64 single-example backward passes;
2. an ensemble of 5 MLPs run at once with ``vmap`` over ``stack_module_state``;
3. the Jacobian and Hessian of a small network against finite differences;
4. a batched MAML inner loop (second-order meta-gradients through ``grad(vmap(grad))``) against
   a loop over the tasks.

Every function returns the largest *relative* difference it found (max |a - b| / max |b| per
compared tensor), so tests (tests/test_func_examples.py) and this script check the same thing.
Both sides of each comparison compute the same sums in different orders, so they agree to
rounding: at most about n * eps of the dtype for dot products of length n (finite differences
add eps / h and h^2). ``rounding_bound`` is that bound; the script prints it beside each result.
"""
from __future__ import annotations

import copy
import math

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.func import (functional_call, grad, hessian, jacrev, stack_module_state, vmap)


def _max_diff(a, b) -> float:
    """max |a - b| / max |b|: the difference relative to the reference's scale."""
    a, b = a.detach(), b.detach()
    scale = b.abs().max().item()
    return (a - b).abs().max().item() / (scale if scale > 0 else 1.0)


def rounding_bound(dtype, n: int) -> float:
    """The relative difference two orders of summing dot products of length ``n`` (summed over
    the chain of layers) can reach in ``dtype``: n * eps (Higham's gamma_n)."""
    return n * ember.finfo(dtype).eps


# -- 1. per-sample gradients --------------------------------------------------------------------
def per_sample_gradients(sizes=(784, 256, 10), batch=64, seed=0):
    """Largest relative difference between vmap(grad) per-sample gradients and one backward
    per example (float32; bound: ``rounding_bound(float32, sum(sizes))``)."""
    ember.manual_seed(seed)
    model = nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2]))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = ember.randn(batch, sizes[0])
    y = ember.randint(0, sizes[2], (batch,))

    def loss(p, xi, yi):
        out = functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    worst = 0.0
    for i in range(batch):
        model.zero_grad()
        F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for name, p in model.named_parameters():
            worst = max(worst, _max_diff(per_sample[name][i], p.grad))
    return worst


# -- 2. ensembles -------------------------------------------------------------------------------
def ensemble(n_models=5, batch=16, seed=1):
    """Largest relative difference between vmap over stacked weights and running each model
    (float32; dot products of length 8 and 32)."""
    ember.manual_seed(seed)
    models = [nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 3))
              for _ in range(n_models)]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0])

    def run(p, b, x):
        return functional_call(base, (p, b), (x,))

    x = ember.randn(batch, 8)
    same_input = vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    xs = ember.randn(n_models, batch, 8)
    own_input = vmap(run)(params, buffers, xs)
    worst = 0.0
    for i, m in enumerate(models):
        worst = max(worst, _max_diff(same_input[i], m(x)), _max_diff(own_input[i], m(xs[i])))
    return worst


# -- 3. Jacobian and Hessian --------------------------------------------------------------------
def jacobian_and_hessian(seed=2, eps=1e-6):
    """(Jacobian error, Hessian error) relative to central differences in float64: the
    differences carry about n * eps / eps_step of rounding (dot products of length n = 4 + 6)
    and eps_step**2 of truncation."""
    ember.manual_seed(seed)
    net = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).double()
    params = {k: v.detach() for k, v in net.named_parameters()}
    x = ember.randn(4, dtype=ember.float64)

    def f(inp):
        return functional_call(net, params, (inp,))

    def energy(inp):
        return f(inp).pow(2).sum()

    jac = jacrev(f)(x)
    hess = hessian(energy)(x)
    eye = ember.eye(4, dtype=ember.float64)
    fd_jac = ember.stack([(f(x + eps * eye[i]) - f(x - eps * eye[i])) / (2 * eps)
                          for i in range(4)], 1)
    g = grad(energy)
    fd_hess = ember.stack([(g(x + eps * eye[i]) - g(x - eps * eye[i])) / (2 * eps)
                           for i in range(4)], 1)
    return _max_diff(jac, fd_jac), _max_diff(hess, fd_hess)


# -- 4. MAML ------------------------------------------------------------------------------------
def _sine_tasks(n_tasks, shots, generator):
    amp = ember.rand(n_tasks, 1, generator=generator) + 0.1
    phase = ember.rand(n_tasks, 1, generator=generator) * math.pi

    def draw():
        xs = ember.rand(n_tasks, shots, generator=generator) * 10 - 5
        return xs.unsqueeze(-1), (amp * (xs + phase).sin()).unsqueeze(-1)
    return draw() + draw()   # support x, y, query x, y


def maml(n_tasks=4, shots=10, inner_steps=2, inner_lr=0.01, seed=3):
    """(meta-loss before, after 20 meta-steps, largest relative difference of the batched and
    looped meta-loss and meta-gradients; float32)."""
    ember.manual_seed(seed)
    net = nn.Sequential(nn.Linear(1, 32), nn.ReLU(), nn.Linear(32, 1))
    params = {k: v.detach() for k, v in net.named_parameters()}
    sx, sy, qx, qy = _sine_tasks(n_tasks, shots, ember.Generator().manual_seed(seed))

    def loss(p, x, y):
        return F.mse_loss(functional_call(net, p, (x,)), y)

    def adapted_query_loss(p, x_s, y_s, x_q, y_q):
        for _ in range(inner_steps):   # differentiable inner SGD: second-order MAML
            g = grad(loss)(p, x_s, y_s)
            p = {k: p[k] - inner_lr * g[k] for k in p}
        return loss(p, x_q, y_q)

    def meta_loss(p):
        return vmap(adapted_query_loss, in_dims=(None, 0, 0, 0, 0))(p, sx, sy, qx, qy).mean()

    batched_value = meta_loss(params)
    batched_grads = grad(meta_loss)(params)
    looped_value = sum(adapted_query_loss(params, sx[t], sy[t], qx[t], qy[t])
                       for t in range(n_tasks)) / n_tasks
    looped_grads = [grad(adapted_query_loss)(params, sx[t], sy[t], qx[t], qy[t])
                    for t in range(n_tasks)]
    worst = _max_diff(batched_value, looped_value)
    for k in params:
        mean_grad = sum(g[k] for g in looped_grads) / n_tasks
        worst = max(worst, _max_diff(batched_grads[k], mean_grad))
    # a few meta-steps lower the meta-loss
    p = params
    for _ in range(20):
        gs = grad(meta_loss)(p)
        p = {k: p[k] - 0.02 * gs[k] for k in p}
    return batched_value.item(), meta_loss(p).item(), worst


def main():
    f32 = ember.float32
    print(f"per-sample gradients (784-256-10, batch 64): max |vmap(grad) - 64 backward passes| "
          f"= {per_sample_gradients():.2e} relative (rounding bound "
          f"{rounding_bound(f32, 784 + 256 + 10):.1e})")
    print(f"ensemble of 5 MLPs: max |vmap - each model| = {ensemble():.2e} relative (bound "
          f"{rounding_bound(f32, 8 + 32 + 3):.1e})")
    jac_err, hess_err = jacobian_and_hessian()
    print(f"Jacobian vs finite differences: {jac_err:.2e}; Hessian: {hess_err:.2e} relative "
          f"(bound {rounding_bound(ember.float64, 10) / 1e-6 + 1e-12:.1e})")
    before, after, err = maml()
    print(f"MAML (4 tasks, 2 inner steps): meta-loss {before:.3f} -> {after:.3f} after 20 "
          f"meta-steps; max |batched - looped| (loss and meta-gradients) = {err:.2e} relative "
          f"(bound {rounding_bound(f32, (32 + 10) * 5):.1e})")


if __name__ == "__main__":
    main()
