"""PyTorch's own test database as an oracle for ember.

PyTorch ships, inside its wheel, the inputs its test suite runs every op, module and optimizer on:
``common_methods_invocations.op_db`` (OpInfos with ``sample_inputs``), ``common_modules.module_db``
(ModuleInfos) and ``common_optimizers.optim_db`` (OptimizerInfos). This package runs those inputs
through torch and through ember and compares the results:

* ``convert``     torch samples -> ember (same storage layout: strides and offset), the torch
                  callables an OpInfo names -> ember's callables, results back to torch;
* ``compare``     equality at torch's per-dtype tolerances (dtypes and shapes equal too);
* ``exclusions``  the ONE table of what is not compared, or compared differently, and why;
* ``opinfo``      forward, method, in-place and float64 backward checks of every sample;
* ``modules``     ModuleInfos: same constructor arguments and weights, forward + backward,
                  train and eval;
* ``optimizers``  OptimizerInfos: same parameters and gradients over several steps;
* ``tally``       pass counts per area, shared by the tests and ``bench/torch_oracle_report.py``.

torch is never imported by ember; only this package (under tests/) needs it.
"""
