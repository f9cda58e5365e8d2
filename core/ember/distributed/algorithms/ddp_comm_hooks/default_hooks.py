"""The default DDP communication hooks: all-reduce, and all-reduce in float16 / bfloat16 to halve
the bytes sent (``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``).

A hook is ``hook(state, bucket) -> Future``: ``state`` is the process group (None: the default
group), ``bucket`` a ``GradBucket`` whose ``buffer()`` holds this rank's gradients of the bucket
(flat, neither reduced nor divided yet); the future's value is the averaged flat tensor. Hooks
run on the thread that runs backward; their ``then`` callbacks run on whichever thread completes
the communication (usually the communication thread), so a callback that starts another
collective must start it in the same order on every rank.
"""
from __future__ import annotations

from .... import _dtype
from ...collectives import all_reduce
from ...process_group import resolve_group

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook",
           "fp16_compress_wrapper", "bf16_compress_wrapper"]


def _group(process_group):
    return resolve_group(process_group, "ddp comm hook")


def _allreduce_fut(process_group, tensor):
    """Average ``tensor`` over the group; a future of the averaged tensor."""
    group = _group(process_group)
    tensor.div_(group.size())
    fut = all_reduce(tensor, group=group, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


def allreduce_hook(process_group, bucket):
    """What DDP does without a hook: average the bucket with one all-reduce."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    group = _group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size())
    fut = all_reduce(compressed, group=group, async_op=True).get_future()

    def decompress(f):
        out = bucket.buffer()
        out.copy_(f.value()[0])
        return out
    return fut.then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Cast the bucket to float16, average it, cast back: half the traffic."""
    return _compress_hook(_dtype.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """Like ``fp16_compress_hook`` in bfloat16 (float32's range, 8 bits of mantissa)."""
    return _compress_hook(_dtype.bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    def wrapped(state, bucket):
        buffer = bucket.buffer()
        bucket.set_buffer(buffer.to(dtype))
        fut = hook(state, bucket)

        def decompress(f):
            buffer.copy_(f.value())
            return buffer
        return fut.then(decompress)
    return wrapped


def fp16_compress_wrapper(hook):
    """Run ``hook`` on a float16 copy of the bucket, casting the result back."""
    return _compress_wrapper(_dtype.float16, hook)


def bf16_compress_wrapper(hook):
    return _compress_wrapper(_dtype.bfloat16, hook)
