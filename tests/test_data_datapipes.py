"""DataPipes: the base classes, functional registration, graph, pickling, and every in-memory
iterable/map pipe. Expected outputs are hand-computed; where torchdata (0.8, with its
DataPipes) is installed the same pipelines are also run through it and compared."""
import functools
import operator
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember.data.datapipes import iter as dpi
from ember.data.datapipes import map as dpm
from ember.utils.data import DataChunk, IterDataPipe, functional_datapipe
from ember.utils.data.graph import traverse_dps
from ember.utils.data.graph_settings import (apply_random_seed, apply_sharding,
                                             apply_shuffle_settings, get_all_graph_pipes)

W = dpi.IterableWrapper


def add_one(x):
    return x + 1


def is_even(x):
    return x % 2 == 0


def mod3(x):
    return x % 3


def pair_sum(a, b):
    return a + b


def _td(module="iter"):
    """torchdata's DataPipes, or skip."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pytest.importorskip(f"torchdata.datapipes.{module}")


# -- base classes and registration ----------------------------------------------------------------
def test_at_least_fifty_builtins():
    iter_classes = [n for n in dpi.__all__ if n not in ("IterDataPipe", "DataChunk",
                                                        "SHARDING_PRIORITIES")]
    map_classes = [n for n in dpm.__all__ if n != "MapDataPipe"]
    assert len(iter_classes) + len(map_classes) >= 50
    for name in ["IterableWrapper", "FileLister", "FileOpener", "LineReader", "CSVParser",
                 "JsonParser", "Mapper", "Filter", "FlatMapper", "Shuffler", "Batcher",
                 "UnBatcher", "BucketBatcher", "Collator", "Header", "Cycler", "Zipper",
                 "Concater", "Multiplexer", "Demultiplexer", "Forker", "Enumerator",
                 "ShardingFilter", "InMemoryCacheHolder", "Grouper", "TarArchiveLoader",
                 "ZipArchiveLoader"]:
        assert hasattr(dpi, name), name
    for name in ["SequenceWrapper", "Mapper", "Batcher", "Shuffler", "Concater", "Zipper"]:
        assert hasattr(dpm, name), name
    for fn in ["readlines", "parse_csv", "parse_json_files", "map", "filter", "flatmap",
               "shuffle", "batch", "unbatch", "bucketbatch", "collate", "header", "cycle", "zip",
               "concat", "mux", "demux", "fork", "enumerate", "sharding_filter",
               "in_memory_cache", "groupby", "load_from_tar", "load_from_zip", "open_files",
               "list_files"]:
        assert fn in IterDataPipe.functions, fn


def test_functional_form_equals_class_form():
    a = W(range(10)).map(add_one).filter(is_even).batch(2)
    b = dpi.Batcher(dpi.Filter(dpi.Mapper(W(range(10)), add_one), is_even), 2)
    assert list(a) == list(b) == [[2, 4], [6, 8], [10]]
    assert isinstance(list(a)[0], DataChunk)
    assert "batch" in dir(a)


def test_user_pipe_registration():
    @functional_datapipe("ember_test_times")
    class TimesIterDataPipe(IterDataPipe):
        def __init__(self, dp, k):
            self.dp = dp
            self.k = k

        def __iter__(self):
            for x in self.dp:
                yield x * self.k

    assert list(W([1, 2]).ember_test_times(3).map(add_one)) == [4, 7]

    class OtherIterDataPipe(IterDataPipe):
        def __iter__(self):
            yield 1

    with pytest.raises(Exception, match="Unable to add DataPipe function name ember_test_times "
                                        "as it is already taken"):
        functional_datapipe("ember_test_times")(OtherIterDataPipe)

    @functional_datapipe("ember_test_times")  # the same class defined again replaces it
    class TimesIterDataPipe(IterDataPipe):  # noqa: F811
        def __init__(self, dp, k):
            self.dp = dp
            self.k = k

        def __iter__(self):
            for x in self.dp:
                yield x * self.k * 10

    assert list(W([1]).ember_test_times(2)) == [20]
    with pytest.raises(TypeError, match="can only decorate IterDataPipe"):
        functional_datapipe("ember_test_nope")(int)
    with pytest.raises(AttributeError, match="'IterableWrapperIterDataPipe' object has no "
                                             "attribute 'no_such_pipe'"):
        W([1]).no_such_pipe()


def test_single_iterator_constraint_and_reset():
    dp = W(range(5)).map(add_one)
    it1 = iter(dp)
    assert next(it1) == 1
    it2 = iter(dp)
    assert next(it2) == 1
    with pytest.raises(RuntimeError, match="This iterator has been invalidated because another "
                                           "iterator has been created from the same IterDataPipe"):
        next(it1)
    assert list(it2) == [2, 3, 4, 5]
    assert list(dp) == list(dp) == [1, 2, 3, 4, 5]


def test_exception_names_the_pipe():
    def boom(x):
        raise ValueError(f"cannot use {x}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dp = W([7]).map(boom)
    with pytest.raises(ValueError, match=r"cannot use 7\nThis exception is thrown by __iter__ "
                                         r"of MapperIterDataPipe\(datapipe="):
        list(dp)


def test_lambda_warns_like_torch():
    with pytest.warns(UserWarning, match="function is not supported by pickle"):
        W([1]).map(lambda x: x)
    with pytest.raises(TypeError, match="A callable function is expected"):
        W([1]).filter(3)


def test_pickle_round_trip_keeps_behaviour():
    dp = W(range(20)).map(add_one).filter(is_even).shuffle(buffer_size=5).batch(3)
    dp2 = pickle.loads(pickle.dumps(dp))
    apply_random_seed(dp, ember.Generator().manual_seed(1))
    apply_random_seed(dp2, ember.Generator().manual_seed(1))
    assert list(dp) == list(dp2)
    m = dpm.SequenceWrapper([1, 2, 3]).map(add_one)
    assert list(pickle.loads(pickle.dumps(m))) == [2, 3, 4]


def test_traverse_dps_graph():
    src = W(range(3))
    left = src.map(add_one)
    zipped = left.zip(src)
    graph = traverse_dps(zipped)
    (zid, (zdp, children)), = graph.items()
    assert zdp is zipped and zid == id(zipped)
    assert set(children) == {id(left), id(src)}
    assert set(children[id(left)][1]) == {id(src)}
    pipes = get_all_graph_pipes(graph)
    assert {id(p) for p in pipes} == {id(zipped), id(left), id(src)}
    forked = W(range(3)).fork(2)
    g = traverse_dps(forked[0])
    assert any(type(p).__name__ == "IterableWrapperIterDataPipe" for p in get_all_graph_pipes(g))
    with pytest.raises(RuntimeError, match="Expected `IterDataPipe` or `MapDataPipe`"):
        traverse_dps([1, 2])


def test_graph_settings_shuffle_seed_sharding():
    dp = W(range(10)).shuffle().sharding_filter()
    apply_shuffle_settings(dp, shuffle=False)
    assert list(dp) == list(range(10))
    apply_shuffle_settings(dp, shuffle=True)
    apply_random_seed(dp, ember.Generator().manual_seed(3))
    a = list(dp)
    apply_random_seed(dp, ember.Generator().manual_seed(3))
    assert list(dp) == a and sorted(a) == list(range(10)) and a != list(range(10))
    apply_sharding(dp, 3, 1)
    apply_random_seed(dp, ember.Generator().manual_seed(3))
    assert list(dp) == a[1::3]
    with pytest.warns(UserWarning, match="does not contain a `Shuffler`"):
        added = apply_shuffle_settings(W(range(3)), shuffle=True)
    assert type(added).__name__ == "ShufflerIterDataPipe"
    twice = W(range(4)).sharding_filter().sharding_filter()
    with pytest.raises(RuntimeError, match="Sharding twice on a single pipeline"):
        apply_sharding(twice, 2, 0)


# -- iterable pipes -------------------------------------------------------------------------------
def test_iterable_wrapper_deepcopy():
    data = [[1], [2]]
    dp = W(data)
    for item in dp:
        item.append(0)
    assert data == [[1], [2]]
    shallow = W(data, deepcopy=False)
    for item in shallow:
        item.append(0)
    assert data == [[1, 0], [2, 0]]
    assert len(dp) == 2


def test_map_filter_columns():
    rows = [(1, 2, 3), (4, 5, 6)]
    assert list(W(rows).map(add_one, input_col=1)) == [(1, 3, 3), (4, 6, 6)]
    assert list(W(rows).map(pair_sum, input_col=[0, 2])) == [(4, 2), (10, 5)]
    assert list(W(rows).map(add_one, input_col=0, output_col=-1)) == [(1, 2, 3, 2), (4, 5, 6, 5)]
    dicts = [{"a": 1}, {"a": 2}]
    assert list(W(dicts).map(add_one, input_col="a", output_col="b")) == \
        [{"a": 1, "b": 2}, {"a": 2, "b": 3}]
    with pytest.raises(ValueError, match="`output_col` must be None when `input_col` is None"):
        W(rows).map(add_one, output_col=1)
    with pytest.raises(ValueError, match="The function pair_sum takes 2 positional parameters, "
                                         "but 1 are required"):
        W(rows).map(pair_sum, input_col=0)
    assert list(W(rows).filter(is_even, input_col=0)) == [(4, 5, 6)]
    assert list(W(range(6)).filter(filter_fn=is_even)) == [0, 2, 4]
    assert list(W(range(6)).filter(fn=is_even)) == [0, 2, 4]  # the README's spelling
    with pytest.raises(ValueError, match="Boolean output is required for `filter_fn`"):
        list(W([1]).filter(add_one))
    assert len(W(range(4)).map(add_one)) == 4


def test_flatmap_collate_map_batches_threadpool():
    def dup(x):
        return [x, x]

    assert list(W([1, 2]).flatmap(dup)) == [1, 1, 2, 2]
    assert list(W([[1, 2], [3]]).flatmap()) == [1, 2, 3]
    batches = list(W([(1, 2.0), (3, 4.0), (5, 6.0)]).batch(2).collate())
    assert batches[0][0].tolist() == [1, 3] and batches[0][1].dtype == ember.float64

    def reverse(batch):
        return batch[::-1]

    assert list(W(range(5)).map_batches(reverse, batch_size=2)) == [1, 0, 3, 2, 4]
    assert list(W(range(50)).threadpool_map(add_one, max_workers=4)) == list(range(1, 51))


def test_shuffle_reproducible_and_complete():
    dp = W(range(50)).shuffle(buffer_size=8)
    ember.manual_seed(4)
    a = list(dp)
    ember.manual_seed(4)
    b = list(dp)
    assert a == b and sorted(a) == list(range(50)) and a != list(range(50))
    c = list(dp)  # a new epoch draws a new seed
    assert c != a and sorted(c) == list(range(50))
    assert list(dp.set_seed(9)) == list(W(range(50)).shuffle(buffer_size=8).set_seed(9))
    assert list(W(range(5)).shuffle().set_shuffle(False)) == [0, 1, 2, 3, 4]
    assert list(W([[1, 2], [3]]).shuffle(unbatch_level=1).set_shuffle(False)) == [1, 2, 3]
    with pytest.raises(AssertionError, match="buffer_size should be larger than 0"):
        W([1]).shuffle(buffer_size=0)
    # a buffer of 1 cannot reorder anything
    assert list(W(range(6)).shuffle(buffer_size=1)) == list(range(6))


def test_in_batch_shuffle_shuffled_flatmap_random_split():
    out = list(W(range(8)).batch(4).in_batch_shuffle().set_seed(2))
    assert [sorted(b) for b in out] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    flat = list(W([[1, 2, 3], [4, 5, 6]]).shuffled_flatmap(buffer_size=2).set_seed(0))
    assert sorted(flat) == [1, 2, 3, 4, 5, 6]
    train, valid = W(range(10)).random_split(total_length=10, weights={"train": 0.5,
                                                                          "valid": 0.5}, seed=0)
    t, v = list(train), list(valid)
    assert sorted(t + v) == list(range(10)) and len(t) == len(v) == 5
    assert list(train) == t and len(train) == 5
    only = W(range(10)).random_split(weights={"a": 3, "b": 7}, seed=0, target="b")
    assert len(list(only)) == 7
    with pytest.raises(KeyError, match="does not match any key"):
        W(range(3)).random_split(weights={"a": 1}, seed=0, target="z")


def test_batch_unbatch_bucketbatch():
    assert list(W(range(7)).batch(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(W(range(7)).batch(3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(W(range(7)).batch(3)) == 3 and len(W(range(7)).batch(3, drop_last=True)) == 2
    with pytest.raises(AssertionError, match="Batch size is required to be larger than 0"):
        W(range(3)).batch(0)
    nested = W([[[0, 1], [2]], [[3]]])
    assert list(nested.unbatch()) == [[0, 1], [2], [3]]
    assert list(nested.unbatch(unbatch_level=2)) == [0, 1, 2, 3]
    assert list(nested.unbatch(unbatch_level=-1)) == [0, 1, 2, 3]
    with pytest.raises(IndexError, match="unbatch_level 3 exceeds the depth of the DataPipe"):
        list(nested.unbatch(unbatch_level=3))
    buckets = list(W([5, 1, 4, 2, 3, 6]).bucketbatch(batch_size=2, batch_num=3,
                                                        sort_key=sorted))
    assert sorted(map(tuple, buckets)) == [(1, 2), (3, 4), (5, 6)]


def test_max_token_bucketize():
    words = ["a", "bb", "ccc", "dddd", "ee", "f"]
    batches = list(W(words).max_token_bucketize(max_token_count=4, buffer_size=10))
    assert all(sum(len(w) for w in b) <= 4 for b in batches)
    assert sorted(w for b in batches for w in b) == sorted(words)
    assert [len(w) for b in batches for w in b] == sorted(len(w) for w in words)
    with pytest.raises(ValueError, match="max_token_count.. must be equal to or greater than"):
        W(words).max_token_bucketize(max_token_count=2, max_len=3)


def test_groupby():
    groups = list(W(range(10)).groupby(mod3, keep_key=True))
    assert groups == [(0, [0, 3, 6, 9]), (1, [1, 4, 7]), (2, [2, 5, 8])]
    sized = list(W(range(10)).groupby(mod3, group_size=2))
    assert sized[:3] == [[0, 3], [1, 4], [2, 5]]
    with pytest.raises(RuntimeError, match="Failed to group items"):
        list(W(range(10)).groupby(mod3, buffer_size=3, group_size=3))
    tolerant = list(W(range(10)).groupby(mod3, buffer_size=3, group_size=3,
                                         drop_remaining=True))
    assert all(isinstance(g, DataChunk) for g in tolerant)


def test_header_cycle_repeat_enumerate_index_setlength():
    assert list(W(range(20)).header(3)) == [0, 1, 2] and len(W(range(20)).header(3)) == 3
    assert list(W(range(2)).header(None)) == [0, 1]
    assert list(W(range(3)).cycle(2)) == [0, 1, 2, 0, 1, 2] and len(W(range(3)).cycle(2)) == 6
    assert list(W(range(2)).cycle().header(5)) == [0, 1, 0, 1, 0]
    with pytest.raises(TypeError, match="cycles forever"):
        len(W(range(2)).cycle())
    assert list(W("ab").repeat(2)) == ["a", "a", "b", "b"]
    with pytest.raises(ValueError, match="The number of repetition must be > 1, got 1"):
        W([1]).repeat(1)
    assert list(W("ab").enumerate(starting_index=5)) == [(5, "a"), (6, "b")]
    assert list(W([{"x": 1}, {"x": 2}]).add_index("i")) == [{"x": 1, "i": 0}, {"x": 2, "i": 1}]
    with pytest.raises(NotImplementedError, match="adding index to row or batch in dict type"):
        list(W([1]).add_index())
    limited = W(range(10)).set_length(4)
    assert len(limited) == 4 and list(limited) == [0, 1, 2, 3]


def test_in_memory_cache_replays():
    calls = []

    def record(x):
        calls.append(x)
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dp = W(range(4)).map(record).in_memory_cache()
    assert list(dp) == list(dp) == [0, 1, 2, 3]
    assert calls == [0, 1, 2, 3]


def test_slice_drop_flatten():
    rows = [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert list(W(rows).slice(1, 3)) == [(1, 2), (5, 6)]
    assert list(W(rows).slice([0, 3])) == [(0, 3), (4, 7)]
    assert list(W([{"a": 1, "b": 2}]).slice(["a"])) == [{"a": 1}]
    assert list(W(rows).drop([0, 1])) == [(2, 3), (6, 7)]
    assert list(W([{"a": 1, "b": 2}]).drop("a")) == [{"b": 2}]
    assert list(W([(0, 10, (100, 1000))]).flatten(2)) == [(0, 10, 100, 1000)]
    assert list(W([[0, [1, 2]]]).flatten()) == [[0, 1, 2]]
    assert list(W([{"a": 1, "b": {"c": 2, "d": 3}}]).flatten("b")) == [{"a": 1, "c": 2, "d": 3}]


def test_concat_zip_mux():
    a, b = W([1, 2]), W([10, 20, 30])
    assert list(a.concat(b)) == [1, 2, 10, 20, 30] and len(a.concat(b)) == 5
    assert list(a.zip(b)) == [(1, 10), (2, 20)] and len(a.zip(b)) == 2
    assert list(a.zip_longest(b, fill_value=0)) == [(1, 10), (2, 20), (0, 30)]
    assert list(a.mux(b)) == [1, 10, 2, 20] and len(a.mux(b)) == 4
    assert list(a.mux_longest(b)) == [1, 10, 2, 20, 30]
    with pytest.raises(TypeError, match="Expected all inputs to be `IterDataPipe`"):
        a.concat([1])
    with pytest.raises(TypeError, match="All inputs are required to be `IterDataPipe`"):
        a.zip([1])
    sm = dpi.SampleMultiplexer({W([1] * 5): 0.5, W([2] * 5): 0.5}, seed=0)
    out = list(sm)
    assert sorted(out) == [1] * 5 + [2] * 5 and len(sm) == 10


def test_fork_demux_unzip_round_robin():
    a, b = W(range(4)).fork(2)
    assert list(a) == [0, 1, 2, 3] and list(b) == [0, 1, 2, 3]
    assert list(zip(*W(range(3)).fork(2))) == [(0, 0), (1, 1), (2, 2)]
    c, d = W(range(10)).fork(2, buffer_size=2)
    with pytest.raises(BufferError, match="ForkerIterDataPipe buffer overflow, buffer size 2 is "
                                          "insufficient"):
        list(c)
    assert W([1]).fork(1).__class__.__name__ == "IterableWrapperIterDataPipe"
    with pytest.raises(ValueError, match="Expected `num_instances` larger than 0, but 0"):
        W([1]).fork(0)
    ev, od = W(range(7)).demux(2, mod2)
    assert list(ev) == [0, 2, 4, 6] and list(od) == [1, 3, 5]
    bad = W(range(3)).demux(2, mod3)
    with pytest.raises(ValueError, match="Output of the classification fn should be between 0 "
                                         "and 1. 2 is returned"):
        list(bad[0])
    x, y = W([(1, "a"), (2, "b")]).unzip(sequence_length=2)
    assert list(x) == [1, 2] and list(y) == ["a", "b"]
    r0, r1, r2 = W(range(7)).round_robin_demux(3)
    assert list(r0) == [0, 3, 6] and list(r1) == [1, 4] and list(r2) == [2, 5]
    pa, pb = W(range(3)).fork(2)
    first = iter(pa)
    next(first)
    with pytest.warns(UserWarning, match="Some child DataPipes are not exhausted"):
        assert list(pa) == [0, 1, 2]


def mod2(x):
    return x % 2


def test_key_zippers():
    src = W([("a", 1), ("b", 2), ("c", 3)])
    ref = W([("c", 30), ("a", 10), ("b", 20)])
    key = operator.itemgetter(0)
    assert list(src.zip_with_iter(ref, key_fn=key, merge_fn=merge_values)) == \
        [("a", 1, 10), ("b", 2, 20), ("c", 3, 30)]
    assert list(src.zip_with_iter(ref, key_fn=key, keep_key=True))[0] == \
        ("a", (("a", 1), ("a", 10)))
    mp = dpm.SequenceWrapper({"a": 100, "b": 200, "c": 300})
    assert list(src.zip_with_map(mp, key_fn=key)) == \
        [(("a", 1), 100), (("b", 2), 200), (("c", 3), 300)]
    with pytest.raises(KeyError, match="which is not a valid key in the given MapDataPipe"):
        list(W([("z", 0)]).zip_with_map(mp, key_fn=key))
    with pytest.raises(BufferError, match="No matching key can be found"):
        list(W([("q", 0)]).zip_with_iter(ref, key_fn=key))


def merge_values(x, y):
    return x[0], x[1], y[1]


def test_sharding_filter_and_len():
    dp = W(range(10)).sharding_filter()
    dp.apply_sharding(3, 2)
    assert list(dp) == [2, 5, 8] and len(dp) == 3
    with pytest.raises(ValueError, match=r"instance_id\(3\) should be smaller than "
                                         r"num_of_instances\(3\)"):
        dp.apply_sharding(3, 3)


def test_prefetch_pin_memory_shard_expand_converters():
    assert list(W(range(30)).prefetch(4)) == list(range(30))
    pinned = list(W([ember.arange(6.).reshape(2, 3).t()]).pin_memory())
    assert pinned[0].is_contiguous() and pinned[0].tolist() == [[0, 3], [1, 4], [2, 5]]
    assert list(W(["d-{00..02}.tar"]).shard_expand()) == ["d-00.tar", "d-01.tar", "d-02.tar"]
    m = W([("a", 1), ("b", 2)]).to_map_datapipe()
    assert m["b"] == 2 and len(m) == 2
    with pytest.raises(IndexError, match="Index z is invalid"):
        m["z"]
    it = dpm.SequenceWrapper([5, 6, 7]).to_iter_datapipe()
    assert list(it) == [5, 6, 7]
    assert list(dpi.MapToIterConverter(dpm.SequenceWrapper("abc"), indices=[2, 0])) == ["c", "a"]


def test_rows2columnar_paragraphs():
    batch = [[{"a": 1, "b": 2}, {"a": 3, "b": 4}]]
    assert [dict(c) for c in W(batch).rows2columnar()] == [{"a": [1, 3], "b": [2, 4]}]
    assert [dict(c) for c in W([[[1, 2], [3, 4]]]).rows2columnar(["x", "y"])] == \
        [{"x": [1, 3], "y": [2, 4]}]
    lines = [("f", "a"), ("f", "b"), ("f", ""), ("f", "c"), ("g", "d")]
    assert list(W(lines).lines_to_paragraphs()) == [("f", "a\nb"), ("f", "c"), ("g", "d")]


def test_sampler_pipe():
    assert list(dpi.Sampler(W(range(4)))) == [0, 1, 2, 3]


# -- map pipes --------------------------------------------------------------------------------------
def test_map_style_pipes():
    seq = dpm.SequenceWrapper(range(10))
    assert seq[3] == 3 and len(seq) == 10
    m = seq.map(add_one)
    assert [m[i] for i in range(3)] == [1, 2, 3]
    b = seq.batch(4)
    assert len(b) == 3 and b[2] == [8, 9] and b[-1] == [8, 9]
    assert len(seq.batch(4, drop_last=True)) == 2
    cat = dpm.SequenceWrapper([1, 2]).concat(dpm.SequenceWrapper([3]))
    assert [cat[i] for i in range(3)] == [1, 2, 3]
    z = dpm.SequenceWrapper("ab").zip(dpm.SequenceWrapper("xyz"))
    assert len(z) == 2 and z[1] == ("b", "y")
    u0, u1 = dpm.SequenceWrapper([(1, 2), (3, 4)]).unzip(sequence_length=2)
    assert [u1[i] for i in range(2)] == [2, 4]
    cached = seq.map(add_one).in_memory_cache()
    assert cached[5] == 6 and 5 in cached.cache
    sh = seq.shuffle()
    ember.manual_seed(0)
    a = list(sh)
    ember.manual_seed(0)
    assert list(sh) == a and sorted(a) == list(range(10))
    assert list(seq.shuffle().set_shuffle(False)) == list(range(10))
    with pytest.raises(TypeError, match="Expected all inputs to be `MapDataPipe`"):
        dpm.SequenceWrapper([1]).concat(W([1]))


# -- against torchdata ------------------------------------------------------------------------------
DETERMINISTIC = [
    lambda m: m.IterableWrapper(range(20)).map(add_one).filter(is_even).batch(3),
    lambda m: m.IterableWrapper([[1, 2], [3, [4, 5]]]).unbatch(unbatch_level=-1),
    lambda m: m.IterableWrapper(range(10)).groupby(mod3, keep_key=True, group_size=2),
    lambda m: m.IterableWrapper(range(5)).cycle(2).header(7).enumerate(),
    lambda m: m.IterableWrapper(range(5)).concat(m.IterableWrapper(range(3))).zip(
        m.IterableWrapper("abcdefgh")),
    lambda m: m.IterableWrapper(range(3)).mux(m.IterableWrapper(range(5)),
                                              m.IterableWrapper(range(4))),
    lambda m: m.IterableWrapper(range(3)).mux_longest(m.IterableWrapper(range(5))),
    lambda m: m.IterableWrapper(range(4)).zip_longest(m.IterableWrapper("ab"), fill_value=-1),
    lambda m: m.IterableWrapper([(1, 2, 3), (4, 5, 6)]).map(pair_sum, input_col=[0, 2],
                                                            output_col=-1),
    lambda m: m.IterableWrapper([(0, 10, (100, 1000)), (1, 11, (111, 1001))]).flatten(2),
    lambda m: m.IterableWrapper([(0, 1, 2, 3)]).slice(1, 4, 2),
    lambda m: m.IterableWrapper(range(5)).repeat(3),
    lambda m: m.IterableWrapper(range(9)).sharding_filter(),
    lambda m: m.IterableWrapper(["a", "bb", "ccc", "dddd", "ee", "f", "gggg"])
    .max_token_bucketize(max_token_count=5, buffer_size=3),
    lambda m: m.IterableWrapper([("f", "a"), ("f", ""), ("f", "b"), ("g", "c")])
    .lines_to_paragraphs(),
    lambda m: m.IterableWrapper([[{"a": 1, "b": 2}, {"a": 3, "b": 4}]]).rows2columnar(),
    lambda m: m.IterableWrapper(range(7)).batch(3).map_batches(functools.partial(
        sorted, reverse=True), batch_size=2),
]


@pytest.mark.parametrize("build", DETERMINISTIC)
def test_matches_torchdata(build):
    td = _td()

    def norm(x):
        if isinstance(x, dict):
            return {k: norm(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(norm(v) for v in x) if not isinstance(x, list) else [norm(v) for v in x]
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = [norm(x) for x in build(td)]
    assert [norm(x) for x in build(dpi)] == ref


def test_split_pipes_match_torchdata():
    td = _td()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for build in (lambda m: m.IterableWrapper(range(9)).demux(3, mod3),
                      lambda m: m.IterableWrapper(range(8)).round_robin_demux(3),
                      lambda m: m.IterableWrapper([(i, -i) for i in range(4)]).unzip(2)):
            assert [list(c) for c in build(dpi)] == [list(c) for c in build(td)]
        mine = dpi.IterableWrapper(range(10)).random_split(weights={"a": 3, "b": 7}, seed=5)
        ref = td.IterableWrapper(range(10)).random_split(weights={"a": 3, "b": 7}, seed=5)
        assert [list(c) for c in mine] == [list(c) for c in ref]  # same algorithm, same seed


def test_map_pipes_match_torchdata():
    tdm = _td("map")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine = dpm.SequenceWrapper(range(7)).map(add_one).batch(3)
        ref = tdm.SequenceWrapper(range(7)).map(add_one).batch(3)
        assert [mine[i] for i in range(len(mine))] == [ref[i] for i in range(len(ref))]


def test_numpy_items_flow_through():
    out = list(W([np.arange(3), np.arange(3)]).batch(2).collate())
    assert out[0].tolist() == [[0, 1, 2], [0, 1, 2]]
