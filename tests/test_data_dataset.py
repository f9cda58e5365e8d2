"""ember.utils.data: datasets, samplers, DistributedSampler, default_collate/default_convert.

Expectations are hand-computed or, where torch is installed, torch.utils.data's own results.
"""
import collections

import numpy as np
import pytest

import ember
from ember.utils.data import (BatchSampler, ChainDataset, ConcatDataset, Dataset,
                              DistributedSampler, IterableDataset, RandomSampler,
                              SequentialSampler, StackDataset, Subset, SubsetRandomSampler,
                              TensorDataset, WeightedRandomSampler, default_collate,
                              default_convert, random_split)


def _np(t):
    return t.numpy() if isinstance(t, ember.Tensor) else np.asarray(t)


# -- datasets -------------------------------------------------------------------------------------
def test_tensor_dataset_indexes_every_tensor():
    x = ember.arange(12.).reshape(6, 2)
    y = ember.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    sx, sy = ds[4]
    assert sx.tolist() == [8.0, 9.0] and sy.item() == 4


def test_tensor_dataset_size_mismatch_names_sizes():
    with pytest.raises(AssertionError, match="Size mismatch between tensors: tensor 1 has"):
        TensorDataset(ember.zeros(3, 2), ember.zeros(4))


def test_tensor_dataset_batch_fetch_equals_sample_path():
    x = ember.randn(10, 3)
    y = ember.arange(10)
    ds = TensorDataset(x, y)
    idx = [7, 1, 1, 9]
    fast = ds._fetch_collated(idx)
    slow = default_collate([ds[i] for i in idx])
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a.dtype == b.dtype and a.shape == b.shape
    assert ds._fetch_collated([0, 10]) is NotImplemented  # out of range: sample path raises

    class Doubled(TensorDataset):
        def __getitem__(self, i):
            a, b = super().__getitem__(i)
            return a * 2, b

    assert Doubled(x, y)._fetch_collated([0, 1]) is NotImplemented


def test_stack_concat_chain_subset():
    a = TensorDataset(ember.arange(3))
    b = TensorDataset(ember.arange(3, 5))
    cat = a + b
    assert isinstance(cat, ConcatDataset) and len(cat) == 5
    assert [cat[i][0].item() for i in range(5)] == [0, 1, 2, 3, 4]
    assert cat[-1][0].item() == 4
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-6]
    stack = StackDataset(a, ember.arange(10, 13).tolist())
    assert stack[1][0][0].item() == 1 and stack[1][1] == 11
    named = StackDataset(x=a, y=[5, 6, 7])
    assert named.__getitems__([0, 2])[1]["y"] == 7
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a, [1, 2])
    sub = Subset(cat, [4, 0])
    assert len(sub) == 2 and sub[0][0].item() == 4
    assert [s[0].item() for s in sub.__getitems__([1, 0])] == [0, 4]

    class Stream(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n

    chain = Stream(2) + Stream(3)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Stream(1)])


def test_subset_subclass_must_override_getitems():
    class Bad(Subset):
        def __getitem__(self, i):
            return 0

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        Bad(TensorDataset(ember.arange(3)), [0])


def test_base_dataset_getitem_not_implemented():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement"):
        Dataset()[0]


def test_random_split_lengths_fractions_and_reproducibility():
    ds = list(range(10))
    g = ember.Generator().manual_seed(3)
    parts = random_split(ds, [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(ds, [3, 7], generator=ember.Generator().manual_seed(3))
    assert again[0].indices == parts[0].indices
    # the permutation is ember.randperm's with that generator
    assert parts[0].indices + parts[1].indices == \
        ember.randperm(10, generator=ember.Generator().manual_seed(3)).tolist()
    frac = random_split(list(range(11)), [0.5, 0.5])
    assert [len(p) for p in frac] == [6, 5]  # remainder goes round-robin from the first
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [3, 3])


# -- samplers -------------------------------------------------------------------------------------
def test_sequential_and_batch_sampler():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    bs = BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(bs) == 4
    bs = BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(bs) == 3


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_batch_sampler_rejects_bad_batch_size(bad):
    with pytest.raises(ValueError, match=f"batch_size should be a positive integer value, but "
                                         f"got batch_size={bad}"):
        BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got "
                                         "drop_last=1"):
        BatchSampler(range(3), 2, 1)


