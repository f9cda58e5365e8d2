"""Whether an OpenCL device's compiler can build ember's kernels, found before the first launch.

Drivers list devices their compiler cannot build for. Two ways of failing are known, both from
the PoCL 3.0 (LLVM 14) bundled with the pyopencl wheels on CPUs newer than its LLVM:

* it refuses every program (``error: unknown target CPU``, AMD Zen 5): a trivial build in this
  process shows it (``build_problem``);
* it builds trivial programs but LLVM fails while generating code for a 16-wide vector
  ``fma`` (AMD Zen 4), which ember's attention and reduction kernels use: it aborts the whole
  process (``LLVM ERROR: Cannot select ... fma``), spins for minutes and segfaults, or leaves
  the kernel out of the program and aborts at exit. None of that can be caught, so this check
  runs in a child process (``codegen_problem``) and its verdict is kept in ember's private
  cache, keyed by the driver and the CPU: only the first process on a machine pays for it
  (about a second; at most ``_SECONDS`` for a compiler that hangs).

A device with a problem is left out of the device list with the reason (``ember info``).
"""
from __future__ import annotations

import hashlib
import re
import signal
import subprocess
import sys

from ember.runtime import CacheDirectoryError, DiskCache

TRIVIAL_PROBE = "__kernel void ember_probe(__global int *x) { x[get_global_id(0)] += 1; }"

# the construct LLVM 14 cannot lower for AMD Zen 4; the child also runs it and checks the result
VECTOR_PROBE = """
__kernel void ember_vector_probe(__global float *x) {
  const float16 a = vload16(0, x);
  vstore16(fma(a, a, a), 0, x);
}
"""

_CHILD = r"""
import sys, warnings, numpy as np, pyopencl as cl
warnings.simplefilter("ignore")             # PoCL's chatter; only the verdict matters
platform, index = int(sys.argv[1]), int(sys.argv[2])
device = cl.get_platforms()[platform].get_devices()[index]
ctx = cl.Context([device])
prg = cl.Program(ctx, sys.argv[3]).build(cache_dir=False)
prg.get_info(cl.program_info.BINARIES)      # PoCL generates the machine code here
q = cl.CommandQueue(ctx)
x = np.arange(16, dtype=np.float32)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
prg.ember_vector_probe(q, (1,), None, buf)
out = np.empty_like(x)
cl.enqueue_copy(q, out, buf)
if not np.array_equal(out, x * x + x):
    sys.exit("the vector probe kernel computed wrong values")
"""

_VERDICTS = DiskCache("opencl")
# a working compiler builds the probe in about a second, cold; the wheel's PoCL on Zen 4 has
# been seen to spin for 100 s before it segfaults
_SECONDS = 30


def problem(cl, platform_index, device_index, device):
    """None when ``device`` can build ember's kernels, else why not: the trivial build first
    (cheap, in this process), then the vector check (a child process, once per machine)."""
    return build_problem(cl, device) or codegen_problem(platform_index, device_index, device)


def build_problem(cl, device):
    """None when ``device`` compiles a trivial kernel, else the first line of the build log."""
    try:
        cl.Program(cl.Context([device]), TRIVIAL_PROBE).build(cache_dir=False)
    except Exception as e:  # RuntimeError(BUILD_PROGRAM_FAILURE), LogicError, driver crashes
        lines = [ln.strip() for ln in str(e).splitlines()]
        errors = [ln for ln in lines if ln.startswith("error:")]
        return (errors or [ln for ln in lines if ln] or [type(e).__name__])[0]
    return None


def _cpu_signature():
    """The host CPU's model and flags: a driver that works on one CPU may crash on another."""
    try:
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n", 1)[0]
    except OSError:
        import platform
        return platform.processor() or platform.machine()
    keep = ("vendor_id", "cpu family", "model", "model name", "flags")
    return "\n".join(ln for ln in first.splitlines() if ln.split(":")[0].strip() in keep)


def _verdict_key(device):
    from .binaries import identity
    h = hashlib.sha256("\0".join([identity(device), _cpu_signature(), VECTOR_PROBE,
                                  _CHILD]).encode())
    return f"compiler_check_{h.hexdigest()[:32]}"


def _run_child(platform_index, device_index):
    """None when the child built and ran the vector probe, else why it did not."""
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(platform_index),
                               str(device_index), VECTOR_PROBE],
                              capture_output=True, text=True, timeout=_SECONDS)
    except subprocess.TimeoutExpired:
        return f"building a float16 vector kernel did not finish in {_SECONDS} s"
    except OSError as e:
        return f"the compiler check could not start a Python process ({e})"
    if done.returncode == 0:
        return None
    lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
    # what the compiler said, else the Python error (e.g. the kernel missing from a program
    # whose code generation failed), else a plain exit message
    said = ([ln for ln in lines if "LLVM ERROR" in ln or ln.startswith("error:")]
            or [ln for ln in lines if re.match(r"[\w.]+(Error|Exception): ", ln)][-1:]
            or ([] if done.returncode < 0 else lines[-1:]))
    how = (f"the compiler crashed ({signal.Signals(-done.returncode).name})"
           if done.returncode < 0 else "the compiler failed")
    return f"{how} building a float16 vector kernel" + "".join(f": {s}" for s in said[:1])


def codegen_problem(platform_index, device_index, device):
    """None when ``device`` generates and runs a 16-wide vector kernel, else why not; checked
    in a child process once per driver and CPU, then read from ember's private cache (a timeout
    is kept too: a compiler that needs half a minute for three lines is of no use; removing the
    ``compiler_check_*`` entries of the ``opencl`` cache checks again)."""
    try:
        key = _verdict_key(device)
        cached = _VERDICTS.read(key)
    except (CacheDirectoryError, OSError, ValueError):
        key, cached = None, None
    if cached is not None:
        return cached.decode() or None
    problem = _run_child(platform_index, device_index)
    if key is not None:
        try:
            _VERDICTS.write(key, (problem or "").encode())
        except (CacheDirectoryError, OSError):
            pass
    return problem
