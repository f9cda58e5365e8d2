"""Every collective on real processes (tests/dist_workers/collectives_worker.py): each rank
checks the results against numpy for every reduce op and dtype, the list and tensor forms,
point-to-point (including receive-from-any), object collectives and sub-groups."""
import re

import pytest

import ember
from helpers_dist import requires_mpi, run_job

pytestmark = [pytest.mark.slow, requires_mpi]


def _run(world, device):
    rc, out, err, _ = run_job(world, "collectives_worker.py", device, timeout=300)
    assert rc == 0, out + err
    counts = re.findall(r"rank (\d+): OK (\d+) checks", out)
    assert sorted(int(r) for r, _ in counts) == list(range(world)), out
    assert all(int(n) > 40 for _, n in counts)


def test_collectives_on_three_ranks():
    _run(3, "cpu")     # not a power of two: MPI takes its general algorithms


def test_collectives_on_opencl_tensors():
    if not ember.opencl.is_available():
        pytest.skip("the OpenCL backend is not available on this machine")
    _run(2, "opencl")
