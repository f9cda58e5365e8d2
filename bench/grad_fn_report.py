"""Which backward node each op's output gets, against PyTorch's, over PyTorch's own test
database (op_db, float64 samples that require grad; needs torch installed).

    python bench/grad_fn_report.py               # the count, then one line per differing name pair
    python bench/grad_fn_report.py --samples 1   # faster: the first sample of each OpInfo

A program that reads ``out.grad_fn`` (its name, or ``next_functions`` to walk the graph) sees
these. Names differ where ember composes an op that torch records as one node (softshrink as a
where), where torch numbers an overload (``SumBackward1`` for ``sum(dim)``) and ember's node is
named by the op alone, and where an output has no node at all (``None``).
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


def scan(samples_per_op):
    import torch
    import ember
    from torch_oracle.convert import ember_callable
    from torch_oracle.opinfo import _ember_args, _leaves, _samples, key, op_db

    def first_node(out, lib):
        tensors = [o for o in _leaves(out) if isinstance(o, lib.Tensor)]
        return tensors[0].grad_fn if tensors else None

    compared, differing = 0, collections.Counter()
    for op in op_db():
        if not op.supports_autograd or \
                torch.float64 not in op.supported_backward_dtypes("cpu"):
            continue
        try:
            samples = _samples(op, torch.float64, True, limit=samples_per_op)
        except Exception:   # an OpInfo whose sample generator needs what this build lacks
            continue
        for s in samples:
            try:
                want = first_node(op.op(s.input, *s.args, **s.kwargs), torch)
                if want is None:
                    continue
                inp, args, kwargs = _ember_args(s, "cpu")
                got = first_node(ember_callable(op.op, op.name)(inp, *args, **kwargs), ember)
            except Exception:   # value failures are torch_oracle_report.py's to count
                continue
            compared += 1
            got_name = got.name() if got is not None else None
            if type(want).__name__ != got_name:
                differing[(key(op), type(want).__name__, str(got_name))] += 1
    return compared, differing


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--samples", type=int, default=3, help="samples per OpInfo (default 3)")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    compared, differing = scan(args.samples)
    ops = {k[0] for k in differing}
    print(f"{compared} samples compared; {sum(differing.values())} name a different node than "
          f"torch's, over {len(ops)} OpInfos")
    for (name, torch_node, ember_node), n in sorted(differing.items()):
        print(f"  {name:40s} torch {torch_node:34s} ember {ember_node}  ({n})")


if __name__ == "__main__":
    main()
