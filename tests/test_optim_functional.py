"""torch's functional optimizer API (``torch.optim.adam.adam(params, grads, exp_avgs, …)``) at
the same ember paths (issue #30, item 3): each takes torch's lists and flags and updates them
in place as torch's does. The optimizer classes' ``step`` calls these functions, so the class
tests cover the same code; here torch itself is the reference, a few steps per option set, in
float64, for every implementation flag."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,), ()]
STEPS = 3


def _arrays(seed, count=len(SHAPES), positive=False):
    rng = np.random.default_rng(seed)
    out = [rng.standard_normal(s) for s in SHAPES[:count]]
    return [np.abs(a) + 0.1 for a in out] if positive else out


def _pair(arrays):
    return ([torch.tensor(a, dtype=torch.float64) for a in arrays],
            [ember.tensor(a, dtype=ember.float64) for a in arrays])


def _check_same(ts, es, what):
    assert len(ts) == len(es), what
    for i, (t, e) in enumerate(zip(ts, es)):
        if t is None:
            assert e is None, f"{what}[{i}]"
            continue
        np.testing.assert_allclose(e.numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-14,
                                   err_msg=f"{what}[{i}]")


def _fns(name):
    """torch's and ember's function at ``torch.optim.<name>`` / ``ember.optim.<name>``."""
    module, fn = name.split(".")
    return (getattr(importlib.import_module(f"torch.optim.{module}"), fn),
            getattr(importlib.import_module(f"ember.optim.{module}"), fn))


def _state(spec, k):
    """A state list for ``_run``: "zeros", "positive" (random > 0), "empty" (the list PyTorch
    gets for a state an option turns off), ("fill", v) like the parameters or ("scalar", v): a
    0-d tensor per parameter."""
    if spec == "empty":
        return [], []
    if spec == "zeros":
        return _pair([np.zeros(s) for s in SHAPES])
    if spec == "positive":
        return _pair(_arrays(10 + k, positive=True))
    kind, value = spec
    return _pair([np.full(s if kind == "fill" else (), value) for s in SHAPES])


def _run(name, state_names, empty=(), init=None, steps_list=True, **kwargs):
    """Run torch's and ember's ``name`` STEPS times on the same lists; compare everything."""
    tfn, efn = _fns(name)
    tparams, eparams = _pair(_arrays(0))
    specs = {state: "empty" if state in empty else "zeros" for state in state_names}
    specs.update(init or {})
    tstate, estate = {}, {}
    for k, state in enumerate(state_names):
        tstate[state], estate[state] = _state(specs[state], k)
    tsteps = [torch.tensor(0.0, dtype=torch.float64) for _ in SHAPES]
    esteps = [ember.tensor(0.0, dtype=ember.float64) for _ in SHAPES]
    for step in range(STEPS):
        tgrads, egrads = _pair(_arrays(100 + step))
        targs = [tparams, tgrads, *tstate.values()] + ([tsteps] if steps_list else [])
        eargs = [eparams, egrads, *estate.values()] + ([esteps] if steps_list else [])
        # torch's CPU build refuses capturable=True: its non-capturable update is the reference
        tfn(*targs, **{k: v for k, v in kwargs.items() if k != "capturable"})
        efn(*eargs, **{k: ember.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v
                       for k, v in kwargs.items()})
        _check_same(tparams, eparams, f"{name} {kwargs} step {step} params")
        for state in state_names:
            _check_same(tstate[state], estate[state], f"{name} {kwargs} step {step} {state}")
        if steps_list:
            _check_same(tsteps, esteps, f"{name} {kwargs} step {step} state_steps")


FUNCTIONS = ["sgd.sgd", "adam.adam", "adamw.adamw", "rmsprop.rmsprop", "adagrad.adagrad",
             "adadelta.adadelta", "adamax.adamax", "asgd.asgd", "nadam.nadam", "radam.radam",
             "rprop.rprop"]
SINGLE_IMPLS = [dict(foreach=False), dict(foreach=True), dict()]
DECAY = [(0, False), (0.1, True)]
IMPLS = [dict(foreach=False), dict(foreach=True), dict(), dict(fused=True)]


@pytest.mark.parametrize("impl", IMPLS, ids=str)
@pytest.mark.parametrize("momentum,dampening,nesterov", [(0, 0, False), (0.9, 0, False),
                                                         (0.9, 0.1, False), (0.9, 0, True)])
@pytest.mark.parametrize("weight_decay,maximize", [(0, False), (0.1, True)])
def test_sgd(impl, momentum, dampening, nesterov, weight_decay, maximize):
    tparams, eparams = _pair(_arrays(0))
    tbufs = [None] * len(SHAPES) if momentum else []
    ebufs = list(tbufs)
    kw = dict(weight_decay=weight_decay, momentum=momentum, lr=0.1, dampening=dampening,
              nesterov=nesterov, maximize=maximize, **impl)
    for step in range(STEPS):
        tgrads, egrads = _pair(_arrays(100 + step))
        _fns('sgd.sgd')[0](tparams, tgrads, tbufs, **kw)
        _fns('sgd.sgd')[1](eparams, egrads, ebufs, **kw)
        _check_same(tparams, eparams, f"sgd {kw} step {step}")
        _check_same(tbufs, ebufs, f"sgd {kw} step {step} momentum buffers")


@pytest.mark.parametrize("name", ["adam.adam", "adamw.adamw"])
@pytest.mark.parametrize("impl", IMPLS + [dict(capturable=True, foreach=False),
                                          dict(capturable=True)], ids=str)
@pytest.mark.parametrize("amsgrad,weight_decay,maximize",
                         [(False, 0, False), (True, 0.1, False), (False, 0.1, True)])
def test_adam(name, impl, amsgrad, weight_decay, maximize):
    _run(name, ["exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"],
         empty=() if amsgrad else ("max_exp_avg_sqs",), amsgrad=amsgrad, beta1=0.9,
         beta2=0.99, lr=0.01, weight_decay=weight_decay, eps=1e-8, maximize=maximize, **impl)


@pytest.mark.parametrize("name", ["adam.adam", "adamw.adamw"])
def test_adam_decoupled_and_tensor_lr(name):
    kw = dict(amsgrad=False, beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8,
              maximize=False, foreach=False)
    states = ["exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"]
    empty = ("max_exp_avg_sqs",)
    _run(name, states, empty=empty, lr=torch.tensor(0.01, dtype=torch.float64), **kw)
    if name == "adam.adam":
        _run(name, states, empty=empty, lr=0.01, decoupled_weight_decay=True, **kw)


@pytest.mark.parametrize("impl", [dict(foreach=False), dict(foreach=True), dict(),
                                  dict(capturable=True)], ids=str)
@pytest.mark.parametrize("centered,momentum", [(False, 0), (True, 0), (False, 0.9),
                                               (True, 0.9)])
@pytest.mark.parametrize("weight_decay,maximize", [(0, False), (0.1, True)])
def test_rmsprop(impl, centered, momentum, weight_decay, maximize):
    empty = (() if centered else ("grad_avgs",)) + (() if momentum else ("momentum_buffers",))
    _run("rmsprop.rmsprop", ["square_avgs", "grad_avgs", "momentum_buffers"], empty=empty,
         lr=0.01, alpha=0.9, eps=1e-8, weight_decay=weight_decay, momentum=momentum,
         centered=centered, maximize=maximize, **impl)


@pytest.mark.parametrize("impl", SINGLE_IMPLS + [dict(fused=True)], ids=str)
@pytest.mark.parametrize("lr_decay", [0, 0.1])
@pytest.mark.parametrize("weight_decay,maximize", DECAY)
def test_adagrad(impl, lr_decay, weight_decay, maximize):
    _run("adagrad.adagrad", ["state_sums"], init={"state_sums": ("fill", 0.1)}, lr=0.1,
         weight_decay=weight_decay, lr_decay=lr_decay, eps=1e-10, maximize=maximize, **impl)


@pytest.mark.parametrize("impl", SINGLE_IMPLS, ids=str)
@pytest.mark.parametrize("weight_decay,maximize", DECAY)
def test_adadelta(impl, weight_decay, maximize):
    _run("adadelta.adadelta", ["square_avgs", "acc_deltas"], lr=1.0, rho=0.9, eps=1e-6,
         weight_decay=weight_decay, maximize=maximize, **impl)


@pytest.mark.parametrize("impl", SINGLE_IMPLS, ids=str)
@pytest.mark.parametrize("weight_decay,maximize", DECAY)
def test_adamax(impl, weight_decay, maximize):
    _run("adamax.adamax", ["exp_avgs", "exp_infs"], eps=1e-8, beta1=0.9, beta2=0.99, lr=0.01,
         weight_decay=weight_decay, maximize=maximize, **impl)


@pytest.mark.parametrize("impl", SINGLE_IMPLS, ids=str)
@pytest.mark.parametrize("t0", [1.0, 1e6])
@pytest.mark.parametrize("weight_decay,maximize", DECAY)
def test_asgd(impl, t0, weight_decay, maximize):
    _run("asgd.asgd", ["axs", "mus", "etas"],
         init={"mus": ("scalar", 1.0), "etas": ("scalar", 0.01)}, lambd=1e-4, lr=0.01, t0=t0,
         alpha=0.75, weight_decay=weight_decay, maximize=maximize, **impl)


@pytest.mark.parametrize("impl", SINGLE_IMPLS, ids=str)
@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("weight_decay,maximize", DECAY)
def test_nadam(impl, decoupled, weight_decay, maximize):
    _run("nadam.nadam", ["exp_avgs", "exp_avg_sqs", "mu_products"],
         init={"mu_products": ("scalar", 1.0)}, decoupled_weight_decay=decoupled, beta1=0.9,
         beta2=0.99, lr=0.01, weight_decay=weight_decay, momentum_decay=4e-3, eps=1e-8,
         maximize=maximize, **impl)


@pytest.mark.parametrize("impl", SINGLE_IMPLS, ids=str)
@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("weight_decay,maximize", DECAY)
@pytest.mark.parametrize("beta2", [0.99, 0.5])     # 0.5: the rectified branch from step 1
def test_radam(impl, decoupled, weight_decay, maximize, beta2):
    _run("radam.radam", ["exp_avgs", "exp_avg_sqs"], decoupled_weight_decay=decoupled,
         beta1=0.9, beta2=beta2, lr=0.01, weight_decay=weight_decay, eps=1e-8,
         maximize=maximize, **impl)


@pytest.mark.parametrize("impl", SINGLE_IMPLS, ids=str)
@pytest.mark.parametrize("maximize", [False, True])
def test_rprop(impl, maximize):
    _run("rprop.rprop", ["prevs", "step_sizes"], init={"step_sizes": ("fill", 0.01)},
         step_size_min=1e-6, step_size_max=50, etaminus=0.5, etaplus=1.2, maximize=maximize,
         **impl)


def _errors(tfn, efn, *args, **kwargs):
    with pytest.raises(Exception) as texc:
        tfn(*args[0], **kwargs)
    with pytest.raises(type(texc.value)) as eexc:
        efn(*args[1], **kwargs)
    assert str(eexc.value) == str(texc.value)


# every functional form but asgd and sgd checks its step counts first (PyTorch's message)
STEP_CHECKS = {
    "adam.adam": (3, dict(amsgrad=False, beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0,
                          eps=1e-8, maximize=False)),
    "adamw.adamw": (3, dict(amsgrad=False, beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0,
                            eps=1e-8, maximize=False)),
    "rmsprop.rmsprop": (3, dict(lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0, momentum=0,
                                centered=False)),
    "adagrad.adagrad": (1, dict(lr=0.1, weight_decay=0, lr_decay=0, eps=1e-10,
                                maximize=False)),
    "adadelta.adadelta": (2, dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False)),
    "adamax.adamax": (2, dict(eps=1e-8, beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0)),
    "nadam.nadam": (3, dict(beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0,
                            momentum_decay=4e-3, eps=1e-8)),
    "radam.radam": (2, dict(beta1=0.9, beta2=0.99, lr=0.01, weight_decay=0, eps=1e-8)),
    "rprop.rprop": (2, dict(step_size_min=1e-6, step_size_max=50, etaminus=0.5,
                            etaplus=1.2)),
}


@pytest.mark.parametrize("name", sorted(STEP_CHECKS))
def test_state_steps_must_be_tensors(name):
    n_states, kw = STEP_CHECKS[name]
    (tp,), (ep,) = _pair(_arrays(0, 1))
    (tg,), (eg,) = _pair(_arrays(1, 1))
    _errors(*_fns(name), ([tp], [tg], *[[tp * 0]] * n_states, [0.0]),
            ([ep], [eg], *[[ep * 0]] * n_states, [0.0]), **kw)


def test_grad_scaling_is_refused():
    """ember's steps take no AMP scale (a cut, see ``check_no_grad_scaling``): refused, not
    ignored."""
    (ep,), (eg,) = (ember.ones(2),), (ember.ones(2),)
    with pytest.raises(RuntimeError, match="grad_scale"):
        _fns("sgd.sgd")[1]([ep], [eg], [], fused=True, grad_scale=ember.tensor(2.0),
                           weight_decay=0, momentum=0, lr=0.1, dampening=0, nesterov=False,
                           maximize=False)


def test_signatures_match_torch():
    import inspect
    for name in FUNCTIONS:
        t, e = (inspect.signature(f) for f in _fns(name))
        assert [(p.name, p.kind, p.default) for p in e.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in t.parameters.values()], name


def test_classes_call_the_functional_form(monkeypatch):
    """One implementation per algorithm: ``step`` goes through the module's function."""
    calls = []
    adam_module = importlib.import_module("ember.optim.adam")
    real = adam_module.adam
    monkeypatch.setattr(adam_module, "adam", lambda *a, **k: (calls.append(1), real(*a, **k)))
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    p.grad = ember.tensor([0.5, -0.5])
    ember.optim.AdamW([p]).step()
    assert calls
