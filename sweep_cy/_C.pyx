# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled CPU kernels of sweep (C + OpenMP), reached as ``sweep._C``.

This module is deliberately thin: it copies the parameter record built by
``sweep._params`` into the C struct, fills the pointer struct from NumPy
arrays, releases the GIL and runs a chunk of time steps.  Validation,
allocation and buffer bookkeeping live in Python (``sweep._compiled``), which
takes every pointer through :func:`kernel_address` (host buffers) or
:func:`check_layout` (device arrays), so a buffer the kernels would misread
is rejected here, in one place.
"""

from cpython.buffer cimport PyBUF_RECORDS_RO, PyBuffer_Release, PyObject_GetBuffer
from libc.string cimport memcpy


cdef extern from "sweep_fields.h":
    ctypedef long long sweep_int
    ctypedef struct sweep_acoustic_params:
        pass
    enum: SWEEP_FIELDS_MAX_WORDS


cdef extern from "cpu_dispatch.h" nogil:
    ctypedef int (*sweep_run_fn)(int ndim, int order, int is_double, int adjoint,
                                 const sweep_acoustic_params *p, const void *f, sweep_int t,
                                 sweep_int n_steps, int n_threads)
    ctypedef struct sweep_kernel_entry:
        const char *name
        size_t fields_size
        sweep_run_fn run
    ctypedef struct sweep_layout_entry:
        const char *struct_name
        const char *member
        long long value
    const sweep_kernel_entry sweep_kernels[]
    const int sweep_n_kernels
    const sweep_layout_entry sweep_layout[]
    const int sweep_n_layout
    int sweep_max_threads()
    int sweep_openmp_enabled()


cdef extern from "host_pages.h" nogil:
    long long sweep_zero_written_pages(char *base, long long npages, long long page,
                                       const unsigned char *resident, int n_threads)


cdef extern from "maxwell_coef.h" nogil:
    ctypedef struct sweep_mx_coef_out:
        int stag
        int electric
        void *out_a
        void *out_b
        const void *fh
        const void *fm
        const void *fl
    int sweep_maxwell_coefficients(int is_double, const void *eps, const void *sig,
                                   const void *mu, const long long *lo, const long long *k,
                                   const long long *n, long long s0, long long s1,
                                   const sweep_mx_coef_out *outs, int n_outs, int head_axis,
                                   double dt, double eps0, double mu0, int n_threads)


cdef extern from "bf16_cpu.h" nogil:
    void sweep_to_bf16(const unsigned int *src, unsigned short *dst, long long n)
    void sweep_from_bf16(const unsigned short *src, unsigned int *dst, long long n)


def openmp_enabled():
    """Return True when the kernels were compiled with OpenMP."""
    return bool(sweep_openmp_enabled())


def max_threads():
    """Return the number of OpenMP threads a kernel uses by default."""
    return sweep_max_threads()


def struct_layout():
    """Return ``{struct: (sizeof, {member: offset})}`` as the C compiler lays them out.

    Every struct of ``sweep._fields_table``, by its C name (the generated
    ``sweep_kernels.c`` holds the probe).
    """
    out = {}
    cdef int i
    for i in range(sweep_n_layout):
        struct = sweep_layout[i].struct_name.decode()
        if sweep_layout[i].member == NULL:
            out[struct] = (sweep_layout[i].value, {})
        else:
            out[struct][1][sweep_layout[i].member.decode()] = sweep_layout[i].value
    return out


def kernels():
    """Return ``{equation: fields struct size}`` of every equation with CPU kernels."""
    cdef int i
    return {sweep_kernels[i].name.decode(): sweep_kernels[i].fields_size
            for i in range(sweep_n_kernels)}


_KERNEL_INDEX = {name: i for i, name in enumerate(kernels())}


cdef enum:
    MAX_DIMS = 8  # more axes than any kernel buffer has


cdef int _check_layout(str name, int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides,
                       Py_ssize_t itemsize, expected_shape, Py_ssize_t row) except -1:
    """:func:`check_layout` on C arrays (the buffer protocol's, or a copy of tuples)."""
    cdef Py_ssize_t i, n, want_stride = itemsize, size = 1
    if expected_shape is not None:
        ok = len(expected_shape) == ndim
        for i in range(ndim if ok else 0):
            n = expected_shape[i]
            ok = ok and (n == -1 or n == shape[i])
        if not ok:
            got = tuple(shape[i] for i in range(ndim))
            want = tuple("any" if n == -1 else n for n in expected_shape)
            raise ValueError(
                f"sweep._C: kernel buffer {name!r} has shape {got}, the kernels need {want}"
            )
    for i in range(ndim):
        size *= shape[i]
    if size == 0:
        return 0  # nothing is read
    if row and row < shape[ndim - 1]:
        raise ValueError(f"sweep._C: row pitch {row} of {name!r} is shorter than its rows")
    for i in range(ndim - 1, -1, -1):
        # An axis of one element is never stepped along, so its stride is free.
        if shape[i] != 1 and strides[i] != want_stride:
            layout = f"C order with rows {row} elements apart" if row else "C-contiguous"
            raise ValueError(
                f"sweep._C: kernel buffer {name!r} (shape "
                f"{tuple(shape[k] for k in range(ndim))}) has strides "
                f"{tuple(strides[k] for k in range(ndim))} bytes, but the kernels read it as "
                f"{layout} (stride {want_stride} on axis {i}); pass it through "
                "sweep._xp.kernel_array, which copies it into that layout"
            )
        want_stride *= row if (row and i == ndim - 1) else shape[i]
    return 0


def check_layout(str name, shape, strides, Py_ssize_t itemsize, expected_shape=None,
                 Py_ssize_t row=0):
    """Raise ``ValueError`` unless ``shape``/``strides`` (bytes) are the kernels' layout.

    The kernels index a buffer as dense C order, except that consecutive rows
    (the last axis) may be ``row`` elements apart (the padded field rows of
    ``Geometry.layout_shape``; 0: dense).  ``expected_shape``, when given,
    must equal ``shape``; an entry of -1 matches any extent.  Used for CuPy
    arrays, which have no buffer protocol; host buffers go through
    :func:`kernel_address`.
    """
    cdef Py_ssize_t c_shape[MAX_DIMS]
    cdef Py_ssize_t c_strides[MAX_DIMS]
    cdef int i, ndim = len(shape)
    if ndim > MAX_DIMS or len(strides) != ndim:
        raise ValueError(f"sweep._C: kernel buffer {name!r} has {ndim} axes")
    for i in range(ndim):
        c_shape[i] = shape[i]
        c_strides[i] = strides[i]
    _check_layout(name, ndim, c_shape, c_strides, itemsize, expected_shape, row)


def kernel_address(str name, obj, str formats, Py_ssize_t itemsize, expected_shape=None,
                   Py_ssize_t row=0, bint writable=False):
    """Address of the host buffer ``obj`` once it is checked to be what the kernels read.

    ``formats`` lists the buffer-format characters of the element type the
    kernels expect (``"f"``, ``"d"``, ``"lq"`` for 64-bit integers), in native
    byte order, and ``itemsize`` its size in bytes.  The layout must pass
    :func:`check_layout` (``expected_shape``, ``row``), the buffer must be
    aligned to its element size and, when ``writable``, not read-only.
    Raises ``TypeError`` (element type) or ``ValueError`` (the rest).
    """
    cdef Py_buffer view
    cdef size_t address
    PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO)
    try:
        fmt = view.format.decode("ascii") if view.format != NULL else "B"
        if fmt[:1] in ("@", "="):  # native byte order ("=": NumPy's unaligned arrays)
            fmt = fmt[1:]
        if len(fmt) != 1 or fmt not in formats or view.itemsize != itemsize:
            raise TypeError(
                f"sweep._C: kernel buffer {name!r} has element format {fmt!r}, the kernels "
                f"need {formats[0]!r} in native byte order; convert it with "
                "sweep._xp.kernel_array"
            )
        if writable and view.readonly:
            raise ValueError(
                f"sweep._C: kernel buffer {name!r} is read-only, but the kernels write to it"
            )
        _check_layout(name, view.ndim, view.shape, view.strides, view.itemsize, expected_shape,
                      row)
        address = <size_t>view.buf
        if address % <size_t>view.itemsize:
            raise ValueError(
                f"sweep._C: kernel buffer {name!r} is not aligned to its {view.itemsize}-byte "
                "elements; copy it with sweep._xp.kernel_array"
            )
        return address
    finally:
        PyBuffer_Release(&view)


