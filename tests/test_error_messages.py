"""A table of bad calls: each raises PyTorch's error type with a message that names the op
(issue #12: "Dimension out of range…" or "mat1 and mat2 shapes cannot be multiplied…" alone
did not say which call failed), and none surfaces a bare numpy error."""
import warnings

import pytest

import ember as E

# the op names a message may use for an alias or a composite
ALSO = {"to": ("device string", "dtype name"), "linear": ("matmul",), "swapaxes": ("transpose",),
        "cross_entropy": ("nll_loss",)}  # torch raises from nll_loss, the op it runs


def _calls():
    t=E.randn(2,3); i=E.tensor([0,1]); b=E.tensor([True,False])
    calls = [
     ("add", lambda: E.add(t, E.randn(4,5))), ("mul", lambda: t * E.randn(4)), ("sub", lambda: b - b),
     ("matmul", lambda: t @ E.randn(4,5)), ("mm", lambda: E.mm(t, E.randn(4,5))), ("bmm", lambda: E.bmm(t, t)),
     ("mv", lambda: E.mv(t, E.randn(5))), ("dot", lambda: E.dot(E.randn(3), E.randn(4))),
     ("sum", lambda: t.sum(5)), ("mean", lambda: t.mean(dim=7)), ("mean", lambda: i.mean()),
     ("max", lambda: t.max(dim=4)), ("argmax", lambda: t.argmax(9)), ("softmax", lambda: t.softmax(3)),
     ("cumsum", lambda: t.cumsum(3)), ("var", lambda: t.var(3)), ("std", lambda: i.std()),
     ("cat", lambda: E.cat([])), ("stack", lambda: E.stack([t, E.randn(3,2)])),
     ("view", lambda: t.view(7)), ("reshape", lambda: t.reshape(4,4)), ("permute", lambda: t.permute(0,0)),
     ("transpose", lambda: t.transpose(0,5)), ("squeeze", lambda: t.squeeze(4)), ("unsqueeze", lambda: t.unsqueeze(5)),
     ("expand", lambda: t.expand(4,3)), ("narrow", lambda: t.narrow(0, 1, 5)), ("select", lambda: t.select(0, 5)),
     ("split", lambda: t.split(0)), ("chunk", lambda: t.chunk(0)), ("flatten", lambda: t.flatten(3)),
     ("index_select", lambda: t.index_select(0, E.tensor([5]))), ("gather", lambda: t.gather(0, E.tensor([[3]]))),
     ("scatter", lambda: t.scatter(5, i.view(1,2), t)), ("masked_fill", lambda: t.masked_fill(E.ones(4, dtype=E.bool), 0)),
     ("where", lambda: E.where(t, t, t)), ("where", lambda: E.where(b, t, E.randn(5))), ("clamp", lambda: t.clamp()),
     ("topk", lambda: t.topk(5)), ("sort", lambda: t.sort(4)), ("kthvalue", lambda: t.kthvalue(9)),
     ("repeat", lambda: t.repeat(2)), ("tile", lambda: t.tile(-1)), ("flip", lambda: t.flip(5)), ("roll", lambda: t.roll(1, 5)),
     ("tril", lambda: E.randn(3).tril()), ("triu", lambda: E.randn(3).triu()), ("diagonal", lambda: t.diagonal(0,0,0)),
     ("einsum", lambda: E.einsum("ij,jk->ik", t, t)), ("einsum", lambda: E.einsum("ij->k", t)),
     ("pow", lambda: i ** -1), ("div", lambda: E.div(t, t, rounding_mode="x")), ("bitwise_and", lambda: t & t),
     ("exp", lambda: E.exp(3)), ("sqrt", lambda: E.sqrt("a")), ("neg", lambda: -b), ("frac", lambda: i.frac()),
     ("erf", lambda: E.erf(E.tensor([1j]))), ("zeros", lambda: E.zeros(-1)), ("ones", lambda: E.ones("a")),
     ("full", lambda: E.full((2,), "x")), ("arange", lambda: E.arange(0, 10, 0)), ("linspace", lambda: E.linspace(0,1,-1)),
     ("eye", lambda: E.eye(-1)), ("randn", lambda: E.randn(-2)), ("randint", lambda: E.randint(5, 2, (3,))),
     ("randperm", lambda: E.randperm(-1)), ("multinomial", lambda: E.multinomial(E.tensor([-1.0, 2.0]), 1)),
     ("normal", lambda: E.normal(0.0, -1.0, (2,))), ("bernoulli", lambda: E.bernoulli(E.tensor([2.0]))),
     ("zeros", lambda: E.zeros(2**63)), ("empty", lambda: E.empty(2**40, 2**40)), ("to", lambda: t.to("nodev")),
     ("to", lambda: t.to(dtype="x")), ("tensor", lambda: E.tensor([[1,2],[3]])), ("item", lambda: t.item()),
     ("nonzero", lambda: E.nonzero(3)), ("unique", lambda: t.unique(dim=4)), ("norm", lambda: t.norm(p="bad")),
     ("logsumexp", lambda: t.logsumexp(5)), ("one_hot", lambda: E.nn.functional.one_hot(E.tensor([5]), 3)),
     ("linear", lambda: E.nn.functional.linear(t, E.randn(4,5))), ("conv2d", lambda: E.nn.functional.conv2d(t, t)),
     ("cross_entropy", lambda: E.nn.functional.cross_entropy(t, E.tensor([5, 0]))),
     ("mse_loss", lambda: E.nn.functional.mse_loss(t, E.randn(4))), ("embedding", lambda: E.nn.functional.embedding(E.tensor([9]), E.randn(3,2))),
     ("layer_norm", lambda: E.nn.functional.layer_norm(t, (5,))), ("softmax", lambda: E.nn.functional.softmax(t, 5)),
     ("max_pool2d", lambda: E.nn.functional.max_pool2d(t, 5)), ("dropout", lambda: E.nn.functional.dropout(t, 2.0)),
     ("index_put_", lambda: t.index_put_((E.tensor([5]),), E.tensor(1.0))), ("copy_", lambda: t.copy_(E.randn(5))),
     ("fill_", lambda: t.fill_(E.randn(2))), ("add_", lambda: i.add_(1.5)), ("mul_", lambda: t.mul_(E.randn(5,5))),
     ("masked_select", lambda: t.masked_select(E.ones(5, dtype=E.bool))), ("take", lambda: t.take(E.tensor([10]))),
     ("movedim", lambda: t.movedim(0, 5)), ("unflatten", lambda: t.unflatten(1, (2,2))), ("broadcast_to", lambda: t.broadcast_to((5,))),
     ("as_strided", lambda: t.as_strided((2,), (-1,))), ("tensordot", lambda: E.tensordot(t, t, dims=([0],[0,1]))),
     ("outer", lambda: E.outer(t, t)), ("addmm", lambda: E.addmm(t, t, t)), ("baddbmm", lambda: E.baddbmm(t, t, t)),
     ("clone", lambda: E.clone(3)), ("allclose", lambda: E.allclose(t, E.randn(5))), ("cumprod", lambda: t.cumprod(4)),
     ("amax", lambda: t.amax(5)), ("aminmax", lambda: t.aminmax(dim=5)), ("nan_to_num", lambda: E.nan_to_num(3)),
     ("round", lambda: E.tensor([1j]).round()), ("median", lambda: t.median(5)), ("mode", lambda: t.mode(5)),
     ("count_nonzero", lambda: t.count_nonzero(5)), ("all", lambda: t.all(5)), ("any", lambda: t.any(5)),
     ("prod", lambda: t.prod(5)), ("std_mean", lambda: t.std_mean(5)), ("min", lambda: t.min(dim=5)),
     ("hardtanh", lambda: E.nn.functional.hardtanh(t, 2, 1)), ("gelu", lambda: E.nn.functional.gelu(t, approximate="x")),
     ("pad", lambda: E.nn.functional.pad(t, (1,))), ("interpolate", lambda: E.nn.functional.interpolate(t, size=3)),
     ("batch_norm", lambda: E.nn.functional.batch_norm(t, E.randn(5), E.randn(5))), ("grid_sample", lambda: E.nn.functional.grid_sample(t, t)),
     ("leaky_relu", lambda: E.nn.functional.leaky_relu(i)), ("elu", lambda: E.nn.functional.elu(i)),
     ("swapaxes", lambda: t.swapaxes(0, 4)), ("diag", lambda: E.diag(E.randn(2,2,2))),
     ("trace", lambda: E.trace(E.randn(3))), ("cross", lambda: E.cross(t, E.randn(2, 4))), ("histc", lambda: E.histc(t, bins=-1)),
    ]
    # issue #36: the calls whose messages named neither the op nor the value
    F = E.nn.functional
    x4, w4 = E.randn(1, 3, 5, 5), E.randn(4, 3, 3, 3)
    calls += [
     ("mm", lambda: E.mm(t, E.randn(3, 2, dtype=E.float64))), ("mm", lambda: E.mm(t, E.ones(3, 2, dtype=E.int64))),
     ("matmul", lambda: E.matmul(t, E.randn(3, 2, dtype=E.float64))), ("addmm", lambda: E.addmm(E.randn(2, 2), t, E.randn(3, 2, dtype=E.float64))),
     ("bmm", lambda: E.bmm(E.randn(1, 2, 3), E.randn(1, 3, 2, dtype=E.float64))),
     ("bmm", lambda: E.bmm(E.randn(1, 2, 3), E.randn(1, 4, 2))),
     ("einsum", lambda: E.einsum("ij,jk->ik", t, E.randn(3, 2, dtype=E.float64))),
     ("cat", lambda: E.cat([t, E.randn(2, 4)])), ("cat", lambda: E.cat([t, E.randn(3)])),
     ("conv2d", lambda: F.conv2d(x4, E.randn(4, 2, 3, 3))), ("conv2d", lambda: F.conv2d(x4, E.randn(4, 3, 7, 7))),
     ("conv1d", lambda: F.conv1d(E.randn(1, 3, 5), E.randn(4, 3, 3), stride=0)),
     ("conv2d", lambda: F.conv2d(x4, w4, padding=-1)), ("conv2d", lambda: F.conv2d(x4, w4, bias=E.randn(5))),
     ("conv2d", lambda: F.conv2d(x4, w4, groups=0)), ("conv2d", lambda: F.conv2d(x4, w4, dilation=0)),
     ("conv_transpose2d", lambda: F.conv_transpose2d(x4, E.randn(2, 4, 3, 3))),
     ("conv2d", lambda: E.nn.Conv2d(3, 4, 3)(E.randn(1, 2, 5, 5))),
     ("zeros", lambda: E.zeros(2, dtype=3)), ("zeros", lambda: E.zeros(2, dtype="bogus")),
     ("ones", lambda: E.ones(2, dtype=object)), ("empty", lambda: E.empty(2, dtype="x")),
     ("full", lambda: E.full((2,), 1.0, dtype=7)), ("arange", lambda: E.arange(3, dtype=[1])),
     ("load_state_dict", lambda: E.nn.Linear(2, 3).load_state_dict({"weight": E.randn(2, 2)})),
     ("load_state_dict", lambda: E.nn.Linear(2, 3).load_state_dict(5)),
     ("gather", lambda: t.gather(1, E.tensor([[0., 1.], [1., 0.]]))), ("scatter", lambda: t.scatter(1, E.tensor([[0., 1.]]), t)),
     ("gather", lambda: t.gather(1, E.tensor([0, 1]))),
     ("requires_grad", lambda: E.ones(2, dtype=E.int64).requires_grad_()),
     ("requires_grad", lambda: E.tensor([1, 2], requires_grad=True)),
     ("requires_grad", lambda: E.zeros(2, dtype=E.int64, requires_grad=True)),
     ("index", lambda: t[E.tensor([0.5])]),
    ]
    if not E.cuda.is_available():  # a machine without CUDA: the call that needed it is named
        calls += [("get_device_name", lambda: E.cuda.get_device_name()),
                  ("memory_allocated", lambda: E.cuda.memory_allocated()),
                  ("cuda", lambda: t.cuda()), ("cuda", lambda: E.zeros(2, device="cuda"))]
    return calls


CALLS = _calls()


@pytest.mark.parametrize("name, call", CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CALLS)])
def test_bad_call_names_the_op(name, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call()
        except (RuntimeError, IndexError, TypeError, ValueError, NotImplementedError,
                AttributeError) as e:
            message = str(e)
        else:
            pytest.fail(f"{name}: the bad call did not raise")
    names = (name, name.rstrip("_")) + ALSO.get(name, ())
    assert any(n in message for n in names), f"{name}: {message!r}"
    assert "numpy" not in message and "arr.size" not in message, message
