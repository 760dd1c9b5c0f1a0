"""Array-namespace helpers: the one place that knows about concrete libraries.

The propagators are written against the Python Array API standard through
``array_api_compat``.  The few operations the standard lacks (scatter-add for
source injection, DLPack conversion for the compiled kernels) are delegated
here, per library, so the numerical code stays library-neutral.
"""

from __future__ import annotations

from typing import Any

import array_api_compat
import numpy as np
from array_api_compat import (
    array_namespace,
    is_cupy_array,
    is_jax_array,
    is_numpy_array,
    is_torch_array,
)

__all__ = [
    "array_namespace",
    "is_concrete",
    "is_cupy_array",
    "is_jax_array",
    "is_numpy_array",
    "is_torch_array",
    "kernel_array",
    "scatter_add",
    "take_transpose",
    "to_host",
    "library_name",
]


def library_name(x: Any) -> str:
    """Return 'numpy', 'cupy', 'torch', 'jax' or the namespace's module name."""
    for name, test in (
        ("numpy", is_numpy_array),
        ("cupy", is_cupy_array),
        ("torch", is_torch_array),
        ("jax", is_jax_array),
    ):
        if test(x):
            return name
    return array_namespace(x).__name__


def is_concrete(x: Any) -> bool:
    """Return False for JAX tracers (values unknown at trace time), else True."""
    if is_jax_array(x):
        import jax

        return not isinstance(x, jax.core.Tracer)
    return True


def to_host(x: Any) -> np.ndarray:
    """Return a NumPy copy (or view) of ``x`` for host-side checks."""
    if is_numpy_array(x):
        return x
    if is_torch_array(x):
        return x.detach().cpu().numpy()
    if is_cupy_array(x):
        return x.get()
    return np.asarray(x)


def scatter_add(x: Any, index: Any, values: Any) -> Any:
    """Return ``x`` with ``values`` added at positions ``index`` along its first axis.

    Repeated indices accumulate.  Out of place (differentiable) for torch and
    JAX; NumPy and CuPy get a copy updated in place.
    """
    if is_torch_array(x):
        return x.index_add(0, index, values)
    if is_jax_array(x):
        return x.at[index].add(values)
    out = x.copy()
    if is_cupy_array(x):
        import cupyx

        cupyx.scatter_add(out, index, values)
    else:
        np.add.at(out, index, values)
    return out


def take_transpose(xp: Any, g: Any, index: Any, n: int, axis: int) -> Any:
    """Return the transpose of ``xp.take(x, index, axis=axis)`` applied to ``g``.

    ``x`` has length ``n`` along ``axis``; cells that several outputs copy
    (an edge repeated into a padding) receive the sum of their cotangents.
    """
    moved = xp.moveaxis(g, axis, 0)
    if is_numpy_array(g):  # sums of runs of sorted indices: many times faster than np.add.at
        index = np.asarray(index)
        if index.ndim == 1 and index.size and bool(np.all(index[1:] >= index[:-1])):
            return np.moveaxis(_sorted_take_transpose(moved, index, n), 0, axis)
        order = np.argsort(index, kind="stable")
        keys = index[order]
        first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        out = np.zeros((n, *moved.shape[1:]), dtype=g.dtype)
        out[keys[first]] = np.add.reduceat(moved[order], first, axis=0)
        return np.moveaxis(out, 0, axis)
    zero = xp.zeros((n, *moved.shape[1:]), dtype=g.dtype, device=device_of(g))
    return xp.moveaxis(scatter_add(zero, index, moved), 0, axis)


def _sorted_take_transpose(moved: np.ndarray, index: np.ndarray, n: int) -> np.ndarray:
    """:func:`take_transpose` along axis 0 of ``moved`` for a sorted ``index``.

    The same values as the general path's, with less copying (a 3D elastic
    gradient's chain rule spent ~0.35 s in it per call): runs of consecutive
    keys that occur once are slice copies, and each key that repeats is its
    run's ``np.add.reduceat`` over a C-contiguous copy, as the general path
    reduces (the same summation order).
    """
    first = np.flatnonzero(np.r_[True, index[1:] != index[:-1]]).tolist()
    ends = [*first[1:], index.size]
    keys = index[first].tolist()
    out = np.zeros((n, *moved.shape[1:]), dtype=moved.dtype)
    i, m = 0, len(first)
    while i < m:
        a, b = first[i], ends[i]
        if b - a > 1:
            out[keys[i]] = np.add.reduceat(np.ascontiguousarray(moved[a:b]), [0], axis=0)[0]
            i += 1
            continue
        j = i
        while j + 1 < m and ends[j + 1] - first[j + 1] == 1 and keys[j + 1] == keys[j] + 1:
            j += 1
        out[keys[i] : keys[j] + 1] = moved[a : a + j - i + 1]
        i = j + 1
    return out


