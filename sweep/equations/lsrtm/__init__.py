"""LSRTM: Born modelling and its adjoint, the migration image."""

from .propagator import LSRTMResult, lsrtm

__all__ = ["LSRTMResult", "lsrtm"]
