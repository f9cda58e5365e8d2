"""issue #36 on real processes: point-to-point messages never cross collectives (each has its
own matching space), and ``ember-run`` fails a job in which a rank left early, naming it,
whatever its exit status."""
import re

import pytest

from helpers_dist import requires_mpi, run_job

# ~12 s per job: the two scenarios run by default, the variants with `-m slow`
pytestmark = [requires_mpi]


def test_any_source_receives_never_match_collectives():
    rc, out, err, _ = run_job(4, "p2p_worker.py", timeout=300)
    assert rc == 0, out + err
    assert sorted(re.findall(r"rank (\d): OK", out)) == ["0", "1", "2", "3"], out + err


@pytest.mark.parametrize("code,when", [(0, "end"),
                                       pytest.param(0, "mid", marks=pytest.mark.slow),
                                       pytest.param(3, "mid", marks=pytest.mark.slow)])
def test_a_rank_that_exits_early_fails_the_job_and_is_named(code, when):
    rc, out, err, _ = run_job(4, "early_exit_worker.py", 2, code, when, timeout=300)
    assert rc != 0, out + err
    line = next((ln for ln in err.splitlines() if ln.startswith("ember-run: the job failed")),
                None)
    assert line is not None, err
    named = re.search(r"ranks? ([\d, ]+) did not finish", line).group(1)
    assert "2" in named.split(", "), line
    if when == "end":  # the others finished properly: only the early one is named
        assert named == "2", line


@pytest.mark.slow
def test_a_clean_job_exits_zero(tmp_path):
    script = tmp_path / "ok.py"
    script.write_text("import ember.distributed as dist\n"
                      "dist.init_process_group('mpi')\n"
                      "dist.destroy_process_group()\n")
    rc, out, err, _ = run_job(2, str(script), timeout=120)
    assert rc == 0 and "did not finish" not in err, err
