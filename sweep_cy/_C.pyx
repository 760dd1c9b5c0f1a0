# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled CPU kernels of sweep (C + OpenMP), reached as ``sweep._C``.

This module is deliberately thin: it copies the parameter record built by
``sweep._params`` into the C struct, fills the pointer struct from NumPy
arrays, releases the GIL and runs a chunk of time steps.  Validation,
allocation and buffer bookkeeping live in Python (``sweep._backends.cpu``).
"""

from libc.string cimport memcpy


cdef extern from "sweep_common.h":
    ctypedef long long sweep_int
    ctypedef struct sweep_acoustic_params:
        pass
    ctypedef struct sweep_acoustic_fields:
        pass


cdef extern from "acoustic_cpu.h" nogil:
    int sweep_acoustic_run(int ndim, int order, int is_double, int adjoint,
                           const sweep_acoustic_params *p, const sweep_acoustic_fields *f,
                           sweep_int t, sweep_int n_steps, int n_threads)
    int sweep_max_threads()
    int sweep_openmp_enabled()


cdef extern from "bf16_cpu.h" nogil:
    void sweep_to_bf16(const unsigned int *src, unsigned short *dst, long long n)
    void sweep_from_bf16(const unsigned short *src, unsigned int *dst, long long n)


cdef extern from "layout_probe.h":
    int sweep_layout_probe(long long *out, int n)


def openmp_enabled():
    """Return True when the kernels were compiled with OpenMP."""
    return bool(sweep_openmp_enabled())


def max_threads():
    """Return the number of OpenMP threads a kernel uses by default."""
    return sweep_max_threads()


def struct_layout():
    """Return ``{struct: (sizeof, {field: offset})}`` as the C compiler sees them."""
    cdef long long buf[96]
    cdef int n = sweep_layout_probe(buf, 96)
    names_p = ["n_shots", "n_src", "n_rec", "nt", "halo", "shot_stride", "shape", "stride",
               "plain_lo", "plain_hi", "free_lo", "free_hi", "model_lo", "model_hi", "store_lo",
               "store_hi", "store_every", "n_band", "n_rec_groups", "n_outer", "n_cpml",
               "block_steps", "block_group", "block_tile",
               "slot_shots", "simd_rows", "rdx", "rdx2"]
    names_f = ["v2dt2", "u_prev", "u", "psi", "psi_new", "zeta", "zeta_new", "pml_a", "pml_b",
               "src_amp", "src_idx", "rec", "rec_idx", "store", "grad_v2dt2", "grad_src",
               "band_idx", "band_row", "band_u", "band_w", "recon_u_next", "recon_u", "replay_w",
               "outer_idx", "outer_row", "cpml_pos", "rec_groups", "rec_order"]
    values = [buf[i] for i in range(n)]
    k = 0
    out = {}
    for struct, names in (("acoustic_params", names_p), ("acoustic_fields", names_f)):
        size = values[k]
        k += 1
        offsets = {}
        for name in names:
            offsets[name] = values[k]
            k += 1
        out[struct] = (size, offsets)
    return out


def acoustic_run(int ndim, int order, bint is_double, bint adjoint, params, fields,
                 sweep_int t, sweep_int n_steps, int n_threads=0):
    """Run ``n_steps`` steps of the acoustic kernels.

    ``params`` and ``fields`` are NumPy records of ``sweep._params`` dtypes
    (``fields`` holds host pointers to arrays the caller keeps alive).
    """
    cdef sweep_acoustic_params p
    cdef sweep_acoustic_fields f
    cdef const unsigned char[::1] pb = params.tobytes()
    cdef const unsigned char[::1] fb = fields.tobytes()
    if pb.shape[0] != sizeof(sweep_acoustic_params) or fb.shape[0] != sizeof(sweep_acoustic_fields):
        raise RuntimeError("sweep._C: parameter struct layout does not match sweep._params")
    memcpy(&p, &pb[0], sizeof(p))
    memcpy(&f, &fb[0], sizeof(f))
    cdef int rc
    with nogil:
        rc = sweep_acoustic_run(ndim, order, is_double, adjoint, &p, &f, t, n_steps, n_threads)
    if rc != 0:
        raise ValueError(f"sweep._C: unsupported ndim={ndim} / order={order}")


def to_bf16_into(const unsigned int[::1] src, unsigned short[::1] dst):
    """Round float32 bit patterns ``src`` to bfloat16 bit patterns in ``dst`` (same length)."""
    if src.shape[0] != dst.shape[0]:
        raise ValueError("to_bf16_into: src and dst differ in length")
    with nogil:
        sweep_to_bf16(&src[0] if src.shape[0] else NULL, &dst[0] if dst.shape[0] else NULL,
                      src.shape[0])


def from_bf16_into(const unsigned short[::1] src, unsigned int[::1] dst):
    """Widen bfloat16 bit patterns ``src`` to float32 bit patterns in ``dst`` (same length)."""
    if src.shape[0] != dst.shape[0]:
        raise ValueError("from_bf16_into: src and dst differ in length")
    with nogil:
        sweep_from_bf16(&src[0] if src.shape[0] else NULL, &dst[0] if dst.shape[0] else NULL,
                        src.shape[0])
