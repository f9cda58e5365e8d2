"""No hangs: real jobs (tests/dist_workers/fault_worker.py) in which one rank gets stuck, is
killed, raises, or skips a barrier. The other ranks must fail within the timeout with an error
that names the op, the group, the missing rank and the time waited, and the job must exit
non-zero."""
import re

import pytest

from helpers_dist import requires_mpi, run_job

pytestmark = [pytest.mark.slow, requires_mpi]


def test_a_stuck_rank_is_named_by_the_others_within_the_timeout():
    rc, out, err, seconds = run_job(3, "fault_worker.py", "stuck", 2, 3, timeout=120)
    assert rc != 0
    assert seconds < 40, f"the job took {seconds:.1f} s (timeout 3 s)"
    assert "rank 2: stuck at step 5" in out
    reports = re.findall(r"DistBackendError: ember\.distributed: all_reduce timed out on rank "
                         r"(\d) after (\d+\.\d+) s \(timeout 3 s\): collective #\d+ of process "
                         r"group 'default_pg' \(backend mpi, 3 ranks: 0-2\)", err)
    assert reports, err
    assert {int(r) for r, _ in reports} <= {0, 1}
    assert all(3.0 <= float(s) < 10 for _, s in reports)
    assert "Missing ranks (never entered it): [2]." in err
    assert re.search(r"rank 2: (finished|still in) collective #\d+ \(all_reduce\); last "
                     r"heartbeat", err)


def test_a_killed_rank_ends_the_job_fast():
    # Hydra (the mpich wheel's mpiexec) kills the other ranks when one dies from a signal
    rc, out, err, seconds = run_job(2, "fault_worker.py", "kill", 1, 60, timeout=120)
    assert rc != 0
    assert "rank 1: kill at step 5" in out
    assert seconds < 30, f"the job took {seconds:.1f} s (timeout 60 s)"


def test_a_dead_rank_is_detected_by_the_timeout_without_mpiexec_cleanup():
    # the same death with Hydra's cleanup off: ember's own timeout must end the job, and the
    # status board (shared memory the dead process left behind) still says where it was.
    # Hydra sometimes kills the job anyway (every rank exits with signal 9); either way it
    # must end fast and non-zero.
    rc, out, err, seconds = run_job(3, "fault_worker.py", "kill", 1, 3, timeout=120,
                                    launcher_args=["--mpi-arg=-disable-auto-cleanup"])
    assert rc != 0
    assert seconds < 40, f"the job took {seconds:.1f} s (timeout 3 s)"
    if "timed out" not in err:
        assert "Killed (signal 9)" in out, out + err
        return
    assert re.search(r"all_reduce timed out on rank [02] after", err)
    assert "Missing ranks (never entered it): [1]." in err or \
        "No answer from ranks [1]" in err, err


def test_an_exception_on_one_rank_aborts_the_job():
    rc, out, err, seconds = run_job(2, "fault_worker.py", "raise", 1, 60, timeout=120)
    assert rc != 0
    assert "[ember-run] rank 1 failed" in err and "RuntimeError: injected failure" in err
    assert seconds < 30, f"the job took {seconds:.1f} s (timeout 60 s)"


def test_monitored_barrier_names_the_missing_rank():
    rc, out, err, seconds = run_job(2, "fault_worker.py", "monitored", 2, timeout=120)
    assert rc != 0
    assert "[Rank 0]: Ranks 1 failed to pass monitoredBarrier in 2000 ms" in err
    assert seconds < 30
