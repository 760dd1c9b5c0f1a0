"""Elastic: isotropic velocity-stress propagation on a staggered grid (2D and 3D)."""

from .propagator import ElasticResult, elastic

__all__ = ["ElasticResult", "elastic"]
