#!/usr/bin/env bash
# The first run of ember's CUDA backend on a GPU machine, in under 8 minutes.
#
#   bench/gpu_check.sh [RESULTS_DIR]        (default: gpu-check-<date> beside bench/)
#
# Made for a fresh machine with one NVIDIA GPU, Python 3.12 and, installed already: cupy
# (cupy-cuda13x 14.x or cupy-cuda12x), torch with CUDA, numpy, scipy, pluggy, safetensors, rich,
# ml-dtypes, mpi4py and NCCL -- and no network. Stages, each under its own time limit (a hang
# costs only its stage) with its output in RESULTS_DIR/<stage>.log:
#
#   env          the GPU (nvidia-smi), Python, the installed packages
#   install      pip install --no-deps --no-build-isolation -e .  (by hand without setuptools)
#   probe        ember sees the GPU, runs a first kernel, NVRTC builds ember's CUDA C
#   tests        tests/test_cuda_gpu.py (pytest if installed, else its own runner)    } at once:
#   conformance  ember-conformance --backend cuda, in shards (cupy compiles its      } the CPU
#                kernels on first use: shards compile in parallel; results saved      } compiles,
#                as they come, so a shard cut by its limit keeps what it finished)
#   demo         ember demo on cpu and cuda                                           } the GPU runs
#   bench        bench/bench_cuda.py beside torch: matmul TFLOP/s (fp32/tf32/fp16/bf16), per-op
#                latency, a small GPT training step, an NCCL all-reduce on one GPU
#   profile      bench/gpu_profile.py: where the host time of an op and of the GPT step goes,
#                the calls at which the host waits for a busy GPU, the launch queue's depth
#
# RESULTS_DIR/summary.txt has one line per stage and the results. Without a GPU the check stops
# after the probe with "no GPU: <reason>" and exit status 3. Environment: PYTHON (default
# python3), GPU_CHECK_SHARDS (conformance shards, default: the cores less 4, 2 to 12),
# EMBER_GPU_CHECK_INSTALL=0 (skip the install: ember is importable already).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/gpu-check-$(date +%Y%m%d-%H%M%S)}"
PY="${PYTHON:-python3}"
CORES=$(nproc 2>/dev/null || echo 8)
SHARDS="${GPU_CHECK_SHARDS:-$(( CORES - 4 < 2 ? 2 : (CORES - 4 > 12 ? 12 : CORES - 4) ))}"
BUDGET=470                                   # seconds, leaving margin under 8 minutes
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
START=$(date +%s)
: > "$SUMMARY"
cd "$ROOT"
export EMBER_GPU_CHECK=1 PYTHONUNBUFFERED=1

say() { echo "$*" | tee -a "$SUMMARY"; }

left() { echo $(( BUDGET - ($(date +%s) - START) )); }

# stage NAME SECONDS CMD...: run CMD under a time limit (never past the budget), log to NAME.log
stage() {
    local name=$1 limit=$2; shift 2
    local rest; rest=$(left)
    (( limit > rest )) && limit=$rest
    if (( limit < 5 )); then
        say "$(printf '%-16s %s' "$name" "skipped: out of time")"
        return 124
    fi
    local t0; t0=$(date +%s)
    timeout --kill-after=5 "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    local verdict="ok"
    if (( rc == 124 || rc == 137 )); then verdict="TIMED OUT after ${limit} s"
    elif (( rc == 3 )); then verdict="no GPU"
    elif (( rc != 0 )); then verdict="failed (exit $rc)"; fi
    say "$(printf '%-16s %-26s %4d s   %s.log' "$name" "$verdict" $(( $(date +%s) - t0 )) "$name")"
    return $rc
}

say "ember GPU check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) -> $OUT"

stage env 15 bash -c "nvidia-smi || echo 'nvidia-smi: not found'; $PY -VV; \
    $PY -m pip list 2>/dev/null | grep -i -E 'cupy|torch|numpy|scipy|nccl|nvrtc|ml.dtypes|mpi4py|pluggy|rich|safetensors|setuptools|pytest' ; \
    env | grep -E '^(CUDA|NCCL|LD_LIBRARY|PATH)' | sort"

if [ "${EMBER_GPU_CHECK_INSTALL:-1}" != 0 ]; then
    stage install 60 "$PY" bench/gpu_check_tools.py install "$ROOT" \
        || say "install failed: the later stages use whatever ember is importable"
fi

stage probe 60 "$PY" bench/gpu_check_tools.py probe
rc=$?
if (( rc == 3 )); then
    say "$(grep -m1 '^no GPU' "$OUT/probe.log")"
    say "stopped: no GPU (exit 3)"
    exit 3
elif (( rc != 0 )); then
    say "the probe failed: see probe.log; running the rest anyway"
fi

# -- at once: tests, conformance shards, demo ------------------------------------------------------
if "$PY" -c "import pytest" 2>/dev/null; then
    TESTS=("$PY" -m pytest tests/test_cuda_gpu.py -q -rfEs -p no:cacheprovider
           --junitxml="$OUT/tests.xml" -o addopts="")
else
    TESTS=("$PY" tests/test_cuda_gpu.py --out "$OUT/tests.json")
fi
stage tests 210 "${TESTS[@]}" &
for (( k = 0; k < SHARDS; k++ )); do
    stage "conformance-$k" 210 "$PY" bench/gpu_check_tools.py conformance cuda "$k" "$SHARDS" \
        "$OUT/conformance-$k.jsonl" &
done
stage demo 120 "$PY" -m ember.cli demo --backends cpu,cuda --epochs 3 &
wait

# -- alone on the GPU: the benchmarks -----------------------------------------------------------------
stage bench 150 "$PY" bench/bench_cuda.py --out "$OUT/bench.json"
stage profile 90 "$PY" bench/gpu_profile.py

"$PY" bench/gpu_check_tools.py summarize "$OUT" > /dev/null 2>&1 \
    || say "summary failed: see the logs"
say "total $(( $(date +%s) - START )) s"
