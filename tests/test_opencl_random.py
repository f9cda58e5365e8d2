"""OpenCL random numbers (ops_random, philox): the generator against an independent numpy
Philox4x32-10 (itself checked on Random123's known-answer vectors), reproducibility and state
round trips, and distribution checks (scipy KS tests, rates, ranges, permutations)."""
import warnings

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(),
                                reason=f"opencl unavailable: {ember.opencl.unavailable_reason()}")
stats = pytest.importorskip("scipy.stats")
BACKEND = ember.opencl._backend if ember.opencl.is_available() else None
HAS_FP64 = BACKEND is not None and ember.float64 in BACKEND.dtypes
FLOATS = [d for d in (ember.float16, ember.float32, ember.float64)
          if BACKEND is not None and d in BACKEND.dtypes]
DEV = "opencl"


def philox_ref(key, ctr):
    """Philox4x32-10 in numpy (Random123's definition): ``ctr`` (n, 4) uint32, ``key`` 2 ints."""
    m0, m1, w0, w1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
    c = np.array(ctr, dtype=np.uint64).reshape(-1, 4)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    mask = np.uint64(0xFFFFFFFF)
    for _ in range(10):
        p0 = np.uint64(m0) * c[:, 0]
        p1 = np.uint64(m1) * c[:, 2]
        c = np.stack([((p1 >> np.uint64(32)) ^ c[:, 1] ^ k0) & mask, p1 & mask,
                      ((p0 >> np.uint64(32)) ^ c[:, 3] ^ k1) & mask, p0 & mask], axis=1)
        k0, k1 = (k0 + np.uint64(w0)) & mask, (k1 + np.uint64(w1)) & mask
    return c.astype(np.uint32)


def test_reference_philox_matches_random123_known_answers():
    assert philox_ref((0, 0), [0, 0, 0, 0]).tolist() == [
        [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]]
    f = 0xFFFFFFFF
    assert philox_ref((f, f), [f, f, f, f]).tolist() == [
        [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]]


def words(seed, start, n):
    ctr = np.arange(start, start + n, dtype=np.uint64)
    c = np.stack([ctr & np.uint64(0xFFFFFFFF), ctr >> np.uint64(32),
                  np.zeros(n, np.uint64), np.zeros(n, np.uint64)], axis=1)
    return philox_ref((seed & 0xFFFFFFFF, seed >> 32), c)


def test_device_stream_is_philox_with_seed_key_and_offset_counter():
    g = ember.Generator(device=DEV).manual_seed(2 ** 40 + 12345)
    a = ember.rand(1000, generator=g, device=DEV).cpu()._host()
    w = words(2 ** 40 + 12345, 0, 1000)
    np.testing.assert_array_equal(a, (w[:, 0] >> 8).astype(np.float32) * np.float32(2 ** -24))
    # the next call continues at offset 1000, whatever its shape or dtype
    b = ember.randint(0, 7, (10, 10), generator=g, device=DEV).cpu()._host()
    w = words(2 ** 40 + 12345, 1000, 100)
    x = (w[:, 0].astype(np.uint64) << np.uint64(32)) | w[:, 1].astype(np.uint64)
    np.testing.assert_array_equal(b.ravel(), (x % np.uint64(7)).astype(np.int64))
    if HAS_FP64:
        c = ember.rand(50, generator=g, dtype=ember.float64, device=DEV).cpu()._host()
        w = words(2 ** 40 + 12345, 1100, 50).astype(np.float64)
        np.testing.assert_array_equal(c, (np.floor(w[:, 0] / 32) * 67108864.0 +
                                          np.floor(w[:, 1] / 64)) / 2.0 ** 53)


def test_manual_seed_get_set_state_reproduce():
    ember.manual_seed(1234)
    a = ember.randn(100, device=DEV).cpu()._host()
    b = ember.rand(7, 3, device=DEV).cpu()._host()
    ember.manual_seed(1234)
    np.testing.assert_array_equal(a, ember.randn(100, device=DEV).cpu()._host())
    np.testing.assert_array_equal(b, ember.rand(7, 3, device=DEV).cpu()._host())
    assert not np.array_equal(a[:21], b.ravel())

    g = ember.Generator(device=DEV)
    g.manual_seed(99)
    assert g.initial_seed() == 99
    state = g.get_state()
    assert state.dtype is ember.uint8 and state.device.type == "cpu"
    x = ember.empty(5, 4, device=DEV).normal_(generator=g).cpu()._host()
    y = ember.randperm(30, generator=g, device=DEV).cpu()._host()
    g.set_state(state)
    np.testing.assert_array_equal(x, ember.empty(5, 4, device=DEV).normal_(generator=g)
                                  .cpu()._host())
    np.testing.assert_array_equal(y, ember.randperm(30, generator=g, device=DEV).cpu()._host())
    # the offset moved by the counters used: 20 normals + 30 permutation steps
    after = g.get_state()._host()
    assert int.from_bytes(after[16:24].tobytes(), "little") == 50
    with pytest.raises(RuntimeError, match="state size"):
        g.set_state(ember.zeros(5, dtype=ember.uint8))


