"""Random ops and generators: reproducibility, generator state, distributions, dtypes, errors."""
import math

import numpy as np
import pytest

import ember

N = 100_000


def host(t):
    return t.numpy()


@pytest.fixture(autouse=True)
def _fresh_seed():
    ember.manual_seed(1234)


# every random op once; X is ember or torch
DRAWS = {
    "rand": lambda X, **g: X.rand(3, 4, **g),
    "randn": lambda X, **g: X.randn(5, **g),
    "rand_complex": lambda X, **g: X.rand(3, dtype=X.complex64, **g),
    "randn_float16": lambda X, **g: X.randn(6, dtype=X.float16, **g),
    "randint": lambda X, **g: X.randint(-5, 5, (7,), **g),
    "randperm": lambda X, **g: X.randperm(10, **g),
    "normal_tensor_tensor": lambda X, **g: X.normal(X.zeros(2, 3), X.ones(3), **g),
    "normal_tensor_float": lambda X, **g: X.normal(X.arange(4.0), 2.0, **g),
    "normal_float_tensor": lambda X, **g: X.normal(1.0, X.full((4,), 0.5), **g),
    "normal_float_float": lambda X, **g: X.normal(1.0, 3.0, (2, 2), **g),
    "bernoulli": lambda X, **g: X.bernoulli(X.full((20,), 0.3), **g),
    "bernoulli_p": lambda X, **g: X.bernoulli(X.zeros(20), 0.7, **g),
    "multinomial": lambda X, **g: X.multinomial(X.tensor([0.1, 0.2, 0.7]), 3, **g),
    "multinomial_replacement": lambda X, **g: X.multinomial(X.ones(2, 5), 8, True, **g),
    "rand_like": lambda X, **g: X.rand_like(X.zeros(3, dtype=X.float64), **g),
    "randn_like": lambda X, **g: X.randn_like(X.zeros(2, 2), **g),
    "randint_like": lambda X, **g: X.randint_like(X.zeros(4, dtype=X.int32), 3, 9, **g),
    "uniform_": lambda X, **g: X.empty(6).uniform_(-2, 3, **g),
    "normal_": lambda X, **g: X.empty(6, dtype=X.float64).normal_(4, 0.5, **g),
    "random_": lambda X, **g: X.empty(6, dtype=X.int16).random_(**g),
    "random_to": lambda X, **g: X.empty(6).random_(100, **g),
    "random_from_to": lambda X, **g: X.empty(6, dtype=X.int64).random_(-50, 50, **g),
    "exponential_": lambda X, **g: X.empty(6).exponential_(2.0, **g),
    "bernoulli_": lambda X, **g: X.empty(8, dtype=X.uint8).bernoulli_(0.5, **g),
    "bernoulli_tensor_p": lambda X, **g: X.zeros(2, 4).bernoulli_(X.full((4,), 0.5), **g),
}


# -- reproducibility ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", DRAWS)
def test_manual_seed_reproduces(name):
    draw = DRAWS[name]
    ember.manual_seed(7)
    a = host(draw(ember))
    ember.manual_seed(7)
    b = host(draw(ember))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", DRAWS)
def test_explicit_generator_reproduces_and_leaves_default_alone(name):
    draw = DRAWS[name]
    g = ember.Generator().manual_seed(99)
    before = ember.get_rng_state()
    a = host(draw(ember, generator=g))
    np.testing.assert_array_equal(host(ember.get_rng_state()), host(before))
    b = host(draw(ember, generator=ember.Generator().manual_seed(99)))
    np.testing.assert_array_equal(a, b)


def test_consecutive_draws_differ_and_seeds_differ():
    ember.manual_seed(0)
    a, b = host(ember.rand(100)), host(ember.rand(100))
    assert not np.array_equal(a, b)
    ember.manual_seed(1)
    assert not np.array_equal(a, host(ember.rand(100)))


def test_generators_are_independent():
    g1 = ember.Generator().manual_seed(5)
    g2 = ember.Generator().manual_seed(5)
    first = host(ember.rand(10, generator=g1))
    ember.rand(1000)  # draws from the default generator must not move g2
    ember.rand(7, generator=ember.Generator().manual_seed(5))
    np.testing.assert_array_equal(first, host(ember.rand(10, generator=g2)))
    np.testing.assert_array_equal(host(ember.rand(10, generator=g1)),
                                  host(ember.rand(10, generator=g2)))


