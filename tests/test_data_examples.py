"""Published examples run with only the import changed: torch's DataPipe README (the
``MapperIterDataPipe`` registered as ``map``, ``FileOpener([...]).map(fn=decoder)``, the
``parse_csv_files`` pipeline), torch's IterableDataset worker-splitting example, and
``examples/text_classification.py``. Each runs in a fresh interpreter: the README re-registers
``map``, which would change the pipes of the rest of the test session."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

README_EXAMPLES = '''
import csv
import ember.utils.data.datapipes as dp                       # was: torch.utils.data.datapipes
from ember.utils.data import IterDataPipe, functional_datapipe  # was: torch.utils.data


@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe):
    def __init__(self, dp, fn):
        super().__init__()
        self.dp = dp
        self.fn = fn

    def __iter__(self):
        for d in self.dp:
            yield self.fn(d)

    def __len__(self):
        return len(self.dp)


def decoder(item):  # the README leaves `decoder` to the reader
    path, stream = item
    return path, stream.read()


datapipes1 = dp.iter.FileOpener(['a.file', 'b.file']).map(fn=decoder).shuffle().batch(2)

datapipes2 = dp.iter.FileOpener(['a.file', 'b.file'])
datapipes2 = dp.iter.Mapper(datapipes2)
datapipes2 = dp.iter.Shuffler(datapipes2)
datapipes2 = dp.iter.Batcher(datapipes2, 2)

assert type(datapipes1.datapipe.datapipe) is MapperIterDataPipe
batch, = list(datapipes1)
assert sorted(batch) == [("a.file", "alpha\\n"), ("b.file", "beta\\n")]
batch, = list(datapipes2)
assert sorted(p for p, _ in batch) == ["a.file", "b.file"]


@functional_datapipe("parse_csv_files")
class CSVParserIterDataPipe(IterDataPipe):
    def __init__(self, dp, **fmtparams):
        self.dp = dp
        self.fmtparams = fmtparams

    def __iter__(self):
        for filename, stream in self.dp:
            reader = csv.reader(stream, **self.fmtparams)
            for row in reader:
                yield filename, row


FOLDER = 'csvs'
datapipe = dp.iter.FileLister([FOLDER]).filter(fn=lambda filename: filename.endswith('.csv'))
datapipe = dp.iter.FileOpener(datapipe, mode='rt')
datapipe = datapipe.parse_csv_files(delimiter=' ')

rows = []
for d in datapipe: # Start loading data
    rows.append(d)
assert rows == [("csvs/x.csv", ["1", "2"]), ("csvs/x.csv", ["3", "4"]), ("csvs/y.csv", ["5"])]
print("README OK")
'''

TORCHDATA_STYLE = '''
from ember.data.datapipes.iter import FileLister, FileOpener, IterableWrapper  # was: torchdata

datapipe = FileLister(".", masks="*.csv", recursive=True)
datapipe = FileOpener(datapipe, mode="rt")
datapipe = datapipe.parse_csv(delimiter=" ").map(lambda row: [int(v) for v in row])
datapipe = datapipe.shuffle().batch(2)
rows = sorted(r for b in datapipe for r in b)
assert rows == [[1, 2], [3, 4], [5]], rows
print("torchdata style OK")
'''

TORCH_DOCS_ITERABLE = '''
import math
import ember as torch  # was: import torch


class MyIterableDataset(torch.utils.data.IterableDataset):
    def __init__(self, start, end):
        super(MyIterableDataset).__init__()
        assert end > start, "this example code only works with end >= start"
        self.start = start
        self.end = end

    def __iter__(self):
        worker_info = torch.utils.data.get_worker_info()
        if worker_info is None:  # single-process data loading, return the full iterator
            iter_start = self.start
            iter_end = self.end
        else:  # in a worker process
            # split workload
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            worker_id = worker_info.id
            iter_start = self.start + worker_id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        return iter(range(iter_start, iter_end))


if __name__ == "__main__":
    ds = MyIterableDataset(start=3, end=7)
    single = list(torch.utils.data.DataLoader(ds, num_workers=0))
    multi = list(torch.utils.data.DataLoader(ds, num_workers=2))
    print(single)
    print(multi)
    assert [t.tolist() for t in single] == [[3], [4], [5], [6]]
    assert [t.tolist() for t in multi] == [[3], [5], [4], [6]]
'''


def _run(code, cwd, *args):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture
def readme_dir(tmp_path):
    (tmp_path / "a.file").write_text("alpha\n")
    (tmp_path / "b.file").write_text("beta\n")
    csvs = tmp_path / "csvs"
    csvs.mkdir()
    (csvs / "x.csv").write_text("1 2\n3 4\n")
    (csvs / "y.csv").write_text("5\n")
    (csvs / "z.txt").write_text("not csv\n")
    return tmp_path


@pytest.mark.parametrize("code", [README_EXAMPLES, TORCHDATA_STYLE, TORCH_DOCS_ITERABLE],
                         ids=["torch-datapipes-readme", "torchdata-style", "torch-docs-iterable"])
def test_published_examples_run(code, readme_dir):
    result = _run(textwrap.dedent(code), readme_dir)
    assert result.returncode == 0, result.stdout + result.stderr


def test_text_classification_example_trains():
    script = os.path.join(ROOT, "examples", "text_classification.py")
    result = subprocess.run([sys.executable, script, "--epochs", "4", "--workers", "2"],
                            capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert result.returncode == 0, result.stdout + result.stderr
    acc = float(result.stdout.strip().splitlines()[-1].split()[-1])
    assert acc > 0.8


def test_corpus_generator_is_deterministic(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "examples", "data"))
    try:
        import make_corpus
    finally:
        sys.path.pop(0)
    out = tmp_path / "reviews.tsv"
    make_corpus.write_corpus(str(out))
    with open(os.path.join(ROOT, "examples", "data", "reviews.tsv"), encoding="utf-8") as f:
        assert out.read_text(encoding="utf-8") == f.read()
    assert len(out.read_text().splitlines()) == 401
