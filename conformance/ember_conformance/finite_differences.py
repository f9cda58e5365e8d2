"""The CPU reference's own derivatives against finite differences, in float64:
``gradcheck`` (first derivatives) and ``gradgradcheck`` (second derivatives: the first
derivative, as a function of the inputs and the output gradient, is differenced again).

Only the CPU runs these: other backends' gradients are compared with the CPU's (checks.py), so a
derivative formula is proven once, here. Each entry runs on its smallest few samples; inputs are
made contiguous leaves first, because finite differences perturb one element at a time and an
expanded (stride-0) layout would perturb several.
"""
from __future__ import annotations

import ember

from .checks import Result, _autograd_available, _flatten, selected_samples

# Entries whose second derivative ember does not provide, each with why. The gradgradcheck row
# of a listed entry reads "unsupported" with this reason; a listed entry that passes fails, so
# the list cannot outlive its reason. Review each addition like an API change.
GRADGRAD_UNSUPPORTED: dict[str, str] = {
    "native_layer_norm_backward": "its derivative (layer norm's double backward) reads the "
                                  "saved mean and rstd as constants, as PyTorch's "
                                  "layer_norm_double_backward does, so the third derivative "
                                  "misses their dependence on the input",
    "native_group_norm_backward": "its derivative (group norm's double backward) reads the "
                                  "saved mean and rstd as constants, as PyTorch's "
                                  "batchnorm-style double backward does, so the third derivative "
                                  "misses their dependence on the input",
    "ctc_loss": "like PyTorch's, the CTC backward op (_ctc_loss_backward) has no derivative "
                "of its own",
}

MAX_SAMPLES = 2
# gradgradcheck differences the first derivative: 2 × (elements of the inputs and the output
# gradients) evaluations of a backward pass. An entry's smallest sample always runs; a second
# one only when it is this small, which keeps the double-backward rows to a few seconds.
SECOND_SAMPLE_ELEMENTS = 64


def _candidates(info, only_sample):
    """(index, sample, size, inputs, call) for the float64 samples worth differencing, smallest
    first. ``inputs`` are the tensors to difference (lists of tensors, as ``cat`` takes, are
    spread out) and ``call(*inputs)`` runs the entry. A sample the op rejects, or whose result
    is not float64, tells nothing here."""
    sized = []
    cpu = ember.device("cpu")
    for index, sample in selected_samples(info, "float64", only_sample):
        args, kwargs = sample.build(cpu)
        tensors = [a for a in _spread(args)[0] if isinstance(a, ember.Tensor)]
        if not any(a.numel() and (a.is_floating_point() or a.is_complex()) for a in tensors):
            continue
        sized.append((sum(a.numel() for a in tensors), index, sample, args, kwargs))
    sized.sort(key=lambda x: x[:2])
    for size, index, sample, args, kwargs in sized:
        flat, rebuild = _spread(args)

        def call(*xs, rebuild=rebuild, kwargs=kwargs):
            return info.fn(*rebuild(xs), **kwargs)
        try:
            out = call(*(_leaf(a) for a in flat))
        except Exception:
            continue  # inputs the op rejects
        outs = [o for o in _flatten(out) if isinstance(o, ember.Tensor)]
        if not any(o.requires_grad for o in outs) or any(
                (o.is_floating_point() or o.is_complex()) and
                o.dtype not in (ember.float64, ember.complex128) for o in outs):
            continue  # a lower-precision result can't be differenced at float64's step
        yield index, sample, size, tuple(_leaf(a) for a in flat), call


def _spread(args):
    """Positional args with each list of tensors spread out, and the function putting the
    lists back."""
    flat, shape = [], []
    for a in args:
        if isinstance(a, (list, tuple)) and a and all(isinstance(x, ember.Tensor) for x in a):
            flat.extend(a)
            shape.append((type(a), len(a)))
        else:
            flat.append(a)
            shape.append(None)

    def rebuild(xs):
        out, i = [], 0
        for kind in shape:
            if kind is None:
                out.append(xs[i])
                i += 1
            else:
                out.append(kind[0](xs[i:i + kind[1]]))
                i += kind[1]
        return out
    return flat, rebuild


