"""Arrays of any memory layout give bitwise the result of their C-contiguous copies.

The compiled kernels take raw pointers and index dense C order, so every array
that reaches them goes through ``sweep._xp.kernel_array`` (a copy only when
needed) and every pointer through ``sweep._compiled._Fields.set``, which has
``sweep._C`` reject a buffer of the wrong layout.  The matrix here: slices
along every axis, steps, transposes, Fortran order, negative strides, zero
strides (broadcast), read-only, unaligned and byte-swapped arrays and int32
locations, for the model, the source amplitudes, both location arrays and the
receiver cotangent; through the NumPy API, PropTorch and PropJax, on
impl="c" and impl="eager".  Each case compares receivers, final wavefield and
gradients with ``np.array_equal`` against the same values laid out plainly.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np
import pytest

import sweep
from sweep import _compiled
from sweep._xp import kernel_array
from sweep.testing import ricker

pytestmark = pytest.mark.filterwarnings("ignore:only .* cells per wavelength:UserWarning")

needs_binding = pytest.mark.skipif(
    not sweep.binding_available(), reason="sweep._C (compiled binding) is not built"
)
IMPLS = [pytest.param("c", marks=needs_binding), "eager"]

NT = 60
SETTINGS = dict(
    grid_spacing=5.0,
    dt=1e-3,
    pml_width=5,
    accuracy=4,
    max_vel=2000.0,  # CPML constants independent of v, so broadcast models change nothing else
    pml_freq=20.0,
    n_threads=1,  # tiny grids
)


@functools.cache
def _base() -> dict[str, np.ndarray]:
    """A 20 x 24 model, 3 shots of 2 sources and 3 receivers, 60 steps; every shot differs."""
    rng = np.random.default_rng(11)
    shape = (20, 24)
    n_shots = 3
    v = 1500.0 + 500.0 * rng.random(shape)
    src = np.stack([rng.integers(0, n, size=(n_shots, 2)) for n in shape], -1)
    rec = np.stack([rng.integers(0, n, size=(n_shots, 3)) for n in shape], -1)
    amp = ricker(40.0, NT, 1e-3)[None, None] * rng.standard_normal((n_shots, 2, 1))
    cot = rng.standard_normal((n_shots, 3, NT))
    out = {
        "v": v,
        "source_amplitudes": amp,
        "source_locations": src,
        "receiver_locations": rec,
        "cotangent": cot,
    }
    for x in out.values():
        x.setflags(write=False)  # shared by every case
    return out


# -- layouts of a NumPy array ------------------------------------------------------------
def _prefix(axis: int):
    """``x`` as the leading part of a longer array along ``axis`` (the user's amp[:, :, :350])."""

    def make(x: np.ndarray) -> np.ndarray:
        widths = [(0, 0)] * x.ndim
        widths[axis] = (0, 3)
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, x.shape[axis])
        return np.pad(x, widths, constant_values=7)[tuple(index)]

    return make


def _step(x: np.ndarray) -> np.ndarray:
    """Every other element along the last axis."""
    return np.repeat(x, 2, axis=-1)[..., ::2]


def _transposed(x: np.ndarray) -> np.ndarray:
    """Axes permuted in memory: the first axis varies fastest."""
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 0, -1)), -1, 0)


def _negative(x: np.ndarray) -> np.ndarray:
    """Negative strides on every axis."""
    flip = (slice(None, None, -1),) * x.ndim
    return x[flip].copy()[flip]


def _broadcast(x: np.ndarray) -> np.ndarray:
    """Zero stride on the first axis: every shot (every model row) the same."""
    return np.broadcast_to(x[:1], x.shape)


def _readonly(x: np.ndarray) -> np.ndarray:
    y = x.copy()
    y.setflags(write=False)
    return y


def _swapped(x: np.ndarray) -> np.ndarray:
    """Non-native byte order (same values)."""
    return x.astype(x.dtype.newbyteorder("S"))


def _unaligned(x: np.ndarray) -> np.ndarray:
    """C-contiguous, but one byte off the element alignment."""
    raw = np.zeros(x.nbytes + 1, dtype=np.uint8)
    y = raw[1:].view(x.dtype).reshape(x.shape)
    y[...] = x
    return y


def _int32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.int32)


