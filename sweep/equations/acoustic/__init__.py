"""Constant-density acoustic propagation (pressure): ``sweep.acoustic``."""

from .propagator import AcousticResult, acoustic

__all__ = ["AcousticResult", "acoustic"]
