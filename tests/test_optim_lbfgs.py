"""ember.optim.LBFGS: convergence to known minima (numpy), step by step against torch
(optional), state dict round trips and argument errors."""
import numpy as np
import pytest

import ember
from ember import optim


def _quadratic(n=6, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n), rng.standard_normal(n)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_quadratic_converges_to_the_solution(line_search_fn):
    A, b = _quadratic()
    At, bt = ember.tensor(A), ember.tensor(b)
    x = ember.zeros(len(b), dtype=ember.float64, requires_grad=True)
    opt = optim.LBFGS([x], max_iter=200, line_search_fn=line_search_fn,
                      tolerance_grad=1e-12, tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ (At @ x)) - bt @ x
        loss.backward()
        return loss

    for _ in range(5):
        opt.step(closure)
    # (both stop once the loss changes by less than tolerance_change: |grad| ~ 1e-7 here)
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(A, b), rtol=1e-5,
                               atol=1e-6)


def test_rosenbrock_with_strong_wolfe():
    xy = ember.tensor([-1.5, 2.0], dtype=ember.float64, requires_grad=True)
    opt = optim.LBFGS([xy], line_search_fn="strong_wolfe", max_iter=100,
                      tolerance_grad=1e-10, tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2
        loss.backward()
        return loss

    first = opt.step(closure)
    assert float(first) == pytest.approx(2.5 ** 2 + 100 * 0.25 ** 2)
    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(xy.detach().numpy(), [1.0, 1.0], atol=1e-6)


def _problem(lib, dtype):
    x = lib.tensor([-1.5, 2.0, 0.5, -0.7], dtype=dtype, requires_grad=True)
    y = lib.tensor([[0.3, -0.2], [0.1, 0.9]], dtype=dtype, requires_grad=True)

    def loss_fn():
        return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum() + \
            ((y @ y - 1.0) ** 2).sum() + (x[:2] * y[0]).sum() ** 2
    return [x, y], loss_fn


def _steps(lib, mod, dtype, kw, steps, perturb=None):
    params, loss_fn = _problem(lib, dtype)
    if perturb is not None:   # each parameter times (1 + sign * eps): one rounding's worth
        with lib.no_grad():
            for p, signs in zip(params, perturb):
                p.mul_(lib.tensor(1 + signs * np.finfo(np.float64).eps, dtype=dtype))
    opt = mod.LBFGS(params, **kw)

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        loss = float(opt.step(closure).detach())
        st = opt.state[params[0]]
        out.append((loss, [p.detach().numpy().copy() for p in params], st["func_evals"],
                    st["n_iter"]))
    return out, opt


TORCH_CASES = [{}, {"line_search_fn": "strong_wolfe"},
               {"history_size": 2, "max_iter": 7, "line_search_fn": "strong_wolfe"},
               {"lr": 0.5, "history_size": 3, "tolerance_change": 1e-5},
               {"tolerance_grad": 1e-3, "line_search_fn": "strong_wolfe", "max_eval": 9},
               {"max_iter": 4, "max_eval": 3}]


def _flat(params):
    return np.concatenate([p.ravel() for p in params])


@pytest.mark.parametrize("kw", TORCH_CASES, ids=[str(k) for k in TORCH_CASES])
def test_matches_torch_step_by_step(kw):
    # Both sides round differently (ember's kernels are not torch's), and L-BFGS on Rosenbrock
    # amplifies a rounding difference step after step (1e-16 becomes 4e-8 in 80 evaluations of
    # the lr=0.5 case), so the tolerance of step k is measured, not guessed: torch's own run
    # from parameters moved by one ulp (three random sign patterns) gives the trajectory's
    # amplification of one rounding; every evaluation so far injects at most one such
    # rounding, so |ember - torch| <= evaluations * (that spread + eps), relative to the values.
    torch = pytest.importorskip("torch")
    eps = np.finfo(np.float64).eps
    got, _ = _steps(ember, optim, ember.float64, kw, 4)
    want, _ = _steps(torch, torch.optim, torch.float64, kw, 4)
    rng = np.random.default_rng(0)
    nudged = [_steps(torch, torch.optim, torch.float64, kw, 4,
                     [rng.choice([-1.0, 1.0], size=p.shape) for p in want[0][1]])[0]
              for _ in range(3)]
    for k, ((gl, gp, ge, gi), (wl, wp, we, wi)) in enumerate(zip(got, want)):
        assert (ge, gi) == (we, wi)  # same number of evaluations and iterations
        scale = np.abs(_flat(wp)).max()
        spread = max(np.abs(_flat(n[k][1]) - _flat(wp)).max() for n in nudged) / scale
        loss_spread = max(abs(n[k][0] - wl) for n in nudged) / abs(wl)
        rtol = we * (spread + eps)
        assert np.abs(_flat(gp) - _flat(wp)).max() <= rtol * scale, (k, rtol)
        assert gl == pytest.approx(wl, rel=we * (loss_spread + eps), abs=we * eps)


def test_matches_torch_in_float32():
    # float32 tensors against PyTorch's: the scalars differ in rounding (Python floats here,
    # float32 0-d tensors there), so a well-conditioned problem and a looser tolerance
    torch = pytest.importorskip("torch")
    A, b = _quadratic(4)
    res = []
    for lib, mod in ((ember, optim), (torch, torch.optim)):
        At, bt = lib.tensor(A, dtype=lib.float32), lib.tensor(b, dtype=lib.float32)
        x = lib.zeros(4, dtype=lib.float32, requires_grad=True)
        opt = mod.LBFGS([x], max_iter=5, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = 0.5 * (x @ (At @ x)) - bt @ x
            loss.backward()
            return loss
        opt.step(closure)
        res.append(x.detach().numpy().copy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-4, atol=1e-5)


def test_complex_parameters_match_torch():
    # the closure sets the gradient by hand (PyTorch's convention for a real loss of complex z:
    # dL/dRe + i dL/dIm), so only the optimizer is compared
    torch = pytest.importorskip("torch")
    res = []
    for lib, mod in ((ember, optim), (torch, torch.optim)):
        z = lib.tensor([1 + 2j, -0.5 + 0.3j], dtype=lib.complex128, requires_grad=True)
        c = lib.tensor([0.2 - 1j, 1 + 1j], dtype=lib.complex128)
        opt = mod.LBFGS([z], max_iter=5)

        def closure():
            zr, zi = z.detach().real, z.detach().imag
            s = float((zr * zi).sum())
            d = z.detach() - c
            loss = float((d.real ** 2 + d.imag ** 2).sum()) + s ** 2
            z.grad = 2 * d + 2 * s * (zi + 1j * zr)
            return lib.tensor(loss)
        opt.step(closure)
        res.append(z.detach().numpy().copy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-9)


def test_state_dict_round_trip_continues_identically(tmp_path):
    kw = {"line_search_fn": "strong_wolfe", "history_size": 3, "max_iter": 3}
    params_a, loss_a = _problem(ember, ember.float64)
    opt_a = optim.LBFGS(params_a, **kw)

    def closure_for(opt, loss_fn):
        def closure():
            opt.zero_grad()
            loss = loss_fn()
            loss.backward()
            return loss
        return closure

    opt_a.step(closure_for(opt_a, loss_a))
    path = tmp_path / "lbfgs.ember"
    ember.save({"params": params_a, "opt": opt_a.state_dict()}, path)
    ck = ember.load(path)
    params_b, _ = _problem(ember, ember.float64)
    with ember.no_grad():
        for p, saved in zip(params_b, ck["params"]):
            p.copy_(saved)
    x, y = params_b

    def loss_b():
        return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum() + \
            ((y @ y - 1.0) ** 2).sum() + (x[:2] * y[0]).sum() ** 2

    opt_b = optim.LBFGS(params_b, **kw)
    opt_b.load_state_dict(ck["opt"])
    st = opt_b.state[params_b[0]]
    assert len(st["old_dirs"]) == len(opt_a.state[params_a[0]]["old_dirs"]) > 0
    for _ in range(2):
        la = float(opt_a.step(closure_for(opt_a, loss_a)))
        lb = float(opt_b.step(closure_for(opt_b, loss_b)))
        assert la == lb
    for p, q in zip(params_a, params_b):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_converged_start_returns_at_once():
    x = ember.zeros(3, requires_grad=True)
    opt = optim.LBFGS([x])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 0.0
    assert len(calls) == 1 and x.tolist() == [0.0, 0.0, 0.0]
    assert opt.state[x] == {"func_evals": 1, "n_iter": 0}


def test_errors():
    a, b = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.LBFGS([a], lr=-1)
    opt = optim.LBFGS([a])
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'closure'"):
        opt.step()
    with pytest.raises(TypeError, match="requires a closure that re-evaluates the model"):
        opt.step(None)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    opt = optim.LBFGS([a], line_search_fn="backtracking")
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
    assert opt.param_groups[0]["max_eval"] == 25  # max_iter * 5 // 4, like PyTorch