def test_generator_defaults():
    g = ember.Generator()
    assert g.device == ember.device("cpu")
    assert g.initial_seed() == 67280421310721  # PyTorch's default seed
    assert "Generator" in repr(g)
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    s = g.seed()
    assert g.initial_seed() == s
    assert ember.manual_seed(11).initial_seed() == 11 == ember.initial_seed()


@pytest.mark.parametrize("seed", [2 ** 64, -(2 ** 63) - 1])
def test_manual_seed_overflow(seed):
    with pytest.raises(ValueError, match="Overflow"):
        ember.Generator().manual_seed(seed)


# -- generator state ------------------------------------------------------------------------------
def test_get_set_state_round_trip():
    g = ember.Generator().manual_seed(42)
    ember.rand(3, generator=g)
    ember.randn(1, generator=g)  # leave numpy's Philox in the middle of a block
    state = g.get_state()
    assert state.dtype is ember.uint8 and state.ndim == 1 and state.device == ember.device("cpu")
    expected = [host(f(ember, generator=g)) for f in DRAWS.values()]
    g.manual_seed(0)
    assert g.initial_seed() == 0
    assert g.set_state(state) is g
    assert g.initial_seed() == 42  # the seed is part of the state, as in PyTorch
    for f, want in zip(DRAWS.values(), expected):
        np.testing.assert_array_equal(host(f(ember, generator=g)), want)


def test_global_rng_state_round_trip():
    ember.manual_seed(3)
    ember.rand(5)
    state = ember.get_rng_state()
    a = host(ember.randn(50))
    ember.rand(17)
    ember.set_rng_state(state)
    np.testing.assert_array_equal(host(ember.randn(50)), a)


def test_get_state_is_a_snapshot():
    g = ember.Generator()
    s = g.get_state()
    saved = host(s).copy()
    ember.rand(10, generator=g)
    np.testing.assert_array_equal(host(s), saved)
    assert not np.array_equal(host(g.get_state()), saved)


def test_set_state_errors():
    g = ember.Generator()
    with pytest.raises(TypeError, match="uint8"):
        g.set_state([1, 2, 3])
    with pytest.raises(TypeError, match="uint8"):
        g.set_state(ember.zeros(g.get_state().numel()))
    with pytest.raises(RuntimeError, match="size"):
        g.set_state(ember.zeros(3, dtype=ember.uint8))


# -- distributions (loose bounds, fixed seed) -----------------------------------------------------
def test_rand_uniform_unit_interval():
    u = host(ember.rand(N))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - 1 / math.sqrt(12)) < 0.01


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rand_narrow_floats_never_reach_one(dtype):
    u = ember.rand(N, dtype=getattr(ember, dtype)).float().numpy()
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01


def test_randn_moments():
    z = host(ember.randn(N, dtype=ember.float64))
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1.0) < 0.02


def test_complex_randn_has_unit_variance():
    z = host(ember.randn(N, dtype=ember.complex64))
    assert abs(z.real.std() - math.sqrt(0.5)) < 0.01 and abs(z.imag.std() - math.sqrt(0.5)) < 0.01
    u = host(ember.rand(N, dtype=ember.complex128))
    assert 0 <= u.real.min() and u.real.max() < 1 and 0 <= u.imag.min() and u.imag.max() < 1


def test_randint_range_hits_every_value():
    r = host(ember.randint(-3, 4, (N,)))
    assert set(np.unique(r).tolist()) == set(range(-3, 4))
    counts = np.bincount(r + 3)
    assert counts.min() > N / 7 * 0.9


def test_randint_overloads():
    assert host(ember.randint(5, (1000,))).max() < 5
    assert host(ember.randint(5, size=(1000,))).min() >= 0
    assert host(ember.randint(low=2, high=4, size=(100,))).min() >= 2
    r = host(ember.randint(10, 12, [100]))
    assert set(np.unique(r).tolist()) == {10, 11}
    big = host(ember.randint(-(2 ** 63), 2 ** 63 - 1, (100,)))
    assert big.dtype == np.int64 and (big < 0).any() and (big > 0).any()