def test_strided_in_place_depends_on_shape_not_layout():
    g = ember.Generator(device=DEV).manual_seed(5)
    a = ember.empty(4, 6, device=DEV)
    a.t().uniform_(generator=g)                      # C order of the transposed view
    g.manual_seed(5)
    b = ember.empty(6, 4, device=DEV).uniform_(generator=g)
    np.testing.assert_array_equal(a.t().cpu()._host(), b.cpu()._host())


def _no_fallback(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_uniform_and_normal_distributions(dtype):
    ember.manual_seed(0)
    u = _no_fallback(lambda: ember.rand(20000, dtype=dtype, device=DEV)).cpu()._host()
    assert u.dtype == dtype.np and u.min() >= 0 and u.max() < 1
    assert stats.kstest(u.astype(np.float64), "uniform").pvalue > 1e-3
    z = _no_fallback(lambda: ember.randn(20000, dtype=dtype, device=DEV)).cpu()._host()
    assert stats.kstest(z.astype(np.float64), "norm").pvalue > 1e-3
    v = _no_fallback(lambda: ember.empty(20000, dtype=dtype, device=DEV).uniform_(-3, 5)).cpu()
    v = v._host().astype(np.float64)
    assert v.min() >= -3 and v.max() < 5
    assert stats.kstest(v, "uniform", args=(-3, 8)).pvalue > 1e-3
    n = _no_fallback(lambda: ember.empty(20000, dtype=dtype, device=DEV).normal_(2, 0.5)).cpu()
    assert stats.kstest(n._host().astype(np.float64), "norm", args=(2, 0.5)).pvalue > 1e-3
    e = _no_fallback(lambda: ember.empty(20000, dtype=dtype, device=DEV).exponential_(4.0))
    assert stats.kstest(e.cpu()._host().astype(np.float64), "expon",
                        args=(0, 0.25)).pvalue > 1e-3


def test_normal_with_tensor_mean_and_std():
    ember.manual_seed(1)
    mean = ember.tensor([[-10.0], [10.0]], device=DEV)
    std = ember.tensor([0.5, 2.0, 4.0], device=DEV)
    x = _no_fallback(lambda: ember.normal(mean.expand(2, 3), std.expand(2, 3)))
    assert x.shape == (2, 3) and x.device.type == "opencl"
    big = ember.normal(mean.expand(2, 3000), 3.0).cpu()._host()
    assert abs(big[0].mean() + 10) < 0.3 and abs(big[1].mean() - 10) < 0.3
    assert abs(big.std(axis=1) - 3).max() < 0.2
    r = ember.normal(ember.zeros(3000, device=DEV), ember.full((3000,), 2.0, device=DEV))
    assert stats.kstest(r.cpu()._host().astype(np.float64), "norm", args=(0, 2)).pvalue > 1e-3


@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.int8, ember.float32],
                         ids=str)
def test_randint_and_random_ranges(dtype):
    ember.manual_seed(3)
    r = _no_fallback(lambda: ember.randint(-3, 7, (5000,), dtype=dtype, device=DEV))
    h = r.cpu()._host()
    assert h.dtype == dtype.np and set(np.unique(h).tolist()) == set(range(-3, 7))
    counts = np.bincount((h + 3).astype(np.int64), minlength=10)
    assert stats.chisquare(counts).pvalue > 1e-3
    x = _no_fallback(lambda: ember.empty(3000, dtype=dtype, device=DEV).random_(2, 5))
    assert set(np.unique(x.cpu()._host()).tolist()) == {2, 3, 4}
    top = ember.empty(2000, dtype=dtype, device=DEV).random_().cpu()._host()
    assert top.min() >= 0 and top.astype(np.float64).max() > 0.5 * float(
        np.iinfo(dtype.np).max if dtype.np.kind == "i" else 2 ** 24)


