"""Checks that run only in debug mode (``sweep.config(debug=True)`` or ``SWEEP_DEBUG=1``).

* :func:`check_indices`: every source and receiver index the kernels will use
  points at a model cell of its shot (the host side of the bounds checks the
  CUDA kernels compile in with ``SWEEP_DEBUG``).
* :func:`check_finite`: a wavefield holds no NaN or infinity; the error names
  the time step and the first bad cell.  The drivers of ``sweep._memory`` call
  the kernels in chunks of ``debug_check_every`` steps in debug mode, and the
  stepper checks after each chunk.
* :func:`check_residual`: the receiver residual given to a pullback is finite.

Outside debug mode none of this runs: the callers test :func:`enabled` first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._config import config


def enabled() -> bool:
    """Return True in debug mode."""
    return bool(config.get("debug"))


def _host(x: Any) -> np.ndarray:
    return x.get() if hasattr(x, "get") and not isinstance(x, np.generic) else np.asarray(x)


def kernel_coords(params: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """(z, y, x) of flat kernel-layout indices ``idx`` (``(..., 3)``; 2D: z is 0)."""
    s0, s1 = int(params["stride"][0]), int(params["stride"][1])
    idx = np.asarray(idx, dtype=np.int64)
    return np.stack([idx // s0, idx % s0 // s1, idx % s1], axis=-1)


def check_indices(params: np.ndarray, what: str, idx: Any) -> None:
    """Raise ``IndexError`` unless every index of ``idx`` ``(n_shots, n)`` is a model cell.

    The same test as ``SWEEP_CHECK_INDEX`` in ``cuda/acoustic.cu``: the index
    lies in one shot's field and its (z, y, x) in ``[model_lo, model_hi)``.
    """
    idx = _host(idx).astype(np.int64, copy=False)
    c = kernel_coords(params, idx)
    lo, hi = params["model_lo"], params["model_hi"]
    good = (idx >= 0) & (idx < int(params["shot_stride"]))
    good &= np.all((c >= lo) & (c < hi), axis=-1)
    if not good.all():
        shot, k = (int(i) for i in np.argwhere(~good)[0])
        raise IndexError(
            f"sweep debug: {what} {k} of shot {shot} has kernel index {int(idx[shot, k])}, "
            f"padded cell (z, y, x) = {tuple(int(x) for x in c[shot, k])}, outside the model "
            f"cells [{tuple(int(x) for x in lo)}, {tuple(int(x) for x in hi)}); this is a bug "
            "in sweep's index layout, please report it"
        )


def check_finite(geom: Any, field: Any, what: str, steps: tuple[int, int]) -> None:
    """Raise ``FloatingPointError`` if ``field`` (every shot, padded) holds NaN or infinity.

    ``steps`` = (first, last): the time steps run since the previous check,
    in the order they ran (the adjoint runs backwards).
    """
    xp = np if isinstance(field, np.ndarray) else __import__("cupy")
    bad = ~xp.isfinite(field)
    if not bool(bad.any()):
        return
    flat = int(xp.argmax(bad.reshape(-1)))
    shot, *cell = (int(i) for i in np.unravel_index(flat, tuple(field.shape)))
    value = float(_host(field[(shot, *cell)]))
    model = tuple(c - geom.lo(d) for d, c in enumerate(cell))
    inside = all(0 <= m < n for m, n in zip(model, geom.model_shape, strict=True))
    where = f"model cell {model}" if inside else f"padded cell {tuple(cell)} (CPML or halo)"
    first, last = steps
    since = (
        ""
        if first == last
        else f" (checked after steps {first} to {last}: it appeared in one of them)"
    )
    raise FloatingPointError(
        f"sweep debug: the {what} wavefield holds {value} after time step {last}{since}, "
        f"first at shot {shot}, {where}. Usual causes: an unstable time step, NaN or huge "
        "values in the inputs, or a kernel bug; debug_check_every=1 finds the exact step"
    )


def check_residual(grad_rec: Any) -> None:
    """Raise ``ValueError`` if the receiver residual (n_shots, n_rec, nt) is not finite."""
    xp = np if isinstance(grad_rec, np.ndarray) else __import__("cupy")
    bad = ~xp.isfinite(grad_rec)
    if bool(bad.any()):
        shot, rec, t = (int(i) for i in np.unravel_index(int(xp.argmax(bad.reshape(-1))),
                                                          tuple(grad_rec.shape)))  # fmt: skip
        raise ValueError(
            f"sweep debug: the receiver residual passed to the pullback holds "
            f"{float(_host(grad_rec[shot, rec, t]))} at shot {shot}, receiver {rec}, sample {t}"
        )
