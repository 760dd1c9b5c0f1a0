"""PropJax under jit, grad, value_and_grad and vmap (impl "c" and "eager"); cross-framework."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import sweep  # noqa: E402
from sweep import _impl  # noqa: E402
from sweep.propagator.jax import PropJax  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:only .* cells per wavelength:UserWarning")

needs_binding = pytest.mark.skipif(
    not sweep.binding_available(), reason="sweep._C (compiled binding) is not built"
)
IMPLS = [pytest.param("c", marks=needs_binding), "eager"]

DT = 2e-3
SETTINGS = dict(
    grid_spacing=10.0,
    dt=DT,
    source_locations=np.array([[[5, 6]], [[4, 3]]]),
    receiver_locations=np.array([[[2, 3], [3, 10], [9, 7]], [[1, 1], [6, 12], [10, 2]]]),
    accuracy=4,
    pml_width=4,
    max_vel=2100.0,  # fixed CPML constants: needed by the eager path under tracing
    pml_freq=10.0,
    n_threads=1,  # tiny grids: OpenMP start-up costs more than it saves
)


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _problem(shape=(12, 14), nt=20, n_shots=2, seed=0):
    rng = np.random.default_rng(seed)
    v = 1500.0 + 500.0 * rng.random(shape)
    t = np.arange(nt) * DT
    pulse = np.exp(-(((t - 0.02) / 0.006) ** 2))
    amp = np.stack([pulse * (1.0 + 0.3 * s) for s in range(n_shots)])[:, None, :]
    return v, np.ascontiguousarray(amp)


def _loss(prop):
    def loss(v, amp):
        rec = prop(v, source_amplitudes=amp)
        return jnp.sum(rec**2) + jnp.sum(rec[0, 0])

    return loss


def _numpy_reference(v, amp):
    kw = {k: val for k, val in SETTINGS.items() if k not in ("grid_spacing", "dt")}
    out, pullback = sweep.vjp(sweep.acoustic, v, 10.0, DT, source_amplitudes=amp, impl="c", **kw)
    seed = 2 * out.receivers
    seed[0, 0] += 1.0
    grads = pullback(seed)
    loss = float((out.receivers**2).sum() + out.receivers[0, 0].sum())
    return loss, out.receivers, grads["v"], grads["source_amplitudes"]


def _close(a, b, rtol=1e-10):
    a, b = np.asarray(a), np.asarray(b)
    assert float(np.abs(a - b).max()) <= rtol * max(float(np.abs(b).max()), 1e-300)


@pytest.mark.parametrize("impl", IMPLS)
def test_jit_value_and_grad(impl):
    v, amp = _problem()
    prop = PropJax("acoustic", impl=impl, **SETTINGS)
    fn = jax.jit(jax.value_and_grad(_loss(prop), argnums=(0, 1)))
    value, (g_v, g_amp) = fn(jnp.asarray(v), jnp.asarray(amp))
    assert value.dtype == g_v.dtype == jnp.float64
    # reference: the eager path without jit
    eager = PropJax("acoustic", impl="eager", use_ckpt=False, **SETTINGS)
    ref = jax.value_and_grad(_loss(eager), argnums=(0, 1))(jnp.asarray(v), jnp.asarray(amp))
    _close(value, ref[0])
    _close(g_v, ref[1][0])
    _close(g_amp, ref[1][1])
    if sweep.binding_available():  # and the NumPy sweep.vjp
        loss, _, ref_v, ref_amp = _numpy_reference(v, amp)
        _close(value, loss)
        _close(g_v, ref_v)
        _close(g_amp, ref_amp)


@pytest.mark.parametrize("impl", IMPLS)
def test_forward_jit_and_eager_call_agree(impl):
    v, amp = _problem()
    prop = PropJax("acoustic", impl=impl, **SETTINGS)
    a = prop(jnp.asarray(v), source_amplitudes=jnp.asarray(amp))
    b = jax.jit(lambda v_, a_: prop(v_, source_amplitudes=a_))(jnp.asarray(v), jnp.asarray(amp))
    assert a.shape == (2, 3, 20)
    assert float(jnp.abs(a).max()) > 0
    _close(a, b, rtol=1e-13)


@needs_binding
def test_c_and_eager_agree():
    v, amp = _problem()
    args = (jnp.asarray(v), jnp.asarray(amp))
    grad = jax.grad(_loss(PropJax("acoustic", impl="c", **SETTINGS)), argnums=(0, 1))(*args)
    ref = jax.grad(_loss(PropJax("acoustic", impl="eager", **SETTINGS)), argnums=(0, 1))(*args)
    for a, b in zip(grad, ref, strict=True):
        _close(a, b)


@pytest.mark.parametrize("impl", IMPLS)
def test_check_grads(impl):
    v, amp = _problem(shape=(8, 9), nt=16, n_shots=1)
    settings = {
        **SETTINGS,
        "source_locations": np.array([[[3, 4]]]),
        "receiver_locations": np.array([[[1, 2], [6, 6]]]),
        "accuracy": 2,
        "pml_width": 3,
    }
    prop = PropJax("acoustic", impl=impl, **settings)
    # The whole model, edge cells included.
    check_grads(
        lambda v_, a_: prop(v_, source_amplitudes=a_),
        (jnp.asarray(v), jnp.asarray(amp)),
        order=1,
        modes=("rev",),
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_vmap_over_models(impl):
    v, amp = _problem()
    prop = PropJax("acoustic", impl=impl, **SETTINGS)
    vs = jnp.stack([jnp.asarray(v), jnp.asarray(v) * 1.05])
    a = jnp.asarray(amp)
    single = jax.jit(lambda v_: prop(v_, source_amplitudes=a))
    batched = jax.jit(jax.vmap(single))(vs)
    assert batched.shape == (2, 2, 3, 20)
    grad = jax.grad(lambda v_: _loss(prop)(v_, a))
    grads = jax.jit(jax.vmap(grad))(vs)
    grad = jax.jit(grad)
    for i in range(2):
        _close(batched[i], single(vs[i]))
        _close(grads[i], grad(vs[i]))


@pytest.mark.parametrize("impl", IMPLS)
def test_vmap_over_source_wavelets(impl):
    v, amp = _problem()
    prop = PropJax("acoustic", impl=impl, **SETTINGS)
    amps = jnp.stack([jnp.asarray(amp), 2.0 * jnp.asarray(amp)])
    out = jax.vmap(lambda a_: prop(jnp.asarray(v), source_amplitudes=a_))(amps)
    _close(out[1], 2.0 * out[0])  # linear in the source


@pytest.mark.parametrize("chunks", [1, 7])
def test_eager_remat_chunks_do_not_change_results(chunks):
    v, amp = _problem(nt=23)  # 7 does not divide 23: padded last chunk
    args = (jnp.asarray(v), jnp.asarray(amp))
    plain = PropJax("acoustic", impl="eager", use_ckpt=False, **SETTINGS)
    prop = PropJax("acoustic", impl="eager", ckpt_chunks=chunks, **SETTINGS)
    ref = jax.value_and_grad(_loss(plain))(*args)
    got = jax.value_and_grad(_loss(prop))(*args)
    _close(got[0], ref[0], rtol=1e-13)
    _close(got[1], ref[1], rtol=1e-13)


def test_eager_traced_model_needs_cpml_constants():
    v, amp = _problem()
    settings = {k: val for k, val in SETTINGS.items() if k not in ("max_vel", "pml_freq")}
    prop = PropJax("acoustic", impl="eager", **settings)
    out = prop(jnp.asarray(v), source_amplitudes=jnp.asarray(amp))  # concrete: fine
    assert out.shape == (2, 3, 20)
    with pytest.raises(ValueError, match="pass max_vel= and pml_freq="):
        jax.jit(lambda v_: prop(v_, source_amplitudes=jnp.asarray(amp)))(jnp.asarray(v))


@pytest.mark.parametrize("impl", IMPLS)
def test_float32(impl):
    v, amp = _problem()
    with jax.enable_x64(False):
        prop = PropJax("acoustic", impl=impl, **SETTINGS)
        v32, a32 = jnp.asarray(v, jnp.float32), jnp.asarray(amp, jnp.float32)
        g = jax.jit(jax.grad(_loss(prop)))(v32, a32)
        assert g.dtype == jnp.float32
    ref = jax.grad(_loss(PropJax("acoustic", impl="eager", **SETTINGS)))(
        jnp.asarray(v), jnp.asarray(amp)
    )
    _close(g.astype(jnp.float64), ref, rtol=1e-4)


@pytest.mark.parametrize("impl", IMPLS)
def test_no_sources(impl):
    v, _ = _problem()
    settings = {**SETTINGS, "source_locations": None, "nt": 5}
    rec = jax.jit(PropJax("acoustic", impl=impl, **settings))(jnp.asarray(v))
    assert rec.shape == (2, 3, 5)
    assert float(jnp.abs(rec).max()) == 0.0


def test_errors():
    with pytest.raises(TypeError, match="did you mean 'accuracy'"):
        PropJax("acoustic", impl="eager", acuracy=4, **SETTINGS)
    with pytest.raises(ValueError, match="did you mean 'acoustic'"):
        PropJax("acustic", impl="eager", **SETTINGS)
    prop = PropJax("acoustic", impl="eager", **SETTINGS)
    v, amp = _problem()
    with pytest.raises(TypeError, match=r"takes 1 model array\(s\)"):
        prop(v, v, source_amplitudes=amp)


def test_fallback_warning_when_binding_hidden(monkeypatch):
    monkeypatch.setattr(_impl, "binding_error", lambda: "ImportError: hidden for the test")
    with pytest.warns(UserWarning, match="falling back to impl='eager'"):
        prop = PropJax("acoustic", impl="c", **SETTINGS)
    assert prop.impl == "eager"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert PropJax("acoustic", impl="eager", **SETTINGS).impl == "eager"


# -- one problem, every framework -------------------------------------------------
@needs_binding
def test_cross_framework_gradients_agree():
    torch = pytest.importorskip("torch")
    from sweep.propagator.torch import PropTorch

    v, amp = _problem()
    loss, _, ref_v, ref_amp = _numpy_reference(v, amp)
    results = {}
    for impl in ("c", "eager"):
        value, grads = jax.value_and_grad(
            _loss(PropJax("acoustic", impl=impl, **SETTINGS)), argnums=(0, 1)
        )(jnp.asarray(v), jnp.asarray(amp))
        results[f"jax-{impl}"] = (value, *grads)
        tv = torch.tensor(v, requires_grad=True)
        ta = torch.tensor(amp, requires_grad=True)
        rec = PropTorch("acoustic", impl=impl, **SETTINGS)(tv, source_amplitudes=ta)
        t_loss = (rec**2).sum() + rec[0, 0].sum()
        t_loss.backward()
        results[f"torch-{impl}"] = (t_loss.detach().numpy(), tv.grad.numpy(), ta.grad.numpy())
    for got in results.values():
        _close(got[0], loss)
        _close(got[1], ref_v)
        _close(got[2], ref_amp)
