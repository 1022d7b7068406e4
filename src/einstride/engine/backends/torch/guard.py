"""The memory guard on torch: the bytes one allocation of a plan may take.

``memory_limit=`` when given; on a CUDA device the memory it has free (what the driver
reports free, plus what torch's caching allocator holds unused), asked before anything is
allocated; elsewhere einstride's limit (``einstride.memory``: the machine's memory unless
set), as on the NumPy path.

>>> import torch
>>> limit_for(torch.device("cpu"), 1024)
1024
>>> from .... import memory
>>> limit_for(torch.device("cpu"), None) == memory.memory_limit()
True
"""

from __future__ import annotations

import torch

from .... import memory as _memory

__all__ = ["CPU", "cuda_free_bytes", "limit_for"]


def cuda_free_bytes(device: torch.device) -> int:
    """Free memory of a CUDA device: the driver's free bytes plus the bytes torch's
    caching allocator reserved but does not use (it hands those out first)."""
    free, _total = torch.cuda.mem_get_info(device)
    unused = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return int(free) + max(0, int(unused))


CPU = torch.device("cpu")
"""The CPU device (comparing a device with it takes 30 ns, asking ``device.type`` 450)."""


def limit_for(device: torch.device, given: int | None) -> int:
    """The limit in force for one allocation on ``device``."""
    if given is not None:
        return given
    # (a device comparison takes 30 ns, ``device.type`` 450: this runs on every call)
    if device != CPU and device.type == "cuda":
        return cuda_free_bytes(device)
    return _memory.LIMIT
