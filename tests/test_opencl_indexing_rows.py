"""OpenCL's row-walking indexing kernels (``take_rows``, ``put_rows`` in ops_indexing): a
work-item walks the last dim of the iteration space. They take spaces of at least ROWS_MIN
rows of at most ROW_MAX elements (the oracle's small samples never reach them), so these
shapes are large; each result is compared with the CPU backend bit for bit, strided inputs and
out-of-bounds indices included."""
import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(),
                                reason=f"opencl unavailable: {ember.opencl.unavailable_reason()}")


def _both(fn, *arrays):
    out = []
    for dev in ("cpu", "opencl"):
        r = fn(*(ember.tensor(a, device=dev) for a in arrays))
        out.append(r.cpu().numpy())
    np.testing.assert_array_equal(out[1], out[0])


RNG = np.random.default_rng(0)
X = RNG.normal(size=(300, 40)).astype(np.float32)
IDX = RNG.integers(-300, 300, size=1000)


@pytest.mark.parametrize("case", [
    lambda x, i: x.index_select(0, i.abs() % 300),                  # rows of 40
    lambda x, i: x.t().index_select(1, i.abs() % 300),              # strided x, index on dim 1
    lambda x, i: x[i],                                              # negative indices wrap
    lambda x, i: x[i[:500].abs() % 300, 3:35:2],                    # index + strided slice
    lambda x, i: x[:140].gather(1, (i[:980].abs() % 40).reshape(140, 7)),
    lambda x, i: x.unsqueeze(1).expand(300, 3, 40)[i[:200]].sum(1),
], ids=["index_select", "strided index_select", "index", "index + slice", "gather",
        "expanded"])
def test_take_rows_match_the_cpu(case):
    _both(case, X, IDX)


@pytest.mark.parametrize("case", [
    lambda x, i, s: x.index_add(0, i.abs() % 300, s),
    lambda x, i, s: x.t().index_add(1, i.abs() % 300, s.t(), alpha=0.5),
    lambda x, i, s: x.index_put((i.abs() % 300,), s, accumulate=True),
    lambda x, i, s: x.scatter_add(0, (i.abs() % 300).unsqueeze(1).expand(1000, 40), s),
], ids=["index_add", "strided index_add", "index_put accumulate", "scatter_add"])
def test_put_rows_match_the_cpu(case):
    # duplicates in the index: sums in the CPU's order, so the bits agree
    _both(case, X, IDX, RNG.normal(size=(1000, 40)).astype(np.float32))


def test_out_of_bounds_in_a_row_raises_naming_the_value():
    x = ember.tensor(X, device="opencl")
    bad = ember.tensor(np.r_[np.arange(100), 300], device="opencl")
    with pytest.raises(IndexError, match="300"):
        x.index_select(0, bad)
        ember.opencl.synchronize()
