"""Warnings that point at the user's line, however deep in sweep they are raised.

A fixed ``stacklevel`` is right for one call path only: the same check runs
under ``sweep.acoustic``, ``sweep.vjp``, the adapters and the CLI at
different depths.  :func:`warn_user` walks out of sweep's own frames (and of
the array libraries' frames between the user and sweep, such as
``torch.autograd.Function.apply``) instead.
"""

from __future__ import annotations

import sys
import warnings
from types import FrameType

# Top-level packages whose frames are not the user's code.
_INTERNAL = frozenset({"sweep", "torch", "jax", "jaxlib"})


def _internal(frame: FrameType) -> bool:
    return str(frame.f_globals.get("__name__", "")).partition(".")[0] in _INTERNAL


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """Issue a warning attributed to the first frame outside sweep and the array libraries."""
    frame = sys._getframe(1)
    level = 2  # warnings.warn's stacklevel of our caller
    while frame is not None and _internal(frame):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