def test_random_sampler_is_a_seeded_randperm():
    data = range(10)
    g = ember.Generator().manual_seed(7)
    order = list(RandomSampler(data, generator=g))
    assert sorted(order) == list(range(10))
    assert order == ember.randperm(10, generator=ember.Generator().manual_seed(7)).tolist()
    ember.manual_seed(1)
    a = list(RandomSampler(data))
    ember.manual_seed(1)
    assert list(RandomSampler(data)) == a


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10)
    out = list(s)
    assert len(out) == 10 == len(s)
    assert sorted(out[:4]) == [0, 1, 2, 3] and sorted(out[4:8]) == [0, 1, 2, 3]
    r = RandomSampler(range(3), replacement=True, num_samples=70)
    drawn = list(r)
    assert len(drawn) == 70 and set(drawn) <= {0, 1, 2}
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got "
                                        "replacement=1"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but "
                                         "got num_samples=0"):
        RandomSampler(range(3), num_samples=0)


def test_subset_random_and_weighted_samplers():
    idx = [10, 20, 30]
    got = list(SubsetRandomSampler(idx, generator=ember.Generator().manual_seed(0)))
    assert sorted(got) == idx
    w = WeightedRandomSampler([0.0, 0.0, 1.0], 5)
    assert list(w) == [2] * 5 and len(w) == 5
    no_rep = list(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False))
    assert sorted(no_rep) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="weights should be a 1d sequence but given weights "
                                         r"have shape \(2, 2\)"):
        WeightedRandomSampler([[1, 2], [3, 4]], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1, 2], 0)


def test_distributed_sampler_partitions_like_torch():
    data = list(range(10))
    shards = [list(DistributedSampler(data, num_replicas=3, rank=r, shuffle=False))
              for r in range(3)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # padded from the start
    dropped = [list(DistributedSampler(data, 3, r, shuffle=False, drop_last=True))
               for r in range(3)]
    assert dropped == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    shuffled = [DistributedSampler(data, 2, r, seed=5) for r in range(2)]
    parts = [list(s) for s in shuffled]
    assert sorted(parts[0] + parts[1]) == data
    perm = ember.randperm(10, generator=ember.Generator().manual_seed(5)).tolist()
    assert parts[0] == perm[0::2]
    for s in shuffled:
        s.set_epoch(1)
    assert [list(s) for s in shuffled] != parts
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval "
                                         r"\[0, 2\]"):
        DistributedSampler(data, num_replicas=3, rank=3)


def test_distributed_sampler_without_process_group_is_a_clear_error():
    with pytest.raises(RuntimeError, match="num_replicas` was not given and there is no "
                                           "initialized ember.distributed process group"):
        DistributedSampler(list(range(4)))


def test_distributed_sampler_matches_torch_unshuffled():
    pytest.importorskip("torch")
    from torch.utils.data import DistributedSampler as TorchDS
    for n, reps, drop in [(10, 3, False), (10, 3, True), (7, 4, False), (2, 5, False)]:
        for r in range(reps):
            mine = list(DistributedSampler(list(range(n)), reps, r, shuffle=False,
                                           drop_last=drop))
            ref = list(TorchDS(list(range(n)), reps, r, shuffle=False, drop_last=drop))
            assert mine == ref, (n, reps, r, drop)


# -- collate ---------------------------------------------------------------------------------------
Point = collections.namedtuple("Point", ["x", "y"])


