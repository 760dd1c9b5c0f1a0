"""sweep: differentiable wave-equation propagation.

Propagators take NumPy arrays (or CuPy, PyTorch and JAX arrays) and run either
the compiled kernels (``impl="c"``: C/OpenMP on the CPU, CUDA through CuPy) or
the eager Array-API code (``impl="eager"``).  ``sweep.vjp`` gives gradients,
``sweep.distributed`` spreads them over processes and machines, and
``sweep.config`` holds the run-time settings.
"""

from __future__ import annotations

from . import backend, das, distributed, equations
from ._api import estimate_memory
from ._config import config
from ._impl import binding_error
from ._vjp import vjp
from .equations.acoustic import AcousticResult, acoustic
from .equations.elastic import ElasticResult, elastic
from .equations.lsrtm import LSRTMResult, lsrtm
from .equations.maxwell import MaxwellResult, maxwell3d, tm2d
from .equations.vrz import VRZResult, vrz

__version__ = "0.1.0"

__all__ = [
    "AcousticResult",
    "ElasticResult",
    "LSRTMResult",
    "MaxwellResult",
    "VRZResult",
    "__version__",
    "acoustic",
    "estimate_memory",
    "backend",
    "binding_available",
    "config",
    "das",
    "distributed",
    "elastic",
    "equations",
    "lsrtm",
    "maxwell3d",
    "release_cached_memory",
    "tm2d",
    "vjp",
    "vrz",
]


def binding_available() -> bool:
    """Return True when the compiled kernels (``sweep._C``) import."""
    return binding_error() is None


def release_cached_memory() -> int:
    """Free the host memory of released wavefield stores and wavefields kept for reuse.

    Runs keep their large host buffers (a gradient's wavefield store, the
    kernels' wavefields up to 1 GiB) after they finish, so that the next run
    of the same size reuses them instead of mapping fresh memory; the cache
    never holds more than the last runs' buffers, and a run that needs
    another size empties it first.  Call this to hand that memory back
    (``SWEEP_STORE_CACHE=0`` turns the cache off).  It also drops the CUDA
    graphs of ``experimental_cuda_graph=True`` runs and their device buffers.

    Returns
    -------
    int
        The bytes released (host and device).
    """
    from . import _cuda_graph, _hostmem

    return _hostmem.release_cached() + _cuda_graph.release()