def pad_zeros(x: Any, widths: Any) -> Any:
    """Return ``x`` with ``widths[a] = (before, after)`` zeros around axis ``a``.

    Uses the library's own pad (the Array API has none): ``torch.compile``
    and XLA fuse a constant pad into its consumer as masked loads, where a
    concatenation with zero blocks would be written out.
    """
    if is_torch_array(x):
        import torch

        flat = [n for lo_hi in reversed(list(widths)) for n in lo_hi]
        return torch.nn.functional.pad(x, flat)
    if is_jax_array(x):
        import jax.numpy as jnp

        return jnp.pad(x, widths)
    if is_cupy_array(x):
        import cupy

        return cupy.pad(x, widths)
    return np.pad(x, widths)


def device_of(x: Any) -> Any:
    """Return the device of ``x`` in its own library's terms."""
    return array_api_compat.device(x)


def to_kernel_array(x: Any) -> Any:
    """Zero-copy view of ``x`` as a NumPy (host) or CuPy (CUDA) array, via DLPack.

    The view keeps ``x``'s strides; :func:`kernel_array` gives the layout the
    kernels need.
    """
    if is_numpy_array(x) or is_cupy_array(x):
        return x
    if is_torch_array(x):
        x = x.detach()
        if x.device.type == "cuda":
            import cupy

            return cupy.from_dlpack(x)
        return np.from_dlpack(x)
    if is_jax_array(x):
        dev = next(iter(x.devices()))
        if dev.platform == "gpu":
            import cupy

            return cupy.from_dlpack(x)
        return np.asarray(x)
    return np.asarray(x)


def kernel_array(x: Any, dtype: Any, *, name: str, xp: Any = None, writeable: bool = False) -> Any:
    """Return ``x`` laid out as the compiled kernels read it: the one gate to them.

    The kernels take raw pointers and index dense C order, so every array
    that reaches them (models, amplitudes, location indices, cotangents, and
    any future input) passes through here.  A slice, a transpose, a broadcast
    (zero strides), Fortran order, negative strides, a misaligned or
    byte-swapped buffer, or a torch/JAX array, is copied into that layout;
    an array that already has it is returned as it is (no copy).

    Parameters
    ----------
    x : array
        NumPy, CuPy, torch or JAX array, any strides.
    dtype : dtype-like
        The dtype the kernels expect (native byte order).  ``x`` may differ
        from it only by byte order or by a safe cast (int32 to int64);
        anything else is a ``TypeError``.
    name : str
        The argument's name, for error messages.
    xp : module, optional
        ``numpy`` or ``cupy``: the device the kernels run on (default: the
        one ``x`` is on).  Host data is copied to a CuPy device when needed.
    writeable : bool
        The kernels write to the array: a read-only ``x`` is copied.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        C-contiguous, aligned, native byte order, of ``dtype``.
    """
    target = np.dtype(dtype)
    if not target.isnative:
        raise ValueError(f"kernel_array: the kernels' dtype must be native, got {target}")
    y = to_kernel_array(x)
    if xp is not None and (xp is np) != is_numpy_array(y):
        y = y.get() if xp is np else xp.asarray(y)
    if y.dtype != target and not np.can_cast(y.dtype, target, casting="safe"):
        raise TypeError(
            f"{name} has dtype {np.dtype(y.dtype).name}, but the compiled kernels need "
            f"{target.name}; cast it with .astype"
        )
    if is_numpy_array(y):
        # np.require copies only when x lacks one of these (or the dtype differs,
        # byte order included).
        return np.require(np.asarray(y), dtype=target, requirements=["C", "A"] + ["W"] * writeable)
    import cupy

    # CuPy arrays are native and aligned; they may still be strided or of another dtype.
    return cupy.ascontiguousarray(y, dtype=target)


def from_kernel_array(y: Any, like: Any) -> Any:
    """Return ``y`` (NumPy/CuPy) in the library of ``like``, zero-copy where possible."""
    if y is None or is_numpy_array(like) or is_cupy_array(like):
        return y
    if is_torch_array(like):
        import torch

        return torch.from_dlpack(y)
    if is_jax_array(like):
        import jax.numpy as jnp

        return jnp.asarray(y)
    return y