def run(str equation, int ndim, int order, bint is_double, bint adjoint, params, fields,
        sweep_int t, sweep_int n_steps, int n_threads=0):
    """Run ``n_steps`` steps of ``equation``'s kernels (a name of :func:`kernels`).

    ``n_steps`` forward steps from time ``t`` (``adjoint`` false), or
    ``n_steps`` adjoint steps ending at ``t``, exclusive.  ``params`` and
    ``fields`` are NumPy records of ``sweep._params`` dtypes (the parameter
    record and the equation's fields record, ``sweep._params.KERNEL_FIELDS``;
    ``fields`` holds host pointers to arrays the caller keeps alive).
    """
    index = _KERNEL_INDEX.get(equation)
    if index is None:
        raise ValueError(
            f"sweep._C: no CPU kernels for equation {equation!r}; known: {sorted(_KERNEL_INDEX)}"
        )
    cdef const sweep_kernel_entry *entry = &sweep_kernels[<int>index]
    cdef const unsigned char[::1] pb = params.tobytes()
    cdef const unsigned char[::1] fb = fields.tobytes()
    if (<size_t>pb.shape[0] != sizeof(sweep_acoustic_params)
            or <size_t>fb.shape[0] != entry.fields_size):
        raise RuntimeError(
            f"sweep._C: the {equation} records do not match the C structs (sweep._params)"
        )
    # Aligned copies of the records (the bytes objects promise no alignment).
    cdef sweep_acoustic_params p
    cdef long long f[SWEEP_FIELDS_MAX_WORDS]
    memcpy(&p, &pb[0], sizeof(p))
    memcpy(f, &fb[0], entry.fields_size)
    cdef int rc
    with nogil:
        rc = entry.run(ndim, order, is_double, adjoint, &p, f, t, n_steps, n_threads)
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


