"""The CPU backend keeps freed host memory for reuse (backends/cpu/ember_cpu/host_memory.py):
a training step's large temporaries must not be page-faulted in afresh every step. Page faults
are counted (deterministic), not timed."""
import subprocess
import sys

import pytest

STEPS = """
import resource, ember
W1 = ember.randn(784, 256, requires_grad=True); W2 = ember.randn(256, 10, requires_grad=True)
X = ember.randn(64, 784)
def step():
    ((X @ W1).relu() @ W2).sum().backward()
for _ in range(5):
    step()
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / 20)
"""


def _faults_per_step(env_extra):
    import os
    env = {k: v for k, v in os.environ.items()
           if k not in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", STEPS], capture_output=True, text=True,
                         env=env, check=True)
    return float(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc thresholds")
def test_steady_training_steps_reuse_host_memory():
    # an 800 KB gradient per step is ~200 pages: reused memory faults none of them
    assert _faults_per_step({}) < 20


def test_the_tuning_can_be_turned_off_and_respects_user_settings(monkeypatch):
    from ember_cpu import host_memory
    monkeypatch.setattr(host_memory, "_done", False)
    monkeypatch.setenv("EMBER_CPU_KEEP_FREED_MEMORY", "0")
    assert host_memory.keep_freed_memory() is False
    monkeypatch.delenv("EMBER_CPU_KEEP_FREED_MEMORY")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert host_memory.keep_freed_memory() is False