def test_randperm_is_a_permutation():
    for n in (0, 1, 2, 1000):
        p = host(ember.randperm(n))
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    assert not np.array_equal(host(ember.randperm(1000)), np.arange(1000))
    assert host(ember.randperm(5, dtype=ember.float32)).dtype == np.float32


def test_normal_forms():
    m = host(ember.normal(ember.tensor([-100.0, 0.0, 100.0]).expand(N // 10, 3), 1.0))
    np.testing.assert_allclose(m.mean(0), [-100, 0, 100], atol=0.05)
    s = host(ember.normal(0.0, ember.tensor([0.0, 1.0, 10.0]).expand(N // 10, 3)))
    assert (s[:, 0] == 0).all()
    np.testing.assert_allclose(s.std(0), [0, 1, 10], rtol=0.03)
    f = host(ember.normal(5.0, 2.0, (N,)))
    assert abs(f.mean() - 5) < 0.05 and abs(f.std() - 2) < 0.05


def test_in_place_distributions():
    u = host(ember.empty(N, dtype=ember.float64).uniform_(-2, 6))
    assert u.min() >= -2 and u.max() < 6 and abs(u.mean() - 2) < 0.05
    n = host(ember.empty(N).normal_(3, 0.5))
    assert abs(n.mean() - 3) < 0.01 and abs(n.std() - 0.5) < 0.01
    e = host(ember.empty(N).exponential_(4.0))
    assert e.min() >= 0 and abs(e.mean() - 0.25) < 0.01
    r = host(ember.empty(N).random_(-2, 3))
    assert set(np.unique(r).tolist()) == {-2, -1, 0, 1, 2}


def test_in_place_writes_non_contiguous_views_only():
    base = ember.zeros(4, 6)
    view = base.t()[::2]  # rows of the transpose: a strided view
    view.uniform_(1, 2)
    b = host(base)
    assert (b[:, ::2] >= 1).all() and (b[:, 1::2] == 0).all()
    assert base._version == view._version == 1


@pytest.mark.parametrize("dtype, top", [("int8", 127), ("uint8", 255), ("int16", 2 ** 15 - 1),
                                        ("bool", 1), ("float32", 2 ** 24), ("float16", 2 ** 11),
                                        ("bfloat16", 2 ** 8)])
def test_random_default_range(dtype, top):
    t = ember.empty(N, dtype=getattr(ember, dtype)).random_()
    v = t.double().numpy() if dtype.startswith(("float", "bfloat")) else host(t).astype(np.int64)
    assert v.min() >= 0 and v.max() <= top
    assert v.max() > top * 0.9  # the whole range is used


def test_random_from_to_none_goes_to_dtype_max():
    v = host(ember.empty(N, dtype=ember.int8).random_(120, None)).astype(int)
    assert set(np.unique(v).tolist()) == set(range(120, 128))


def test_bernoulli_frequency():
    p = ember.tensor([0.0, 0.25, 1.0]).expand(N // 10, 3)
    b = host(ember.bernoulli(p))
    assert set(np.unique(b).tolist()) <= {0.0, 1.0}
    np.testing.assert_allclose(b.mean(0), [0, 0.25, 1], atol=0.02)
    assert abs(host(ember.zeros(N).bernoulli_(0.8)).mean() - 0.8) < 0.01
    assert abs(host(ember.bernoulli(ember.zeros(N), p=0.1)).mean() - 0.1) < 0.01
    assert abs(host(ember.empty(N, dtype=ember.bool).bernoulli_()).mean() - 0.5) < 0.01


def test_multinomial_with_replacement_frequency():
    probs = ember.tensor([[1.0, 0.0, 3.0], [0.0, 5.0, 5.0]])  # unnormalized rows
    s = host(ember.multinomial(probs, N // 10, replacement=True))
    assert s.shape == (2, N // 10) and s.dtype == np.int64
    f0 = np.bincount(s[0], minlength=3) / s.shape[1]
    f1 = np.bincount(s[1], minlength=3) / s.shape[1]
    np.testing.assert_allclose(f0, [0.25, 0, 0.75], atol=0.02)
    np.testing.assert_allclose(f1, [0, 0.5, 0.5], atol=0.02)


def test_multinomial_without_replacement():
    probs = ember.tensor([0.1, 0.0, 0.2, 0.3, 0.4])
    for _ in range(20):
        s = host(ember.multinomial(probs, 4))
        assert len(set(s.tolist())) == 4 and 1 not in s.tolist()
    # zero-probability categories come only once the others are exhausted
    assert sorted(host(ember.multinomial(probs, 5)).tolist()) == [0, 1, 2, 3, 4]
    firsts = [int(ember.multinomial(probs, 1)) for _ in range(2000)]
    freq = np.bincount(firsts, minlength=5) / 2000
    np.testing.assert_allclose(freq, [0.1, 0, 0.2, 0.3, 0.4], atol=0.04)
    rows = host(ember.multinomial(ember.ones(3, 6), 6))
    for row in rows:
        assert sorted(row.tolist()) == list(range(6))


def test_multinomial_method_and_empty_batch():
    assert ember.ones(4).multinomial(2).shape == (2,)
    assert ember.multinomial(ember.ones(0, 3), 2).shape == (0, 2)


# -- dtype, shape, device -------------------------------------------------------------------------
SHAPE_CASES = {
    "rand_sizes": lambda X: X.rand(2, 3),
    "rand_tuple": lambda X: X.rand((2, 3)),
    "rand_list": lambda X: X.rand([4]),
    "rand_size_kw": lambda X: X.rand(size=(1, 2)),
    "rand_0d": lambda X: X.rand(()),
    "rand_empty": lambda X: X.rand(0, 3),
    "rand_float64": lambda X: X.rand(2, dtype=X.float64),
    "randn_bfloat16": lambda X: X.randn(2, dtype=X.bfloat16),
    "randn_complex128": lambda X: X.randn(2, dtype=X.complex128),
    "randint_default": lambda X: X.randint(3, (2, 2)),
    "randint_int32": lambda X: X.randint(0, 3, (2,), dtype=X.int32),
    "randint_float": lambda X: X.randint(0, 3, (2,), dtype=X.float32),
    "randint_bool": lambda X: X.randint(0, 2, (2,), dtype=X.bool),
    "randperm": lambda X: X.randperm(4),
    "randperm_float": lambda X: X.randperm(4, dtype=X.float64),
    "normal_promotes": lambda X: X.normal(X.zeros(3, dtype=X.float64), X.ones(2, 1)),
    "normal_float_tensor": lambda X: X.normal(0.0, X.ones(3, dtype=X.float64)),
    "normal_size_dtype": lambda X: X.normal(0.0, 1.0, size=(2,), dtype=X.float64),
    "bernoulli_keeps_dtype": lambda X: X.bernoulli(X.zeros(3, dtype=X.float64)),
    "bernoulli_p_int_input": lambda X: X.bernoulli(X.zeros(3, dtype=X.int64), p=0.5),
    "bernoulli_method": lambda X: X.zeros(2, 2).bernoulli(),
    "multinomial_1d": lambda X: X.multinomial(X.ones(5), 2),
    "multinomial_float64": lambda X: X.multinomial(X.ones(2, 5, dtype=X.float64), 2),
    "rand_like_dtype": lambda X: X.rand_like(X.zeros(2, dtype=X.float64)),
    "rand_like_override": lambda X: X.rand_like(X.zeros(2), dtype=X.float16),
    "randn_like": lambda X: X.randn_like(X.zeros(2, 3)),
    "randint_like_float": lambda X: X.randint_like(X.zeros(2), 5),
    "randint_like_int": lambda X: X.randint_like(X.zeros(2, dtype=X.int8), 3, 5),
    "randint_like_kw": lambda X: X.randint_like(X.zeros(3), low=3, high=5),
    "uniform_complex": lambda X: X.zeros(2, dtype=X.complex64).uniform_(),
    "random_bool": lambda X: X.zeros(3, dtype=X.bool).random_(),
    "fill_": lambda X: X.zeros(2, dtype=X.int32).fill_(7),
}


@pytest.mark.parametrize("name", SHAPE_CASES)
def test_result_dtype_shape_device(name):
    t = SHAPE_CASES[name](ember)
    assert t.device == ember.device("cpu")
    torch = pytest.importorskip("torch")
    ref = SHAPE_CASES[name](torch)
    assert t.dtype.name == str(ref.dtype).removeprefix("torch."), name
    assert tuple(t.shape) == tuple(ref.shape)


def test_default_dtype_is_respected():
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.rand(2).dtype is ember.float64
        assert ember.randn(2).dtype is ember.float64
        assert ember.normal(0.0, 1.0, (2,)).dtype is ember.float64
        assert ember.randint(3, (2,)).dtype is ember.int64
    finally:
        ember.set_default_dtype(ember.float32)


def test_device_argument_and_out():
    t = ember.rand(3, device="cpu")
    assert t.device == ember.device("cpu")
    out = ember.empty(0)
    assert ember.randn(4, out=out) is out and out.shape == (4,)


def test_fill_and_zero():
    t = ember.empty(2, 3)
    assert t.fill_(2.5) is t and (host(t) == 2.5).all()
    assert t.zero_() is t and (host(t) == 0).all()
    assert t._version == 2
    assert (host(ember.empty(3, dtype=ember.int64).fill_(2.7)) == 2).all()
    assert (host(ember.empty(3, dtype=ember.uint8).fill_(-1)) == 255).all()
    assert host(ember.empty(2, dtype=ember.bool).fill_(0.5)).all()
    assert (host(ember.empty(2).fill_(ember.tensor(4))) == 4).all()
    assert (host(ember.empty(2, dtype=ember.complex64).fill_(1 + 2j)) == 1 + 2j).all()
    assert (host(ember.empty(2).fill_(np.float32(1.5))) == 1.5).all()
    base = ember.zeros(3, 3)
    base[:, 1].fill_(1)
    np.testing.assert_array_equal(host(base), [[0, 1, 0]] * 3)


# -- errors ---------------------------------------------------------------------------------------
ERRORS = [
    (lambda X: X.randint(5, 5, (3,)), RuntimeError, "expects 'from' to be less than 'to'"),
    (lambda X: X.randint(0, 300, (3,), dtype=X.uint8), RuntimeError, "to - 1 is out of bounds"),
    (lambda X: X.randint(-1, 3, (3,), dtype=X.uint8), RuntimeError, "from is out of bounds"),
    (lambda X: X.randint(0, 3, (2,), dtype=X.complex64), RuntimeError, "complex64"),
    (lambda X: X.randint(0, 5, 3), TypeError, "size"),
    (lambda X: X.randint(2.5, (2,)), TypeError, "must be int"),
    (lambda X: X.rand(-1), RuntimeError, "negative dimension"),
    (lambda X: X.rand(), TypeError, "size"),
    (lambda X: X.rand(2, 3, generator=5), TypeError, "generator"),
    (lambda X: X.rand(2, dtype=X.int64), NotImplementedError, "not implemented for 'Long'"),
    (lambda X: X.randn(2, dtype=X.bool), NotImplementedError, "not implemented for 'Bool'"),
    (lambda X: X.rand_like(X.zeros(2, dtype=X.int32)), NotImplementedError, "'Int'"),
    (lambda X: X.randperm(-1), RuntimeError, "negative dimension"),
    (lambda X: X.randperm(300, dtype=X.uint8), RuntimeError, "too large"),
    (lambda X: X.normal(X.zeros(2, 3), X.ones(4)), RuntimeError, "must match the size"),
    (lambda X: X.normal(X.zeros(3), -1.0), RuntimeError, "normal expects std >= 0.0"),
    (lambda X: X.normal(X.zeros(3), X.tensor([-1.0, 1, 1])), RuntimeError,
     "normal expects all elements of std >= 0.0"),
    (lambda X: X.normal(0.0, -1.0, size=(2,)), RuntimeError, "normal expects std >= 0.0"),
    (lambda X: X.normal(0.0, 1.0), TypeError, "size"),
    (lambda X: X.normal(X.zeros(3), 1.0, size=(3,)), TypeError, "size"),
    (lambda X: X.normal(X.zeros(3, dtype=X.int64), 1.0), NotImplementedError, "'Long'"),
    (lambda X: X.empty(3).uniform_(2, 1), RuntimeError, r"expects to return a \[from, to\) range"),
    (lambda X: X.empty(3, dtype=X.int64).uniform_(), NotImplementedError, "'Long'"),
    (lambda X: X.empty(3, dtype=X.int32).normal_(), NotImplementedError, "'Int'"),
    (lambda X: X.empty(3).normal_(0, -1), RuntimeError, "normal expects std >= 0.0"),
    (lambda X: X.empty(3).exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0"),
    (lambda X: X.empty(3, dtype=X.int64).exponential_(), RuntimeError, "must be a floating point"),
    (lambda X: X.empty(3).random_(5, 5), RuntimeError, "expects 'from' to be less than 'to'"),
    (lambda X: X.empty(3, dtype=X.int8).random_(0, 129), RuntimeError, "to - 1 is out of bounds"),
    (lambda X: X.empty(3, dtype=X.int8).random_(-200, 0), RuntimeError, "from is out of bounds"),
    (lambda X: X.empty(3, dtype=X.int8).random_(-5), RuntimeError, "from=0 >= to=-5"),
    (lambda X: X.empty(3, dtype=X.float16).random_(0, 70000), RuntimeError, "out of bounds"),
    (lambda X: X.empty(3, dtype=X.bool).random_(0, 3), RuntimeError, "out of bounds"),
    (lambda X: X.empty(3, dtype=X.complex64).random_(), NotImplementedError, "ComplexFloat"),
    (lambda X: X.bernoulli(X.full((3,), 1, dtype=X.int64)), NotImplementedError, "'Long'"),
    (lambda X: X.bernoulli(X.full((3,), 2.0)), RuntimeError, "p_in >= 0 && p_in <= 1"),
    (lambda X: X.bernoulli(X.zeros(3), p=1.5), RuntimeError, r"expects p to be in \[0, 1\]"),
    (lambda X: X.zeros(3).bernoulli_(-0.5), RuntimeError, r"expects p to be in \[0, 1\]"),
    (lambda X: X.zeros(3).bernoulli_(X.tensor([[0.5, 1, 0]])), RuntimeError, "broadcast"),
    (lambda X: X.multinomial(X.tensor([0.2, 0.3, 0.5]), 4), RuntimeError,
     r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement"),
    (lambda X: X.multinomial(X.tensor([0.2, 0.3]), 0), RuntimeError,
     "cannot sample n_sample <= 0 samples"),
    (lambda X: X.multinomial(X.tensor([0.2, -0.3, 0.5]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda X: X.multinomial(X.tensor([0.2, float("nan")]), 1, True), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda X: X.multinomial(X.tensor([0.2, float("inf")]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda X: X.multinomial(X.tensor([[1.0, 1.0], [0.0, 0.0]]), 1), RuntimeError,
     r"invalid multinomial distribution \(sum of probabilities <= 0\)"),
    (lambda X: X.multinomial(X.tensor([1, 2, 3]), 2), RuntimeError,
     "multinomial only supports floating-point dtypes for input, got: Long"),
    (lambda X: X.multinomial(X.ones(2, 2, 2), 2), RuntimeError, "prob_dist must be 1 or 2 dim"),
    (lambda X: X.multinomial(X.ones(()), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
    (lambda X: X.empty(3).fill_(X.tensor([1.0, 2])), RuntimeError,
     "fill_ only supports 0-dimension value tensor"),
    (lambda X: X.empty(3, dtype=X.int8).fill_(300), RuntimeError,
     "value cannot be converted to type"),
    (lambda X: X.empty(3, dtype=X.float16).fill_(1e6), RuntimeError, "without overflow"),
    (lambda X: X.empty(3, dtype=X.int64).fill_(1 + 2j), RuntimeError, "without overflow"),
    (lambda X: X.empty(3).fill_("a"), TypeError, "Number"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    fn, exc, match = ERRORS[case]
    with pytest.raises(exc, match=match):
        fn(ember)


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch_exception_type(case):
    torch = pytest.importorskip("torch")
    fn, exc, _ = ERRORS[case]
    with pytest.raises(exc):
        fn(torch)


def test_random_float_precision_warning():
    with pytest.warns(UserWarning, match=r"out of bounds \[-\(2\^24\), 2\^24\]"):
        ember.empty(3).random_(0, 2 ** 24 + 2)


def test_bernoulli_of_probabilities_is_a_node_with_zero_gradient_like_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        p = lib.rand(4, requires_grad=True)
        y = lib.bernoulli(p)
        assert y.requires_grad and y.grad_fn.name() == "BernoulliBackward0"
        (y * 3).sum().backward()
        assert p.grad.tolist() == [0.0] * 4
    assert ember.bernoulli(ember.rand(3)).grad_fn is None
