"""DataPipes over files (listing, opening, parsing, archives, saving, hashing) and DataPipes
fed to the DataLoader (shuffling, sharding across workers, seeding)."""
import bz2
import hashlib
import io
import json
import lzma
import os
import pickle
import tarfile
import zipfile

import pytest

import ember
from ember.data.datapipes.iter import FileLister, FileOpener, IterableWrapper
from ember.utils.data import DataLoader


@pytest.fixture
def files(tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,2\n3,4\n")
    (tmp_path / "b.csv").write_text("x,y\n5,6\n")
    (tmp_path / "c.json").write_text(json.dumps({"k": [1, 2]}))
    (tmp_path / "notes.txt").write_text("first\nsecond\n\nthird\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "d.csv").write_text("x,y\n7,8\n")
    return tmp_path


def test_file_lister_masks_recursion_and_errors(files):
    root = str(files)
    assert list(FileLister(root, "*.csv")) == [os.path.join(root, "a.csv"),
                                               os.path.join(root, "b.csv")]
    deep = list(FileLister(root, ["*.csv", "*.json"], recursive=True))
    assert [os.path.basename(p) for p in deep] == ["a.csv", "b.csv", "c.json", "d.csv"]
    single = os.path.join(root, "a.csv")
    assert list(FileLister(single)) == [single]
    assert list(IterableWrapper([root]).list_files(masks="*.txt")) == \
        [os.path.join(root, "notes.txt")]
    with pytest.raises(FileNotFoundError, match="no_such_dir"):
        list(FileLister(os.path.join(root, "no_such_dir")))
    with pytest.raises(TypeError, match="FileListerIterDataPipe instance doesn't have valid "
                                        "length"):
        len(FileLister(root))
    assert len(FileLister(root, length=3)) == 3


def test_file_opener_modes_and_missing_file(files):
    path = str(files / "notes.txt")
    (name, stream), = list(FileOpener([path]))
    assert name == path and stream.read().startswith("first")
    stream.close()
    (_, raw), = list(FileOpener([path], mode="b"))
    assert raw.read(5) == b"first"
    with pytest.raises(ValueError, match="Invalid mode w"):
        FileOpener([path], mode="w")
    with pytest.raises(ValueError, match="binary mode doesn't take an encoding argument"):
        FileOpener([path], mode="rb", encoding="utf-8")
    missing = str(files / "missing.txt")
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        list(FileOpener([path, missing]))
    with pytest.raises(TypeError, match="Expected string type for pathname"):
        list(FileOpener([3]))


def test_readlines_and_paragraphs(files):
    path = str(files / "notes.txt")
    lines = list(FileOpener([path]).readlines())
    assert lines == [(path, "first"), (path, "second"), (path, ""), (path, "third")]
    assert list(FileOpener([path], mode="b").readlines(return_path=False, skip_lines=1,
                                                       decode=True)) == ["second", "", "third"]
    assert list(FileOpener([path]).readlines(strip_newline=False, return_path=False))[0] == \
        "first\n"
    assert list(FileOpener([path]).readlines().lines_to_paragraphs()) == \
        [(path, "first\nsecond"), (path, "third")]


def test_csv_and_json_parsers(files):
    root = str(files)
    rows = list(FileLister(root, "*.csv").open_files().parse_csv(skip_lines=1))
    assert rows == [["1", "2"], ["3", "4"], ["5", "6"]]
    with_path = list(FileLister(root, "b.csv").open_files(mode="b").parse_csv(
        return_path=True, as_tuple=True))
    assert with_path == [(os.path.join(root, "b.csv"), ("x", "y")),
                         (os.path.join(root, "b.csv"), ("5", "6"))]
    dicts = list(FileLister(root, "a.csv").open_files().parse_csv_as_dict())
    assert dicts == [{"x": "1", "y": "2"}, {"x": "3", "y": "4"}]
    (name, obj), = list(FileLister(root, "*.json").open_files().parse_json_files())
    assert obj == {"k": [1, 2]}
    (files / "bad.json").write_text("{nope")
    with pytest.raises(ValueError, match="bad.json is not valid JSON"):
        list(FileLister(root, "bad.json").open_files().parse_json_files())


def test_stream_reader_saver_hash_checker(files, tmp_path):
    path = str(files / "notes.txt")
    whole = list(FileOpener([path], mode="b").read_from_stream())
    assert whole == [(path, b"first\nsecond\n\nthird\n")]
    chunks = list(FileOpener([path], mode="b").read_from_stream(chunk=8))
    assert b"".join(c for _, c in chunks) == whole[0][1] and len(chunks) == 3
    out_dir = tmp_path / "out"
    saved = list(IterableWrapper([("one", b"1"), ("two", b"22")]).save_to_disk(
        mode="wb", filepath_fn=lambda name: str(out_dir / f"{name}.bin")))
    assert [open(p, "rb").read() for p in saved] == [b"1", b"22"]
    digest = hashlib.sha256(whole[0][1]).hexdigest()
    checked = list(FileOpener([path], mode="b").check_hash({path: digest}))
    assert checked[0][1].read() == whole[0][1]  # rewound
    with pytest.raises(RuntimeError, match="does not match. Delete the file manually"):
        list(FileOpener([path], mode="b").check_hash({path: "0" * 64}))
    with pytest.raises(RuntimeError, match="Unspecified hash for file"):
        list(FileOpener([path], mode="b").check_hash({}))


def test_archives(tmp_path):
    members = {"x.txt": b"hello", "d/y.txt": b"world"}
    tar_path = tmp_path / "pack.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    zip_path = tmp_path / "pack.zip"
    with zipfile.ZipFile(zip_path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    out = {os.path.relpath(p, str(tar_path)): s.read() for p, s in
           FileOpener([str(tar_path)], mode="b").load_from_tar()}
    assert out == members
    out = {os.path.relpath(p, str(zip_path)): s.read() for p, s in
           FileOpener([str(zip_path)], mode="b").load_from_zip()}
    assert out == members
    xz_path, bz_path = tmp_path / "t.txt.xz", tmp_path / "t.txt.bz2"
    xz_path.write_bytes(lzma.compress(b"xz data"))
    bz_path.write_bytes(bz2.compress(b"bz data"))
    (p, s), = list(FileOpener([str(xz_path)], mode="b").load_from_xz())
    assert p == str(tmp_path / "t.txt") and s.read() == b"xz data"
    (p, s), = list(FileOpener([str(bz_path)], mode="b").load_from_bz2())
    assert s.read() == b"bz data"
    (p, s), = list(FileOpener([str(xz_path)], mode="b").decompress())
    assert s.read() == b"xz data"
    gz_path = tmp_path / "g.gz"
    import gzip
    gz_path.write_bytes(gzip.compress(b"gz data"))
    (p, s), = list(FileOpener([str(gz_path)], mode="b").decompress(file_type="gzip"))
    assert s.read() == b"gz data"
    (tmp_path / "junk.tar").write_bytes(b"not a tar at all" * 40)
    with pytest.raises(tarfile.TarError, match="Unable to extract files from corrupted tarfile"):
        list(FileOpener([str(tmp_path / "junk.tar")], mode="b").load_from_tar())


# -- DataPipes in the DataLoader --------------------------------------------------------------------
def double(x):
    return 2 * x


def test_datapipe_in_single_process_loader():
    dp = IterableWrapper(range(10)).map(double)
    assert [b.tolist() for b in DataLoader(dp, batch_size=4)] == \
        [[0, 2, 4, 6], [8, 10, 12, 14], [16, 18]]
    shuffled = IterableWrapper(range(10)).shuffle()
    ember.manual_seed(0)
    a = [b.tolist() for b in DataLoader(shuffled, batch_size=5)]
    ember.manual_seed(0)
    b = [b.tolist() for b in DataLoader(shuffled, batch_size=5)]
    assert a == b and sorted(sum(a, [])) == list(range(10))
    assert list(DataLoader(shuffled, batch_size=None, shuffle=False)) == list(range(10))


def test_sharding_filter_splits_work_across_workers():
    dp = IterableWrapper(range(20)).shuffle().sharding_filter().map(double)
    ember.manual_seed(1)
    got = [x for b in DataLoader(dp, batch_size=3, num_workers=2) for x in b.tolist()]
    assert sorted(got) == [2 * i for i in range(20)]  # each item once: shuffles agree
    ember.manual_seed(1)
    again = [x for b in DataLoader(dp, batch_size=3, num_workers=2) for x in b.tolist()]
    assert again == got
    g = ember.Generator().manual_seed(5)
    with_gen = [x for b in DataLoader(dp, batch_size=3, num_workers=2, generator=g)
                for x in b.tolist()]
    assert sorted(with_gen) == sorted(got)


def test_unsharded_datapipe_repeats_in_every_worker():
    # torch's behaviour: without sharding_filter each worker yields the whole pipe
    got = [x for b in DataLoader(IterableWrapper(range(4)), batch_size=2, num_workers=2)
           for x in b.tolist()]
    assert sorted(got) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_file_pipe_in_workers(files):
    dp = FileLister(str(files), "*.csv", recursive=True).sharding_filter() \
        .open_files().parse_csv(skip_lines=1).map(row_to_ints)
    rows = sorted(tuple(r.tolist()) for r in DataLoader(dp, batch_size=None, num_workers=2))
    assert rows == [(1, 2), (3, 4), (5, 6), (7, 8)]


def row_to_ints(row):
    return ember.tensor([int(v) for v in row])


def test_pipe_with_open_stream_does_not_pickle_but_fresh_pipe_does(files):
    dp = FileLister(str(files), "*.csv").open_files()
    assert list(pickle.loads(pickle.dumps(dp))) != []


def test_lambda_pipe_with_spawn_names_the_lambda():
    with pytest.warns(UserWarning, match="function is not supported by pickle"):
        dp = IterableWrapper(range(4)).map(lambda x: x).shuffle()
    dl = DataLoader(dp, batch_size=2, num_workers=1, multiprocessing_context="spawn")
    with pytest.raises(Exception, match=r"dataset\.datapipe\.fn = <function") as info:
        next(iter(dl))
    assert "'spawn'" in str(info.value)


def test_numpy_batch_sampler_indices_on_tensor_dataset():
    from ember.utils.data import TensorDataset
    ds = TensorDataset(ember.arange(10) * 3)
    import numpy as np
    (batch,), = [b for b in DataLoader(ds, batch_sampler=[np.array([4, 1])])]
    assert batch.tolist() == [12, 3]
