"""Maxwell's equations for ground-penetrating radar: TM2D and 3D on the Yee grid."""

from .propagator import MaxwellResult, maxwell3d, tm2d

__all__ = ["MaxwellResult", "maxwell3d", "tm2d"]