def test_default_collate_types_and_dtypes():
    out = default_collate([0, 1, 2])
    assert out.dtype == ember.int64 and out.tolist() == [0, 1, 2]
    out = default_collate([0.5, 1.5])
    assert out.dtype == ember.float64
    out = default_collate([True, False])
    assert out.dtype == ember.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    out = default_collate([np.float32(1), np.float32(2)])
    assert out.dtype == ember.float32
    out = default_collate([np.zeros((2, 3), np.int16), np.ones((2, 3), np.int16)])
    assert out.dtype == ember.int16 and tuple(out.shape) == (2, 2, 3)
    out = default_collate([{"a": 1, "b": [1.0, 2.0]}, {"a": 2, "b": [3.0, 4.0]}])
    assert out["a"].tolist() == [1, 2]
    assert [t.tolist() for t in out["b"]] == [[1.0, 3.0], [2.0, 4.0]]
    out = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(out, Point) and out.x.tolist() == [1, 3] and out.y.dtype == ember.float64
    out = default_collate([(0, "a"), (1, "b")])
    assert isinstance(out, list) and out[0].tolist() == [0, 1] and out[1] == ("a", "b")
    t = default_collate([ember.ones(2, 3), ember.zeros(2, 3)])
    assert tuple(t.shape) == (2, 2, 3) and t.dtype == ember.float32


def test_default_collate_keeps_autograd_and_views():
    a = ember.ones(3, requires_grad=True)
    out = default_collate([a, a * 2])
    out.sum().backward()
    assert a.grad.tolist() == [3.0, 3.0, 3.0]
    base = ember.arange(12.).reshape(3, 4)
    cols = default_collate([base[:, 0], base[:, 1]])  # strided views
    assert cols.tolist() == [[0.0, 4.0, 8.0], [1.0, 5.0, 9.0]]


def test_default_collate_errors_like_torch():
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\[3\] at entry 0 and \[2\] at entry 1"):
        default_collate([ember.ones(3), ember.ones(2)])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\[2\] at entry 0 and \[3\] at entry 2"):
        default_collate([np.ones(2), np.ones(2), np.ones(3)])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal "
                                           "size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy "
                                        "arrays, numbers, dicts or lists; found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_default_convert():
    assert default_convert(3) == 3
    t = default_convert(np.array([1, 2]))
    assert isinstance(t, ember.Tensor) and t.tolist() == [1, 2]
    p = default_convert(Point(np.int64(1), np.array([2.0])))
    assert isinstance(p, Point) and isinstance(p.x, ember.Tensor)
    assert isinstance(default_convert((np.zeros(1),)), list)
    s = np.array(["x"])
    assert default_convert(s) is s


def test_default_collate_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    samples = [
        [1, 2, 3], [1.5, 2.5], [True, False], [np.float32(1.5), np.float32(2)],
        [np.arange(6, dtype=np.int32).reshape(2, 3), np.ones((2, 3), np.int32)],
        [{"a": 1, "b": (2.0, np.int8(3))}, {"a": 4, "b": (5.0, np.int8(6))}],
        [Point(1, np.float64(2)), Point(3, np.float64(4))],
    ]

    def compare(mine, ref):
        if isinstance(ref, torch.Tensor):
            assert isinstance(mine, ember.Tensor)
            assert str(mine.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
            np.testing.assert_array_equal(mine.numpy(), ref.numpy())
        elif isinstance(ref, dict):
            assert type(mine) is type(ref) and mine.keys() == ref.keys()
            for k in ref:
                compare(mine[k], ref[k])
        elif isinstance(ref, (list, tuple)):
            assert type(mine) is type(ref) and len(mine) == len(ref)
            for m, r in zip(mine, ref):
                compare(m, r)
        else:
            assert mine == ref

    for batch in samples:
        compare(default_collate(batch), torch_collate(batch))
    tensors = [torch.arange(4.) * i for i in range(3)]
    compare(default_collate([ember.tensor(t.numpy()) for t in tensors]), torch_collate(tensors))