def test_bernoulli_rates_scalar_and_tensor_p():
    ember.manual_seed(4)
    x = _no_fallback(lambda: ember.empty(20000, device=DEV).bernoulli_(0.3)).cpu()._host()
    assert set(np.unique(x).tolist()) <= {0.0, 1.0} and abs(x.mean() - 0.3) < 0.02
    b = ember.empty(4000, 2, dtype=ember.int64, device=DEV).bernoulli_(0.9).cpu()._host()
    assert abs(b.mean() - 0.9) < 0.02
    p = ember.tensor([0.0, 0.25, 1.0], device=DEV)
    y = _no_fallback(lambda: ember.bernoulli(p.expand(8000, 3))).cpu()._host()
    assert y[:, 0].sum() == 0 and y[:, 2].all() and abs(y[:, 1].mean() - 0.25) < 0.03
    if HAS_FP64:
        z = ember.empty(3, 4000, dtype=ember.bool, device=DEV)
        z.bernoulli_(ember.tensor([[0.1], [0.5], [0.8]], dtype=ember.float64, device=DEV))
        assert np.abs(z.cpu()._host().mean(axis=1) - [0.1, 0.5, 0.8]).max() < 0.04


def test_randperm_is_a_permutation():
    ember.manual_seed(5)
    for n, dt in ((0, ember.int64), (1, ember.int64), (1000, ember.int64), (300, ember.int32),
                  (200, ember.float32)):
        p = _no_fallback(lambda: ember.randperm(n, dtype=dt, device=DEV)).cpu()._host()
        assert p.dtype == dt.np and sorted(p.tolist()) == list(range(n))
    firsts = [ember.randperm(4, device=DEV).cpu()._host()[0] for _ in range(400)]
    assert stats.chisquare(np.bincount(firsts, minlength=4)).pvalue > 1e-3


def test_multinomial_frequencies():
    ember.manual_seed(6)
    probs = np.array([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 2.0, 0.0]], np.float32)
    p = ember.tensor(probs, device=DEV)
    s = _no_fallback(lambda: ember.multinomial(p, 20000, replacement=True)).cpu()._host()
    assert s.shape == (2, 20000) and s.dtype == np.int64
    for row, pr in zip(s, probs):
        counts = np.bincount(row, minlength=4)
        assert counts[pr == 0].sum() == 0
        keep = pr > 0
        expected = pr[keep] / pr.sum() * row.size
        assert stats.chisquare(counts[keep], expected).pvalue > 1e-3
    # without replacement: distinct categories; zero-probability ones only when needed, last
    w = _no_fallback(lambda: ember.multinomial(p.t().contiguous().t(), 4)).cpu()._host()
    for row, pr in zip(w, probs):
        assert sorted(row.tolist()) == [0, 1, 2, 3]
        assert set(row[:int((pr > 0).sum())].tolist()) == set(np.flatnonzero(pr).tolist())
    # the first draw follows p: P(first = i) = p_i / sum(p)
    q = ember.tensor([0.5, 0.2, 0.3], device=DEV)
    first = ember.multinomial(q.expand(6000, 3), 2).cpu()._host()
    assert stats.chisquare(np.bincount(first[:, 0], minlength=3),
                           np.array([0.5, 0.2, 0.3]) * 6000).pvalue > 1e-3
    assert (first[:, 0] != first[:, 1]).all()
    one = ember.multinomial(ember.tensor([0.0, 3.0], device=DEV), 1).cpu()._host()
    assert one.tolist() == [1]


@pytest.mark.parametrize("fn, message", [
    (lambda: ember.empty(3, device=DEV).bernoulli_(ember.tensor([0.5, 1.5, 0.0], device=DEV)),
     "p_in >= 0"),
    (lambda: ember.normal(0.0, ember.tensor([1.0, -1.0], device=DEV)), "std >= 0.0"),
    (lambda: ember.multinomial(ember.tensor([0.5, float("nan")], device=DEV), 1),
     "probability tensor contains"),
    (lambda: ember.multinomial(ember.tensor([[1.0, 0.0], [0.0, 0.0]], device=DEV), 1, True),
     "sum of probabilities"),
])
def test_value_errors_surface_at_synchronization(fn, message):
    r = fn()                                   # queued; the device checks the values
    with pytest.raises(RuntimeError, match=message):
        r.cpu()
    ember.rand(2, device=DEV).cpu()            # reported once


def test_fill_every_dtype_matches_cpu():
    for dt in BACKEND.dtypes:
        for v in (0, 1, -1, 2.5):
            if dt is ember.uint8 and v == -1:
                continue
            a = ember.empty(3, 2, dtype=dt, device=DEV).t().fill_(v).cpu()
            b = ember.empty(3, 2, dtype=dt).t().fill_(v)
            assert a.tolist() == b.tolist(), (dt, v)