def zero_written_pages(size_t base, long long page, const unsigned char[::1] resident,
                       int n_threads=1):
    """Zero the pages at ``base`` (``page`` bytes each) marked resident that hold data.

    ``resident``: one byte per page, as ``mincore`` fills it (bit 0: resident).
    The caller owns the ``len(resident)`` pages from ``base``
    (``sweep._hostmem._zero_resident``).  Returns how many pages were written.
    """
    if page <= 0 or page % 64:
        raise ValueError(f"zero_written_pages: page of {page} bytes")
    cdef long long n = resident.shape[0]
    cdef long long written = 0
    if n:
        with nogil:
            written = sweep_zero_written_pages(<char *>base, n, page, &resident[0], n_threads)
    return written


def maxwell_coefficients(int is_double, size_t eps, size_t sig, size_t mu, lo, k, n,
                         long long s0, long long s1, list outs, int head_axis, double dt,
                         double eps0, double mu0, int n_threads=1):
    """Write the Maxwell coefficient fields (``sweep_cy/maxwell_coef.h``).

    Addresses of dense models (``k``, 3D-numbered) and of fields (padded
    shape ``n``, strides ``s0``, ``s1`` in elements); ``outs``: per
    component ``(stag, electric, out_a, out_b, fh, fm, fl)`` (addresses, 0:
    none).  The caller (``sweep.equations.maxwell.compiled``) owns and checks
    every buffer.
    """
    cdef long long clo[3]
    cdef long long ck[3]
    cdef long long cn[3]
    cdef sweep_mx_coef_out c_outs[6]
    cdef int i, rc
    cdef int n_outs = len(outs)
    if n_outs > 6 or len(lo) != 3 or len(k) != 3 or len(n) != 3:
        raise ValueError("maxwell_coefficients: at most 6 components, 3 axes")
    for i in range(3):
        clo[i] = lo[i]
        ck[i] = k[i]
        cn[i] = n[i]
    for i in range(n_outs):
        stag, electric, out_a, out_b, fh, fm, fl = outs[i]
        c_outs[i].stag = stag
        c_outs[i].electric = electric
        c_outs[i].out_a = <void *><size_t>out_a
        c_outs[i].out_b = <void *><size_t>out_b
        c_outs[i].fh = <const void *><size_t>fh
        c_outs[i].fm = <const void *><size_t>fm
        c_outs[i].fl = <const void *><size_t>fl
    with nogil:
        rc = sweep_maxwell_coefficients(is_double, <const void *>eps, <const void *>sig,
                                        <const void *>mu, clo, ck, cn, s0, s1, c_outs, n_outs,
                                        head_axis, dt, eps0, mu0, n_threads)
    if rc:
        raise MemoryError("maxwell_coefficients: out of memory")
