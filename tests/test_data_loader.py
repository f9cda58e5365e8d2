"""ember.utils.data.DataLoader: batching, samplers, errors, worker processes.

Multi-process tests use tiny datasets and the platform's default start method (fork on Linux),
so each takes well under a second; the spawn round trip is marked slow.
"""
import os
import signal
import time

import numpy as np
import pytest

import ember
from ember.utils.data import (BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler,
                              SequentialSampler, TensorDataset, get_worker_info)
from ember.utils.data._utils import transfer

pytestmark = pytest.mark.timeout(120)


def _batches(loader):
    out = []
    for b in loader:
        out.append([t.tolist() if isinstance(t, ember.Tensor) else t for t in b]
                   if isinstance(b, list) else b.tolist())
    return out


def _xy(n=10, d=3):
    x = ember.arange(float(n * d)).reshape(n, d)
    y = ember.arange(n)
    return TensorDataset(x, y)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return {"i": i, "sq": np.full(3, i * i, dtype=np.float32)}

    def __len__(self):
        return self.n


# -- single process ------------------------------------------------------------------------------
def test_sequential_batches_and_len():
    dl = DataLoader(_xy(), batch_size=4)
    assert len(dl) == 3
    got = _batches(dl)
    assert [b[1] for b in got] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert got[0][0][1] == [3.0, 4.0, 5.0]
    dl = DataLoader(_xy(), batch_size=4, drop_last=True)
    assert len(dl) == 2 and [b[1] for b in _batches(dl)] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_generic_dataset_dicts_and_no_batching():
    dl = DataLoader(Squares(5), batch_size=2)
    first = next(iter(dl))
    assert first["i"].tolist() == [0, 1] and first["sq"].dtype == ember.float32
    assert tuple(first["sq"].shape) == (2, 3)
    single = list(DataLoader(Squares(3), batch_size=None))
    assert isinstance(single[2]["sq"], ember.Tensor) and single[2]["i"] == 2


def test_shuffle_is_reproducible_and_is_randomsampler_order():
    g = ember.Generator().manual_seed(11)
    dl = DataLoader(_xy(20), batch_size=5, shuffle=True, generator=g)
    order = [i for b in _batches(dl) for i in b[1]]
    assert sorted(order) == list(range(20))
    # as in torch, the iterator draws the workers' base seed from the generator first
    g2 = ember.Generator().manual_seed(11)
    ember.empty((), dtype=ember.int64).random_(generator=g2)
    assert order == list(RandomSampler(range(20), generator=g2))
    ember.manual_seed(0)
    a = _batches(DataLoader(_xy(20), batch_size=5, shuffle=True))
    ember.manual_seed(0)
    assert _batches(DataLoader(_xy(20), batch_size=5, shuffle=True)) == a


def test_custom_sampler_and_batch_sampler():
    dl = DataLoader(_xy(6), batch_size=2, sampler=[5, 4, 3, 2, 1, 0])
    assert [b[1] for b in _batches(dl)] == [[5, 4], [3, 2], [1, 0]]
    bs = BatchSampler(SequentialSampler(range(6)), 4, False)
    assert [b[1] for b in _batches(DataLoader(_xy(6), batch_sampler=bs))] == [[0, 1, 2, 3], [4, 5]]


def test_iterable_dataset_batches_and_len_warning():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 5

    dl = DataLoader(Stream(), batch_size=3)
    assert len(dl) == 2
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]]
    dl = DataLoader(Stream(), batch_size=1)
    len(dl)
    with pytest.warns(UserWarning, match="Length of IterableDataset .* was reported to be 5"):
        assert len(list(dl)) == 7
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]


def test_pin_memory_makes_contiguous_copies_only_when_needed():
    base = ember.arange(24.).reshape(4, 6)

    class Cols(Dataset):
        def __getitem__(self, i):
            return base.t()  # a non-contiguous view

        def __len__(self):
            return 2

    for batch in DataLoader(Cols(), batch_size=None, pin_memory=True):
        assert batch.is_contiguous() and batch.tolist() == base.t().tolist()
    for x, _ in DataLoader(_xy(), batch_size=4, pin_memory=True):
        assert x.is_contiguous() and not x.is_pinned()


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, err, msg", [
    (dict(batch_size=0), ValueError, "batch_size should be a positive integer value, but got "
                                     "batch_size=0"),
    (dict(shuffle=True, sampler=[0, 1]), ValueError, "sampler option is mutually exclusive "
                                                     "with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), ValueError, "batch_sampler option is mutually "
                                                          "exclusive with batch_size"),
    (dict(batch_size=None, drop_last=True), ValueError, "batch_size=None option disables "
                                                        "auto-batching"),
    (dict(num_workers=-1), ValueError, "num_workers option should be non-negative"),
    (dict(num_workers=1, timeout=-1), ValueError, "timeout option should be non-negative"),
    (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified in "
                                          "multiprocessing"),
    (dict(persistent_workers=True), ValueError, "persistent_workers option needs "
                                                "num_workers > 0"),
    (dict(num_workers=1, multiprocessing_context="nope"), ValueError,
     "multiprocessing_context option should specify a valid start method"),
    (dict(multiprocessing_context="fork"), ValueError, "multiprocessing_context can only be used "
                                                       "with multi-process loading"),
    (dict(timeout=5), ValueError, "timeout=5 needs worker processes"),
])
def test_constructor_errors(kwargs, err, msg):
    with pytest.raises(err, match=msg.replace("(", r"\(").replace(")", r"\)")):
        DataLoader(_xy(), **kwargs)