def _leaf(a):
    # complex inputs are differenced as pairs of reals (ember.autograd.gradcheck)
    if isinstance(a, ember.Tensor) and (a.is_floating_point() or a.is_complex()):
        return a.detach().contiguous().clone().requires_grad_(True)
    return a


def _not_applicable(suite, info):
    if not (info.differentiable and "float64" in info.grad_dtypes and
            "float64" in info.dtypes):
        return Result(suite, info.name, "float64", "skip", message="not differentiable")
    if not _autograd_available():
        return Result(suite, info.name, "float64", "skip", message="autograd not available")
    return None


def check_gradcheck(info, device, max_samples=MAX_SAMPLES, only_sample=None) -> Result:
    """First derivatives of ``info`` on the CPU against finite differences."""
    skipped = _not_applicable("gradcheck", info)
    if skipped is not None:
        return skipped
    count = 0
    for index, sample, _size, inputs, call in _candidates(info, only_sample):
        count += 1
        try:
            ember.autograd.gradcheck(call, inputs)
        except NotImplementedError as e:
            return Result("gradcheck", info.name, "float64", "skip", 0.0,
                          f"no derivative: {str(e)[:200]}", count, checks=count - 1)
        except Exception as e:
            return Result("gradcheck", info.name, "float64", "fail", float("inf"),
                          f"{sample.desc}: {type(e).__name__}: {str(e)[:300]}", count,
                          checks=count, sample_index=index, sample=sample.desc)
        if count >= max_samples:
            break
    return Result("gradcheck", info.name, "float64", "pass" if count else "skip", 0.0,
                  "" if count else "no float64 sample with a float64 result to difference", count,
                  checks=count)


def check_gradgradcheck(info, device, max_samples=MAX_SAMPLES, only_sample=None) -> Result:
    """Second derivatives (double backward) of ``info`` on the CPU against finite
    differences of its first derivative."""
    skipped = _not_applicable("gradgradcheck", info)
    if skipped is not None:
        return skipped
    listed = GRADGRAD_UNSUPPORTED.get(info.name)
    count = 0
    for index, sample, size, inputs, call in _candidates(info, only_sample):
        if count and size > SECOND_SAMPLE_ELEMENTS:
            break
        count += 1
        try:
            ember.autograd.gradgradcheck(call, inputs)
        except Exception as e:
            if isinstance(e, NotImplementedError) and _first_derivative_missing(call, inputs):
                return Result("gradgradcheck", info.name, "float64", "skip", 0.0,
                              f"no first derivative (see its gradcheck row): {str(e)[:200]}",
                              count, checks=count - 1)
            if listed is not None:
                return Result("gradgradcheck", info.name, "float64", "unsupported", 0.0,
                              f"second derivative not supported: {listed}", count,
                              checks=count - 1, sample_index=index, sample=sample.desc)
            return Result("gradgradcheck", info.name, "float64", "fail", float("inf"),
                          f"{sample.desc}: {type(e).__name__}: {str(e)[:300]}", count,
                          checks=count, sample_index=index, sample=sample.desc)
        if count >= max_samples:
            break
    if listed is not None and count:
        return Result("gradgradcheck", info.name, "float64", "fail", float("inf"),
                      f"listed in GRADGRAD_UNSUPPORTED ({listed}) but its second derivative "
                      f"passes on {count} sample(s): remove it from the list", count,
                      checks=count)
    return Result("gradgradcheck", info.name, "float64", "pass" if count else "skip", 0.0,
                  "" if count else "no float64 sample with a float64 result to difference", count,
                  checks=count)


def _first_derivative_missing(call, inputs) -> bool:
    """Whether one plain backward pass raises NotImplementedError: then the second derivative
    is not the problem, and the gradcheck row already says so."""
    outs = [o for o in _flatten(call(*inputs)) if isinstance(o, ember.Tensor) and o.requires_grad]
    wrt = [t for t in inputs if isinstance(t, ember.Tensor) and t.requires_grad]
    try:
        ember.autograd.grad(outs, wrt, [ember.ones_like(o) for o in outs], allow_unused=True)
    except NotImplementedError:
        return True
    return False
