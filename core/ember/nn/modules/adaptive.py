"""``AdaptiveLogSoftmaxWithLoss`` (Grave et al.'s efficient softmax approximation): a head over
the frequent classes plus one entry per cluster, and one low-rank tail per cluster of rarer
classes. Every tail is evaluated for every row and the right one picked by mask (no host
round trip per cluster); values are PyTorch's."""
from __future__ import annotations

from collections import namedtuple

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module
from ...ops.shape import cat

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        kw = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.shape}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.shape}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and target.device.type != "meta":
            lo, hi = int(target.min().item()), int(target.max().item())
            if lo < 0 or hi > self.n_classes - 1:
                raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                                   f"values in range [{lo}, {hi}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        cluster_of = target.new_zeros(target.shape)
        for c in self.cutoffs[:-1]:
            cluster_of = cluster_of + target.ge(c).to(target.dtype)   # 0: the shortlist
        head_index = target.where(cluster_of.eq(0), cluster_of + (self.shortlist_size - 1))
        output = head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        for i in range(self.n_clusters):
            low, size = self.cutoffs[i], self.cutoffs[i + 1] - self.cutoffs[i]
            inside = cluster_of.eq(i + 1)
            relative = (target - low).clamp(0, size - 1)
            logprob = F.log_softmax(self.tail[i](input), dim=1)
            local = logprob.gather(1, relative.unsqueeze(1)).squeeze(1)
            output = output + local.where(inside, local.new_zeros(()))
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob +
                         head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input):
        """Log-probabilities of every class, (N, n_classes)."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most probable class of each row."""
        return self.log_prob(input).argmax(dim=1)
