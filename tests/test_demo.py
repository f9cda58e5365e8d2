"""``ember demo``: the README's main job trains for real and compares the backends honestly."""
import numpy as np
import pytest

import ember
from ember import cli, demo

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def digits():
    return demo.load_digits(seed=0)


def test_digits_split_is_deterministic_and_disjoint(digits):
    x_train, y_train, x_test, y_test = digits
    assert x_train.shape[1:] == (1, 8, 8) and x_train.dtype == np.float32
    assert len(y_train) + len(y_test) == 1797 and set(np.unique(y_test)) == set(range(10))
    assert 0.0 <= x_train.min() and x_train.max() <= 1.0
    again = demo.load_digits(seed=0)
    assert np.array_equal(again[3], y_test)


def test_training_on_the_cpu_learns_the_digits(digits):
    r = demo.train_on("cpu", digits, epochs=3, batch_size=64, lr=0.05, seed=0)
    assert r.error is None and len(r.losses) == 3 * 23
    assert r.losses[-1] < r.losses[0] / 3
    assert r.test_accuracy > 0.85          # chance is 0.10


def test_agreement_accepts_rounding_and_rejects_a_different_run(digits):
    ref = demo.RunResult("cpu:0", losses=[2.3, 1.0, 0.5], predictions=np.arange(100) % 10)
    close = demo.RunResult("x:0", losses=[2.3 + 1e-6, 1.0, 0.5 - 1e-6],
                           predictions=ref.predictions.copy())
    off = demo.RunResult("x:0", losses=[2.3, 1.2, 0.5], predictions=ref.predictions.copy())
    wrong = demo.RunResult("x:0", losses=ref.losses, predictions=(ref.predictions + 1) % 10)
    assert demo.agreement(ref, close)[0]
    assert not demo.agreement(ref, off)[0]
    assert not demo.agreement(ref, wrong)[0]


def test_the_command_prints_the_table_and_exits_zero(capsys):
    assert cli.main(["demo", "--backends", "cpu", "--epochs", "1"]) == 0
    out = capsys.readouterr().out
    assert "test accuracy" in out and "cpu:0" in out


def test_an_unknown_backend_is_skipped_with_its_reason(capsys):
    assert cli.main(["demo", "--backends", "no_such_backend,cpu", "--epochs", "1"]) == 0
    assert "skipping no_such_backend" in capsys.readouterr().out


@pytest.mark.skipif(not ember.opencl.is_available(), reason="opencl unavailable")
def test_opencl_trains_like_the_cpu(digits):
    cpu = demo.train_on("cpu", digits, epochs=1, batch_size=64, lr=0.05, seed=0)
    ocl = demo.train_on("opencl:0", digits, epochs=1, batch_size=64, lr=0.05, seed=0)
    ok, detail = demo.agreement(cpu, ocl)
    assert ok, detail


def test_piped_demo_reports_progress_on_stderr(capsys, monkeypatch):
    # not a terminal: plain progress lines (here one per step), results on stdout
    monkeypatch.setenv("EMBER_PROGRESS_INTERVAL", "0")
    monkeypatch.delenv("EMBER_PROGRESS", raising=False)
    assert cli.main(["demo", "--backends", "cpu", "--epochs", "1"]) == 0
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.startswith("[demo] cpu:0: ")]
    assert len(lines) >= 23 and "loss" in lines[5]
    assert lines[-1].startswith("[demo] cpu:0: 23/23 (100%)") and lines[-1].endswith(" done")
    assert "[demo]" not in captured.out and "cpu:0" in captured.out