def test_iterable_dataset_rejects_shuffle_and_samplers():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got "
                                         "shuffle=True"):
        DataLoader(Stream(), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(), sampler=[0])


def test_attributes_frozen_after_init():
    dl = DataLoader(_xy(), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after "
                                         "DataLoader is initialized"):
        dl.batch_size = 3


def test_ragged_batch_gets_torchs_stack_error():
    class Ragged(Dataset):
        def __getitem__(self, i):
            return ember.ones(i + 1)

        def __len__(self):
            return 3

    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\[1\] at entry 0 and \[2\] at entry 1"):
        next(iter(DataLoader(Ragged(), batch_size=3)))


# -- worker processes ----------------------------------------------------------------------------
def test_workers_return_batches_in_order():
    ds = _xy(37, 5)
    want = _batches(DataLoader(ds, batch_size=4))
    assert _batches(DataLoader(ds, batch_size=4, num_workers=2)) == want
    assert _batches(DataLoader(ds, batch_size=4, num_workers=2, prefetch_factor=1)) == want
    got = _batches(DataLoader(ds, batch_size=4, num_workers=2, in_order=False))
    assert sorted(map(str, got)) == sorted(map(str, want))


def test_workers_send_large_batches_through_shared_memory():
    x = ember.randn(64, 784)
    ds = TensorDataset(x, ember.arange(64))
    batches = list(DataLoader(ds, batch_size=32, num_workers=2))
    np.testing.assert_array_equal(np.concatenate([b[0].numpy() for b in batches]), x.numpy())
    # the batch is writable and owned by the main process
    batches[0][0].add_(1.0)
    leftovers = [n for n in os.listdir("/dev/shm") if n.startswith(f"ember_dl_{os.getpid()}_")] \
        if os.path.isdir("/dev/shm") else []
    assert leftovers == []


def test_worker_numpy_and_generic_structures():
    def collate(samples):
        return {"ids": [s["i"] for s in samples],
                "block": np.stack([np.repeat(s["sq"], 512) for s in samples])}  # > 4 KiB

    got = list(DataLoader(Squares(6), batch_size=3, num_workers=2, collate_fn=collate))
    assert got[1]["ids"] == [3, 4, 5]
    assert isinstance(got[1]["block"], np.ndarray) and got[1]["block"][2, 0] == 25.0


class Failing(Dataset):
    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"bad sample {i}")
        if i == 6:
            raise KeyError("missing key")
        return i

    def __len__(self):
        return 8


def test_worker_exception_is_reraised_with_worker_traceback():
    with pytest.raises(ValueError) as info:
        list(DataLoader(Failing(), batch_size=2, num_workers=2))
    text = str(info.value)
    assert "Caught ValueError in DataLoader worker process 0" in text
    assert "Original Traceback (most recent call last)" in text
    assert "bad sample 5" in text and "__getitem__" in text
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        list(DataLoader(Failing(), batch_size=None, sampler=[6], num_workers=2))


class Killer(Dataset):
    def __getitem__(self, i):
        if i == 3 and get_worker_info() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return i

    def __len__(self):
        return 8


@pytest.mark.timeout(60)
def test_killed_worker_raises_instead_of_hanging():
    # a hang would be caught by the test's timeout
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited "
                                           r"unexpectedly \(worker 1 killed by SIGKILL\)"):
        list(DataLoader(Killer(), batch_size=1, num_workers=2))


@pytest.mark.timeout(60)
def test_other_workers_stop_when_one_is_killed():
    # issue #36: after the error the surviving worker used to live as long as the iterator
    it = iter(DataLoader(Killer(), batch_size=1, num_workers=2))
    workers = list(it._workers)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        for _ in it:
            pass
    assert not any(w.is_alive() for w in workers)  # the iterator is still referenced here
    with pytest.raises(RuntimeError, match="exited unexpectedly"):  # and stays failed
        next(it)


class Slow(Dataset):
    def __getitem__(self, i):
        if i == 1:
            time.sleep(2)
        return i

    def __len__(self):
        return 2


@pytest.mark.timeout(60)
def test_timeout_is_honoured():
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.5 seconds"):
        list(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.5))


