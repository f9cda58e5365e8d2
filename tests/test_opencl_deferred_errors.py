"""Device-side errors on OpenCL belong to the op that caused them (issue: an out-of-range index
used to surface at the next, valid op with no name): the error raised at the next
synchronization names the failing op and its arguments' shapes, every failure is reported, an
index into an empty dim raises at once, and the CPU's messages name the op too."""
import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(), reason="no OpenCL device")
D = "opencl"


def _sync_error(exc=Exception):
    with pytest.raises(exc) as info:
        ember.opencl.synchronize()
    return str(info.value)


@pytest.mark.parametrize("op, call, exc", [
    ("scatter_add", lambda x, i: x.scatter_add(0, i, ember.ones(1, device=D)), RuntimeError),
    ("scatter", lambda x, i: x.scatter(0, i, ember.ones(1, device=D)), RuntimeError),
    ("index_add", lambda x, i: x.index_add(0, i, ember.ones(1, device=D)), RuntimeError),
    ("index_select", lambda x, i: x.index_select(0, i), IndexError),
    ("gather", lambda x, i: x.gather(0, i), RuntimeError),
    ("index", lambda x, i: x[i], IndexError),
])
def test_the_error_names_the_op_that_failed(op, call, exc):
    x = ember.zeros(3, device=D)
    call(x, ember.tensor([5], device=D))  # returns: the check runs on the device
    message = _sync_error(exc)
    assert message.startswith(f"{op}: index 5 is out of bounds for dimension 0 with size 3")
    assert f"in {op}([3]" in message
    assert (x + 1).tolist() == [1.0, 1.0, 1.0]  # the next valid op is not blamed


def test_every_failure_since_the_last_check_is_reported():
    x = ember.zeros(3, device=D)
    x.index_select(0, ember.tensor([9], device=D))
    x.scatter(0, ember.tensor([4], device=D), ember.ones(1, device=D))
    message = _sync_error(IndexError)
    assert message.startswith("index_select: index 9")
    assert "later failures: scatter: index 4" in message


def test_indices_into_an_empty_dim_raise_at_once():
    e = ember.zeros(0, device=D)
    with pytest.raises(IndexError, match="index_put_: index 0 is out of bounds for dimension 0 "
                                         "with size 0"):
        e[ember.tensor([0], device=D)] = 1.0
    with pytest.raises(IndexError, match="index_select: index 2 is out of bounds"):
        e.index_select(0, ember.tensor([2], device=D))
    ember.opencl.synchronize()  # nothing left behind


def test_many_valid_launches_reuse_the_record_slots():
    x = ember.arange(3.0, device=D)
    for _ in range(200):  # more launches than slots
        x.index_select(0, ember.tensor([1], device=D))
    assert (x + 1).tolist() == [1.0, 2.0, 3.0]


def test_cpu_bounds_errors_name_the_op_too():
    x = ember.zeros(3)
    for op, call in [("scatter_add", lambda i: x.scatter_add(0, i, ember.ones(1))),
                     ("index_add", lambda i: x.index_add(0, i, ember.ones(1))),
                     ("gather", lambda i: x.gather(0, i)),
                     ("index_select", lambda i: x.index_select(0, i))]:
        with pytest.raises((IndexError, RuntimeError), match=f"^{op}: index 5 is out of bounds"):
            call(ember.tensor([5]))


def test_embedding_reads_nothing_back_and_flags_a_bad_index():
    """An embedding lookup on a device does not read its indices on the host (the range check
    is index_select's, flagged on the device): a bad index raises at the next read."""
    import pyopencl as cl
    e = ember.nn.Embedding(5, 3).to(D)
    idx = ember.tensor([[0, 4], [2, 1]], device=D)
    e(idx)
    blocking = []
    orig = cl.enqueue_copy

    def spy(*a, **k):
        if k.get("is_blocking", True) and isinstance(a[1], __import__("numpy").ndarray):
            blocking.append(a)
        return orig(*a, **k)
    cl.enqueue_copy = spy
    try:
        out = e(idx)
    finally:
        cl.enqueue_copy = orig
    assert blocking == []
    assert out.shape == (2, 2, 3)
    e(ember.tensor([7], device=D))
    with pytest.raises(IndexError, match="index_select: index 7"):
        ember.opencl.synchronize()
