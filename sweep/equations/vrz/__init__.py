"""VRZ: variable-density acoustic propagation parameterised by velocity and impedance."""

from .propagator import VRZResult, vrz

__all__ = ["VRZResult", "vrz"]