class WhoAmI(Dataset):
    def __getitem__(self, i):
        info = get_worker_info()
        return (info.id, info.num_workers, info.seed, os.getpid(), i,
                int(ember.randint(0, 1 << 30, (1,)).item()), int(np.random.randint(1 << 30)))

    def __len__(self):
        return 6


def _record_init(worker_id):
    info = get_worker_info()
    assert info.id == worker_id
    os.environ["EMBER_TEST_INIT"] = str(worker_id)


def test_worker_info_seeds_and_init_fn():
    assert get_worker_info() is None
    ember.manual_seed(5)
    rows = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2,
                           worker_init_fn=_record_init))
    ids = [r[0] for r in rows]
    assert ids == [0, 1, 0, 1, 0, 1]  # round-robin, in order
    assert all(r[1] == 2 for r in rows)
    seeds = {r[0]: r[2] for r in rows}
    assert seeds[1] == seeds[0] + 1  # base seed + worker id
    assert len({r[3] for r in rows}) == 2 and os.getpid() not in {r[3] for r in rows}
    ember.manual_seed(5)
    again = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2))
    assert [r[2] for r in again] == [r[2] for r in rows]
    assert [r[5:] for r in again] == [r[5:] for r in rows]  # ember and numpy draws repeat


def _fail_init(worker_id):
    raise RuntimeError(f"init failed in {worker_id}")


def test_worker_init_fn_error_is_reported():
    with pytest.raises(RuntimeError, match="init failed in 0"):
        list(DataLoader(_xy(), batch_size=2, num_workers=1, worker_init_fn=_fail_init))


class Shard(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def test_iterable_dataset_sharded_with_worker_info():
    got = [b.tolist() for b in DataLoader(Shard(10), batch_size=2, num_workers=2)]
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]


@pytest.mark.slow
def test_iterable_dataset_matches_torch_worker_interleaving():
    torch = pytest.importorskip("torch")

    class TorchShard(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(info.id, 11, info.num_workers))

    ref = [b.tolist() for b in torch.utils.data.DataLoader(TorchShard(), batch_size=3,
                                                           num_workers=2)]
    mine = [b.tolist() for b in DataLoader(Shard(11), batch_size=3, num_workers=2)]
    assert mine == ref


def test_persistent_workers_reuse_processes_and_reshuffle():
    dl = DataLoader(WhoAmI(), batch_size=None, num_workers=2, persistent_workers=True,
                    shuffle=True)
    first = list(dl)
    second = list(dl)
    assert {r[3] for r in first} == {r[3] for r in second}  # same worker processes
    assert sorted(r[4] for r in first) == sorted(r[4] for r in second) == list(range(6))
    dl._iterator._shutdown_workers()


def test_pin_memory_with_workers():
    ds = _xy(12, 2000)
    want = _batches(DataLoader(ds, batch_size=5))
    assert _batches(DataLoader(ds, batch_size=5, num_workers=2, pin_memory=True)) == want


def test_early_exit_cleans_up_workers_and_segments():
    ds = TensorDataset(ember.randn(256, 512))
    it = iter(DataLoader(ds, batch_size=32, num_workers=2))
    next(it)
    workers = list(it._workers)
    del it
    for w in workers:
        w.join(timeout=10)
        assert not w.is_alive()
    if os.path.isdir("/dev/shm"):
        assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"ember_dl_{os.getpid()}_")]


def test_unpicklable_dataset_with_spawn_names_the_offender():
    ds = Squares(4)
    ds.transform = lambda x: x  # pickle cannot send a lambda to a spawned worker
    dl = DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context="spawn")
    with pytest.raises((AttributeError, TypeError, Exception)) as info:
        next(iter(dl))
    assert "dataset.transform = <function" in str(info.value)
    assert "spawn" in str(info.value)


@pytest.mark.slow
def test_spawn_workers_round_trip():
    dl = DataLoader(_xy(9), batch_size=4, num_workers=2, multiprocessing_context="spawn")
    assert _batches(dl) == _batches(DataLoader(_xy(9), batch_size=4))


def test_transfer_roundtrip_keeps_dtypes_and_shapes():
    sender = transfer.Sender(transfer.new_prefix(), 0)
    receiver = transfer.Receiver(1)
    batch = {"f16": ember.ones(3, 4, dtype=ember.float16), "b": ember.tensor([True, False]),
             "big": ember.arange(20000, dtype=ember.int32).reshape(100, 200),
             "scalar": ember.tensor(7), "np": np.arange(3000.0), "s": "text"}
    for _ in range(3):  # the second and third reuse the released slot
        out = receiver.decode(sender.encode(batch))
        for k in ("f16", "b", "big", "scalar"):
            assert out[k].dtype == batch[k].dtype and out[k].shape == batch[k].shape
            np.testing.assert_array_equal(out[k].numpy(), batch[k].numpy())
        np.testing.assert_array_equal(out["np"], batch["np"])
        assert out["s"] == "text"
        del out
        sender.release(receiver.take_returns(0))
    assert len(sender.slots) == 1
    sender.close()
