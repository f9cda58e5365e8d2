"""The public PyTorch programs vendored for the benchmark (bench/real_programs/, unmodified:
``import torch`` resolves to ember while each one loads) run their training steps on ember.

Issue #30 began from such programs failing on behaviour (an in-place ReLU after BatchNorm,
keyword aliases, import paths, seeding calls); this keeps every vendored program running.
Two steps each on the CPU, OpenCL under ``-m slow``. The benchmark times them
(bench/bench_programs.py); here only that they run, leave the parameters finite and change
them (the step trained)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

import ember

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import bench_programs  # noqa: E402
from real_programs.harness import PROGRAMS  # noqa: E402


def _parameters():
    """Every ember Parameter alive now (the programs keep their models in closures)."""
    import gc
    return [o for o in gc.get_objects() if isinstance(o, ember.nn.Parameter)]


def _snapshot(params):
    return {id(p): p.detach().cpu().clone() for p in params}


@pytest.mark.parametrize("device", ["cpu", pytest.param("opencl", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_trains_on_ember(name, device):
    prog = PROGRAMS[name]
    if device != "cpu":
        if prog.cpu_only:
            pytest.skip(f"{name} builds its inputs with torch.from_numpy and runs on the CPU only")
        if not getattr(ember, device).is_available():
            pytest.skip(f"{device} unavailable")
    before_ids = {id(p) for p in _parameters()}
    run = bench_programs.contender(prog, ember, device)
    params = [p for p in _parameters() if id(p) not in before_ids]
    assert params, f"{name}: no parameters were built"
    start = _snapshot(params)
    run()
    run()
    changed = 0
    for p in params:
        now = p.detach().cpu()
        assert math.isfinite(float(now.abs().sum())), f"{name}: a parameter is not finite"
        changed += not ember.equal(now, start[id(p)])
    assert changed, f"{name}: two training steps changed no parameter"