LAYOUTS = {
    "slice0": _prefix(0),
    "slice1": _prefix(1),
    "slice2": _prefix(2),
    "step": _step,
    "fortran": np.asfortranarray,
    "transposed": _transposed,
    "negative": _negative,
    "broadcast": _broadcast,
    "readonly": _readonly,
    "swapped": _swapped,
    "unaligned": _unaligned,
    "int32": _int32,
}
ARGS = ("v", "source_amplitudes", "source_locations", "receiver_locations", "cotangent")


def _cases() -> list:
    out = []
    for impl in ("c", "eager"):
        for arg in ARGS:
            if arg == "cotangent" and impl == "eager":
                continue  # NumPy has no autodiff: the eager path has no pullback here
            for layout in LAYOUTS:
                if (layout == "slice2" and arg == "v") or (
                    layout == "int32" and "locations" not in arg
                ):
                    continue  # the model is 2D; only locations are integers
                marks = needs_binding if impl == "c" else ()
                out.append(pytest.param(impl, arg, layout, marks=marks))
    return out


def _outputs(impl: str, problem: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Receivers and final wavefield, and with impl="c" the gradients."""
    args = {k: x for k, x in problem.items() if k != "cotangent"}
    v = args.pop("v")
    if impl == "eager":
        out = sweep.acoustic(v, **args, **SETTINGS, impl="eager")
        return {"receivers": out.receivers, "wavefield": out.wavefield}
    out, pullback = sweep.vjp(sweep.acoustic, v, **args, **SETTINGS, impl="c")
    grads = pullback(problem["cotangent"])
    return {
        "receivers": out.receivers,
        "wavefield": out.wavefield,
        "grad_v": grads["v"],
        "grad_amp": grads["source_amplitudes"],
    }


@functools.cache
def _reference(impl: str, arg: str, data: bytes) -> dict[str, np.ndarray]:
    """Outputs with ``arg`` replaced by the C-contiguous array of bytes ``data``."""
    base = _base()
    plain = np.frombuffer(data, dtype=base[arg].dtype).reshape(base[arg].shape)
    return _outputs(impl, {**base, arg: plain})


def _plain_bytes(x: np.ndarray, like: np.ndarray) -> bytes:
    return np.ascontiguousarray(x, dtype=like.dtype).tobytes()


def _assert_same(got: dict, ref: dict) -> None:
    assert got.keys() == ref.keys()
    for key, value in ref.items():
        out = np.asarray(got[key])
        assert out.dtype == value.dtype, key
        assert np.array_equal(out, value), f"{key} differs from the C-contiguous result"


@pytest.mark.parametrize(("impl", "arg", "layout"), _cases())
def test_numpy_layouts(impl, arg, layout):
    """sweep.acoustic / sweep.vjp: any layout of any input gives the contiguous result."""
    base = _base()
    odd = LAYOUTS[layout](base[arg])
    assert np.array_equal(odd, base[arg]) or layout == "broadcast"
    ref = _reference(impl, arg, _plain_bytes(odd, base[arg]))
    _assert_same(_outputs(impl, {**base, arg: odd}), ref)


@needs_binding
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reported_cases(dtype):
    """The report: a time slice of longer amplitudes, Fortran order, a broadcast wavelet."""
    base = {k: x.astype(dtype) if x.dtype.kind == "f" else x for k, x in _base().items()}
    amp = base["source_amplitudes"]
    wavelet = ricker(40.0, NT, 1e-3).astype(dtype)[None, None].repeat(2, axis=1)
    wide = np.broadcast_to(wavelet, amp.shape)
    longer = np.concatenate([amp, amp], axis=-1)
    for odd in (longer[:, :, :NT], np.asfortranarray(amp), wide):
        ref = _outputs("c", {**base, "source_amplitudes": np.ascontiguousarray(odd)})
        got = _outputs("c", {**base, "source_amplitudes": odd})
        assert all(np.all(np.isfinite(x)) for x in got.values())
        _assert_same(got, ref)


# -- the gates themselves ----------------------------------------------------------------
def test_kernel_array_copies_only_when_needed():
    x = np.arange(24.0).reshape(2, 3, 4)
    assert kernel_array(x, np.float64, name="x") is x
    ro = _readonly(x)
    assert kernel_array(ro, np.float64, name="x") is ro  # the kernels only read it
    assert kernel_array(ro, np.float64, name="x", writeable=True).flags.writeable
    for layout in ("slice0", "slice2", "fortran", "negative", "broadcast", "swapped", "unaligned"):
        odd = LAYOUTS[layout](x)
        y = kernel_array(odd, np.float64, name="x")
        assert y.flags.c_contiguous and y.flags.aligned and y.dtype == np.float64, layout
        assert y.dtype.isnative and np.array_equal(y, odd), layout
    idx = kernel_array(np.arange(6, dtype=np.int32), np.int64, name="idx")
    assert idx.dtype == np.int64


def test_kernel_array_rejects_unsafe_casts():
    with pytest.raises(TypeError, match="source_amplitudes has dtype float64, but the compiled"):
        kernel_array(np.zeros(3), np.float32, name="source_amplitudes")


def _engine_field_check():
    """A set-up engine and a _Fields record, to feed buffers to _Fields.set directly."""
    base = _base()
    from sweep._grid import Geometry

    geom = Geometry(
        ndim=2, order=4, model_shape=(20, 24), spacing=(5.0, 5.0), dt=1e-3, nt=NT,
        pml_width=(5,) * 4, free_surface=(False,) * 4, pml_freq=20.0, v_max=2000.0,
        src_loc=base["source_locations"], rec_loc=base["receiver_locations"],
    )  # fmt: skip
    engine = _compiled.CompiledAcoustic(geom, np, np.float64, 1)
    return engine, _compiled._Fields(engine, adjoint=False)


@needs_binding
@pytest.mark.parametrize(
    ("layout", "error", "match"),
    [
        ("slice2", ValueError, r"'src_amp' .* has strides .* C-contiguous"),
        ("fortran", ValueError, r"'src_amp' .* has strides"),
        ("negative", ValueError, r"'src_amp' .* has strides"),
        ("broadcast", ValueError, r"'src_amp' .* has strides"),
        ("swapped", TypeError, r"'src_amp' has dtype >f8"),
        ("unaligned", ValueError, r"'src_amp' is not aligned"),
    ],
)
def test_fields_reject_bad_buffers(layout, error, match):
    """A call site that skips kernel_array gets an exception, never a misread buffer."""
    _, fields = _engine_field_check()
    amp = LAYOUTS[layout](_base()["source_amplitudes"])
    with pytest.raises(error, match=match):
        fields.set("src_amp", amp)


@needs_binding
def test_fields_reject_wrong_shape_dtype_and_read_only_outputs():
    engine, fields = _engine_field_check()
    with pytest.raises(ValueError, match=r"'src_amp' has shape \(3, 2, 59\), the kernels need"):
        fields.set("src_amp", np.zeros((3, 2, NT - 1)))
    with pytest.raises(TypeError, match=r"'src_amp' has dtype float32, the kernels need float64"):
        fields.set("src_amp", np.zeros((3, 2, NT), dtype=np.float32))
    with pytest.raises(ValueError, match="'rec' is read-only, but the kernels write to it"):
        fields.set("rec", _readonly(np.zeros((3, 3, NT))))
    fields.set("rec", np.zeros((3, 3, NT)))
    # Wavefields are views with padded rows (Geometry.layout_shape): accepted as such ...
    field = engine.field(0)
    assert not field.flags.c_contiguous
    fields.set("u", field)
    # ... but not a dense field, nor one with another row pitch.
    with pytest.raises(ValueError, match=r"'u' .* rows \d+ elements apart"):
        fields.set("u", np.zeros(field.shape))


@needs_binding
def test_check_layout_for_device_arrays():
    """The rule CuPy arrays are checked with (shape and strides in bytes)."""
    from sweep import _C

    _C.check_layout("x", (3, 4), (32, 8), 8)
    _C.check_layout("x", (3, 1), (8, 999), 8)  # a one-element axis' stride is never used
    _C.check_layout("x", (3, 4), (64, 8), 8, (3, 4), 8)  # rows 8 elements apart
    with pytest.raises(ValueError, match=r"'x' .* has strides"):
        _C.check_layout("x", (3, 4), (8, 24), 8)
    with pytest.raises(ValueError, match=r"'x' has shape \(3, 4\), the kernels need \('any', 5\)"):
        _C.check_layout("x", (3, 4), (32, 8), 8, (-1, 5))


@needs_binding
def test_kernel_address_checks_host_buffers():
    """The buffer-protocol gate: element format, byte order, read-only, alignment, layout."""
    from sweep import _C

    x = np.zeros((3, 4))
    assert _C.kernel_address("x", x, "d", 8, (3, 4)) == x.ctypes.data
    assert _C.kernel_address("i", np.zeros(2, np.int64), "lq", 8) > 0
    with pytest.raises(TypeError, match="'x' has element format '>d', the kernels need 'd'"):
        _C.kernel_address("x", _swapped(x), "d", 8)
    with pytest.raises(TypeError, match="'x' has element format 'f'"):
        _C.kernel_address("x", x.astype(np.float32), "d", 8)
    with pytest.raises(TypeError, match="'i' has element format 'i'"):
        _C.kernel_address("i", np.zeros(2, np.int32), "lq", 8)
    with pytest.raises(ValueError, match="'x' is read-only"):
        _C.kernel_address("x", _readonly(x), "d", 8, writable=True)
    with pytest.raises(ValueError, match="'x' is not aligned"):
        _C.kernel_address("x", _unaligned(x), "d", 8)
    with pytest.raises(ValueError, match=r"'x' .* has strides"):
        _C.kernel_address("x", x.T, "d", 8)


@needs_binding
def test_skipping_the_normaliser_raises(monkeypatch):
    """Were amplitudes to bypass kernel_array, _Fields.set would stop them."""
    monkeypatch.setattr(
        _compiled.CompiledAcoustic, "kernel_input", lambda self, x, *, name, dtype=None: x
    )
    base = _base()
    long_amp = np.concatenate([base["source_amplitudes"]] * 2, axis=-1)
    with pytest.raises(ValueError, match="'src_amp'"):
        _outputs("c", {**base, "source_amplitudes": long_amp[:, :, :NT]})


# -- PyTorch ------------------------------------------------------------------------------
def _torch_layouts():
    torch = pytest.importorskip("torch")

    def sliced(x):  # a prefix of a longer last axis
        return torch.cat([x, torch.full_like(x[..., :3], 7.0)], -1)[..., : x.shape[-1]]

    def transposed(x):
        return x.transpose(0, -1).contiguous().transpose(0, -1)

    def expanded(x):  # zero stride on the first axis
        return x[:1].expand(x.shape)

    return {"sliced": sliced, "transposed": transposed, "expanded": expanded}


def _torch_run(impl: str, v, amp, cot, locations=None):
    """PropTorch receivers and the gradients of <receivers, cot> for leaf tensors v, amp."""
    from sweep.propagator.torch import PropTorch

    base = _base()
    locations = locations or {k: base[k] for k in ("source_locations", "receiver_locations")}
    prop = PropTorch(impl=impl, **locations, **SETTINGS)
    v = v.detach().requires_grad_(True)  # keeps the layout; a leaf
    amp = amp.detach().requires_grad_(True)
    out = prop(v, source_amplitudes=amp)
    out.backward(cot)
    assert v.grad is not None and amp.grad is not None
    return {
        "receivers": out.detach().numpy(),
        "grad_v": v.grad.numpy(),
        "grad_amp": amp.grad.numpy(),
    }


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("arg", ["v", "source_amplitudes", "cotangent", "locations"])
@pytest.mark.parametrize("layout", ["sliced", "transposed", "expanded"])
def test_torch_layouts(impl, arg, layout):
    """PropTorch with sliced, transposed and expanded tensors, the cotangent included."""
    torch = pytest.importorskip("torch")
    make = _torch_layouts()[layout]
    base = _base()
    tensors = {k: torch.from_numpy(base[k].copy()) for k in ("v", "source_amplitudes", "cotangent")}
    plain = {"v": tensors["v"], "amp": tensors["source_amplitudes"], "cot": tensors["cotangent"]}
    if arg == "locations":
        keys = ("source_locations", "receiver_locations")
        odd = {k: make(torch.from_numpy(base[k].copy())) for k in keys}
        got = _torch_run(impl, **plain, locations=odd)
        plain["locations"] = {k: x.contiguous() for k, x in odd.items()}
    else:
        odd = make(tensors[arg])
        assert not odd.is_contiguous()
        got = _torch_run(impl, *{**tensors, arg: odd}.values())
        plain[{"source_amplitudes": "amp", "cotangent": "cot"}.get(arg, arg)] = odd.contiguous()
    # Only an expanded tensor changes the values; the others compare with the plain inputs.
    ref = _torch_run(impl, **plain) if layout == "expanded" else _torch_reference(impl)
    _assert_same(got, ref)


@functools.cache
def _torch_reference(impl: str) -> dict[str, np.ndarray]:
    import torch

    base = _base()
    v, amp, cot = (
        torch.from_numpy(base[k].copy()) for k in ("v", "source_amplitudes", "cotangent")
    )
    return _torch_run(impl, v, amp, cot)


# -- JAX ---------------------------------------------------------------------------------
_JAX_REFERENCES: dict[tuple, dict[str, np.ndarray]] = {}


@functools.cache
def _prop_jax(impl: str):
    from sweep.propagator.jax import PropJax

    base = _base()
    return PropJax(
        impl=impl,
        use_ckpt=False,  # compiles faster; checkpointing does not touch the inputs' layout
        source_locations=base["source_locations"],
        receiver_locations=base["receiver_locations"],
        **SETTINGS,
    )


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("arg", ["v", "source_amplitudes", "cotangent"])
# (JAX itself rejects non-native byte order, so "swapped" is not among them.)
@pytest.mark.parametrize("layout", ["slice2", "fortran", "negative", "broadcast"])
def test_jax_layouts(impl, arg, layout):
    """PropJax on JAX arrays made from odd NumPy layouts and from JAX slices."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    base = _base()
    if arg == "v" and layout == "slice2":
        layout = "slice1"
    with jax.enable_x64(True):
        prop = _prop_jax(impl)

        def run(v, amp, cot):
            out, pull = jax.vjp(lambda v_, a_: prop(v_, source_amplitudes=a_), v, amp)
            g_v, g_amp = pull(cot)
            return {"receivers": out, "grad_v": g_v, "grad_amp": g_amp}

        names = ("v", "source_amplitudes", "cotangent")
        odd_np = LAYOUTS[layout](base[arg])
        from_numpy = {k: jnp.asarray(odd_np if k == arg else base[k]) for k in names}
        # A slice of a longer JAX array, as jnp code would make it.
        longer = jnp.asarray(np.concatenate([odd_np, odd_np], axis=-1))
        from_slice = {**from_numpy, arg: longer[..., : odd_np.shape[-1]]}
        plain = {k: jnp.asarray(np.ascontiguousarray(odd_np if k == arg else base[k]))
                 for k in names}  # fmt: skip
        key = (impl, arg if layout == "broadcast" else None)  # broadcast changes the values
        if key not in _JAX_REFERENCES:
            _JAX_REFERENCES[key] = {k: np.asarray(x) for k, x in run(*plain.values()).items()}
        for args in (from_numpy, from_slice):
            got = {k: np.asarray(x) for k, x in run(*args.values()).items()}
            _assert_same(got, _JAX_REFERENCES[key])


@needs_binding
@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_numpy_api_with_framework_arrays(framework):
    """sweep.vjp(sweep.acoustic, ...) with strided torch tensors / JAX arrays, impl="c"."""
    base = _base()
    ref = _reference("c", "v", base["v"].tobytes())
    if framework == "torch":
        torch = pytest.importorskip("torch")
        conv, to_numpy, context = torch.from_numpy, lambda x: x.numpy(), contextlib.nullcontext()
    else:
        jax = pytest.importorskip("jax")
        conv, to_numpy, context = jax.numpy.asarray, np.asarray, jax.enable_x64(True)
    with context:
        v = conv(np.asfortranarray(base["v"]))
        amp = conv(np.concatenate([base["source_amplitudes"]] * 2, -1))[:, :, :NT]
        cot = conv(np.concatenate([base["cotangent"]] * 2, 0))[3:]
        out, pullback = sweep.vjp(
            sweep.acoustic, v, source_amplitudes=amp, source_locations=base["source_locations"],
            receiver_locations=base["receiver_locations"], **SETTINGS, impl="c",
        )  # fmt: skip
        grads = pullback(cot)
        got = {
            "receivers": out.receivers,
            "wavefield": out.wavefield,
            "grad_v": grads["v"],
            "grad_amp": grads["source_amplitudes"],
        }
        _assert_same({k: np.asarray(to_numpy(x)) for k, x in got.items()}, ref)
