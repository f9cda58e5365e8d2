"""``Join``: training with uneven inputs across ranks (``torch.distributed.algorithms.join``).

Inside ``with Join([ddp_model, ...]):`` a rank that runs out of data leaves the loop and, in
``__exit__``, *shadows* the collectives the other ranks still issue: each round it joins their
"how many ranks are still training" all-reduce (contributing 0), then runs every joinable's
``main_hook`` (for DDP: the bucket all-reduces of one backward pass, on zeros). When the count
reaches 0 every rank runs the ``post_hook``s (DDP: the last rank to join broadcasts the final
model) and leaves. No rank waits forever and none raises at the end of the epoch.
"""
from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import NamedTuple

from ...ops.factories import ones, zeros
from ..collectives import all_reduce
from ..process_group import resolve_group
from ..._warn import user_stacklevel

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """What a joinable does while it has joined: ``main_hook()`` once per round in which other
    ranks still train, ``post_hook(is_last_joiner)`` once all have joined."""

    def main_hook(self) -> None:
        pass

    def post_hook(self, is_last_joiner: bool) -> None:
        pass


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False,
                           is_first_joinable=False)


class Joinable(ABC):
    """A class that can take part in ``Join`` (DDP is one)."""

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        ...

    @property
    @abstractmethod
    def join_device(self):
        ...

    @property
    @abstractmethod
    def join_process_group(self):
        ...


class Join:
    """Context manager for uneven inputs; see the module docstring."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self) -> None:
        for i, joinable in enumerate(self._joinables):
            joinable._join_config = _JoinConfig(
                enable=self._enable, throw_on_early_termination=self._throw_on_early_termination,
                is_first_joinable=(i == 0))

    def _extract_dist_info(self) -> None:
        groups = {id(j.join_process_group): j.join_process_group for j in self._joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        devices = {str(j.join_device) for j in self._joinables}
        if len(devices) > 1:
            raise ValueError(f"Using join context manager with joinables on several devices: "
                             f"{sorted(devices)}")
        self._process_group = resolve_group(next(iter(groups.values())), "Join")
        self._rank = self._process_group.rank()
        self._device = self._joinables[0].join_device

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, tb):
        if not self._enable or exc_type:
            return None  # an exception on this rank propagates as it is
        all_joined = False
        is_last_joiner = True
        rounds = 0
        while not all_joined:
            if rounds == 1000:
                warnings.warn(f"Detected uneven input skew of greater than 1000. This means "
                              f"that rank {self._rank} has at least 1000 fewer inputs than "
                              f"other currently-active ranks. This level of skew could lead to "
                              f"performance degradation during training.",
                              stacklevel=user_stacklevel())
            if self._get_num_nonjoined_procs() == 0:
                all_joined = True
            else:
                if self._throw_on_early_termination:
                    self._notify_procs_to_terminate()
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                rounds += 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)
        self._restore_configs()
        return None

    def _restore_configs(self) -> None:
        for joinable in self._joinables:
            joinable._join_config = _JoinConfig.construct_disabled_join_config()

    def _get_num_nonjoined_procs(self) -> int:
        count = zeros(1, device=self._device)
        all_reduce(count, group=self._process_group)
        return int(count.item())

    def _notify_procs_to_terminate(self):
        all_reduce(ones(1, device=self._device), group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable):
        """Called by a joinable at the start of each iteration on ranks still training: the
        all-reduce the joined ranks' loop matches. Returns its Work (None when join is off)."""
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        device = joinable.join_device
        group = joinable.join_process_group
        work = all_reduce(ones(1, device=device), group=group, async_op=True)
        if config.throw_on_early_termination:
            flag = zeros(1, device=device)
            all_reduce(flag, group=group)
            if flag.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing "
                                   "across all ranks.")
        return work
