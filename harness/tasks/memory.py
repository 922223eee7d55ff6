"""Memory like a benchmark: the peak bytes the tensors of one call allocate, counted op by op, so that a memory
claim measures the call itself (weights and inputs made before it not counted) on any device, without the
allocator's caching or the process's other memory.

A module of its own, as :mod:`harness.tasks.timing` is: a cell's key includes a fingerprint of the
``harness.tasks`` modules its task imports, so only the tasks that count memory with it depend on this one. (The
np.regression task keeps a private copy until its next re-run, which moving it would force.)
"""
from __future__ import annotations


def peak_activation_bytes(fn) -> int:
    """The peak number of bytes held by tensors that ``fn()`` allocates, op by op (weights and inputs not counted)."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class LiveBytes(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.holders: dict[int, list] = {}  # storage pointer → [live tensors, bytes]
            self.live = self.peak = 0
            self.known: set[int] = set()

        def _released(self, pointer: int) -> None:
            holder = self.holders.get(pointer)
            if holder is None:
                return
            holder[0] -= 1
            if holder[0] == 0:
                self.live -= holder[1]
                del self.holders[pointer]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            for t in tree_leaves((args, kwargs or {})):  # storages made before fn: weights and inputs
                if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.holders:
                    self.known.add(t.untyped_storage().data_ptr())
            out = func(*args, **(kwargs or {}))
            for t in tree_leaves(out):
                if not isinstance(t, torch.Tensor):
                    continue
                storage = t.untyped_storage()
                pointer = storage.data_ptr()
                if pointer in self.known and pointer not in self.holders:
                    continue
                holder = self.holders.get(pointer)
                if holder is None:
                    holder = self.holders[pointer] = [0, storage.nbytes()]
                    self.live += holder[1]
                    self.peak = max(self.peak, self.live)
                holder[0] += 1
                weakref.finalize(t, self._released, pointer)
            return out

    mode = LiveBytes()
    with torch.no_grad(), mode:
        fn()
    return mode.peak
