"""PropTorch: compiled (impl="c") and eager adapters, options, checkpointing, compile."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sweep  # noqa: E402
from sweep import _impl  # noqa: E402
from sweep.propagator import (  # noqa: E402
    BoundaryOptions,
    CkptOptions,
    CUDAOptions,
    EagerOptions,
    MemoryOptions,
)
from sweep.propagator.torch import PropTorch  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:only .* cells per wavelength:UserWarning")

needs_binding = pytest.mark.skipif(
    not sweep.binding_available(), reason="sweep._C (compiled binding) is not built"
)

DT = 2e-3
SETTINGS = dict(
    grid_spacing=10.0,
    dt=DT,
    source_locations=np.array([[[5, 6]], [[4, 3]]]),
    receiver_locations=np.array([[[2, 3], [3, 10], [9, 7]], [[1, 1], [6, 12], [10, 2]]]),
    accuracy=4,
    pml_width=4,
    max_vel=2100.0,  # CPML constants independent of the model values: exact gradients
    pml_freq=10.0,
    n_threads=1,  # tiny grids: OpenMP start-up costs more than it saves
)
SMALL = dict(
    grid_spacing=10.0,
    dt=DT,
    source_locations=np.array([[[3, 4]]]),
    receiver_locations=np.array([[[1, 2], [6, 6]]]),
    accuracy=2,
    pml_width=3,
    max_vel=2100.0,
    pml_freq=10.0,
    n_threads=1,  # tiny grids: OpenMP start-up costs more than it saves
)


def _problem(shape=(12, 14), nt=30, n_shots=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    v = 1500.0 + 500.0 * torch.rand(shape, generator=gen, dtype=torch.float64)
    t = torch.arange(nt, dtype=torch.float64) * DT
    pulse = torch.exp(-(((t - 0.02) / 0.006) ** 2))
    amp = torch.stack([pulse * (1.0 + 0.3 * s) for s in range(n_shots)])[:, None, :]
    return v, amp.contiguous()


def _loss_and_grads(prop, v, amp):
    v = v.clone().requires_grad_(True)
    amp = amp.clone().requires_grad_(True)
    rec = prop(v, source_amplitudes=amp)
    loss = (rec**2).sum() + rec[0, 0].sum()
    g_v, g_amp = torch.autograd.grad(loss, (v, amp))
    return rec.detach(), g_v, g_amp


def _close(a, b, rtol=1e-10):
    scale = b.abs().max().clamp_min(1e-300)
    assert float((a - b).abs().max() / scale) <= rtol


# -- gradcheck ----------------------------------------------------------------------
@pytest.mark.parametrize("impl", [pytest.param("c", marks=needs_binding), "eager"])
def test_gradcheck_float64(impl):
    v, amp = _problem(shape=(8, 9), nt=16, n_shots=1)
    prop = PropTorch("acoustic", impl=impl, **SMALL)
    inputs = (v.clone().requires_grad_(True), amp.requires_grad_(True))
    assert torch.autograd.gradcheck(
        lambda x_, a_: prop(x_, source_amplitudes=a_), inputs, fast_mode=True
    )


@needs_binding
def test_gradcheck_model_only_c():
    """Every cell of the model, the edge cells the CPML copies included (not fast mode)."""
    v, amp = _problem(shape=(8, 9), nt=16, n_shots=1)
    prop = PropTorch("acoustic", impl="c", **SMALL)
    assert torch.autograd.gradcheck(
        lambda x_: prop(x_, source_amplitudes=amp),
        (v.clone().requires_grad_(True),),
        fast_mode=False,
    )


# -- c vs eager, and the backend spellings ------------------------------------------
@needs_binding
def test_c_and_eager_agree():
    v, amp = _problem()
    ref = _loss_and_grads(PropTorch("acoustic", impl="c", **SETTINGS), v, amp)
    got = _loss_and_grads(PropTorch("acoustic", impl="eager", **SETTINGS), v, amp)
    assert float(ref[0].abs().max()) > 0
    for a, b in zip(got, ref, strict=True):
        _close(a, b)


@needs_binding
def test_backend_spellings_map_to_impls():
    assert PropTorch("acoustic", backend="eager", **SETTINGS).impl == "eager"
    assert PropTorch("acoustic", backend="cuda", **SETTINGS).impl == "c"
    assert PropTorch("acoustic", backend="torch", impl="c", **SETTINGS).impl == "c"
    assert PropTorch("acoustic", **SETTINGS).impl == "c"
    v, amp = _problem()
    a = PropTorch("acoustic", backend="cuda", **SETTINGS)(v, source_amplitudes=amp)
    b = PropTorch("acoustic", backend="eager", **SETTINGS)(v, source_amplitudes=amp)
    _close(a, b)


@needs_binding
def test_matches_numpy_vjp():
    v, amp = _problem()
    kw = {k: val for k, val in SETTINGS.items() if k not in ("grid_spacing", "dt")}
    out, pullback = sweep.vjp(
        sweep.acoustic, v.numpy(), 10.0, DT, source_amplitudes=amp.numpy(), impl="c", **kw
    )
    grads = pullback(2 * out.receivers + _seed_grad(out.receivers))
    rec, g_v, g_amp = _loss_and_grads(PropTorch("acoustic", impl="eager", **SETTINGS), v, amp)
    _close(rec, torch.from_numpy(out.receivers))
    _close(g_v, torch.from_numpy(grads["v"]))
    _close(g_amp, torch.from_numpy(grads["source_amplitudes"]))


def _seed_grad(rec):
    g = np.zeros_like(rec)
    g[0, 0] = 1.0
    return g


@needs_binding
def test_no_grad_c_path_matches_grad_path():
    v, amp = _problem()
    prop = PropTorch("acoustic", impl="c", **SETTINGS)
    with torch.no_grad():
        a = prop(v, source_amplitudes=amp)
    b = prop(v.requires_grad_(True), source_amplitudes=amp)
    assert not a.requires_grad and b.requires_grad
    _close(a, b.detach(), rtol=0)


def test_untracked_eager_forward_matches_tracked():
    """Without autograd the eager path writes receivers into one tensor (no per-step list)."""
    v, amp = _problem()
    prop = PropTorch(
        "acoustic", impl="eager", eager_options=EagerOptions(store_last_wavefield=True), **SETTINGS
    )
    with torch.no_grad():
        a = prop(v, source_amplitudes=amp)
    last = prop.last_wavefield
    b = prop(v.clone().requires_grad_(True), source_amplitudes=amp)
    assert not a.requires_grad and b.requires_grad
    _close(a, b.detach(), rtol=0)
    _close(last, prop.last_wavefield, rtol=0)
    c = prop(v, source_amplitudes=amp)  # grad mode on, nothing requires grad: untracked too
    _close(c, a, rtol=0)


@needs_binding
def test_c_only_source_gradient():
    v, amp = _problem()
    prop = PropTorch("acoustic", impl="c", **SETTINGS)
    amp = amp.requires_grad_(True)
    (g,) = torch.autograd.grad(prop(v, source_amplitudes=amp).sum(), amp)
    ref = PropTorch("acoustic", impl="eager", **SETTINGS)
    (g_ref,) = torch.autograd.grad(ref(v, source_amplitudes=amp).sum(), amp)
    _close(g, g_ref)


@pytest.mark.parametrize("impl", [pytest.param("c", marks=needs_binding), "eager"])
def test_float32(impl):
    v, amp = _problem()
    prop = PropTorch("acoustic", impl=impl, **SETTINGS)
    rec, g_v, g_amp = _loss_and_grads(prop, v.float(), amp.float())
    ref = _loss_and_grads(PropTorch("acoustic", impl="eager", **SETTINGS), v, amp)
    assert rec.dtype == g_v.dtype == g_amp.dtype == torch.float32
    for a, b in zip((rec, g_v, g_amp), ref, strict=True):
        _close(a.double(), b, rtol=1e-4)


@pytest.mark.parametrize("impl", [pytest.param("c", marks=needs_binding), "eager"])
def test_no_sources_needs_nt(impl):
    v, _ = _problem()
    settings = {**SETTINGS, "source_locations": None, "nt": 7}
    rec = PropTorch("acoustic", impl=impl, **settings)(v)
    assert rec.shape == (2, 3, 7)
    assert float(rec.abs().max()) == 0.0


# -- checkpointing and larger graphs ------------------------------------------------
@pytest.mark.parametrize("chunks", [None, 1, 4, 30])
def test_eager_use_ckpt_matches_plain(chunks):
    v, amp = _problem()
    ref = _loss_and_grads(PropTorch("acoustic", impl="eager", **SETTINGS), v, amp)
    prop = PropTorch("acoustic", impl="eager", use_ckpt=True, ckpt_chunks=chunks, **SETTINGS)
    for a, b in zip(_loss_and_grads(prop, v, amp), ref, strict=True):
        _close(a, b, rtol=1e-13)


@pytest.mark.parametrize("impl", [pytest.param("c", marks=needs_binding), "eager"])
@pytest.mark.parametrize("reentrant", [False, True])
def test_torch_utils_checkpoint(impl, reentrant):
    from torch.utils.checkpoint import checkpoint

    v, amp = _problem()
    prop = PropTorch("acoustic", impl=impl, **SETTINGS)
    ref = _loss_and_grads(prop, v, amp)
    v = v.clone().requires_grad_(True)
    amp = amp.clone().requires_grad_(True)

    def region(v_, a_):
        return prop(v_ * 1.0, source_amplitudes=a_)

    rec = checkpoint(region, v, amp, use_reentrant=reentrant)
    loss = (rec**2).sum() + rec[0, 0].sum()
    loss.backward()  # reentrant checkpoint does not support torch.autograd.grad
    for a, b in zip((rec.detach(), v.grad, amp.grad), ref, strict=True):
        _close(a, b)


class _VelocityNet(torch.nn.Module):
    """A tiny network whose output is the velocity model."""

    def __init__(self, shape):
        super().__init__()
        self.shape = shape
        self.latent = torch.nn.Parameter(torch.linspace(-1, 1, 6, dtype=torch.float64))
        self.lin = torch.nn.Linear(6, shape[0] * shape[1], dtype=torch.float64)

    def forward(self):
        return 1500.0 + 500.0 * torch.sigmoid(self.lin(self.latent)).reshape(self.shape)


@pytest.mark.parametrize("impl", [pytest.param("c", marks=needs_binding), "eager"])
def test_inside_larger_graph(impl):
    _, amp = _problem()
    torch.manual_seed(1)
    net = _VelocityNet((12, 14))
    with torch.no_grad():
        observed = PropTorch("acoustic", impl="eager", **SETTINGS)(
            net() * 1.02, source_amplitudes=amp
        )
    prop = PropTorch("acoustic", impl=impl, **SETTINGS)
    loss = ((prop(net(), source_amplitudes=amp) - observed) ** 2).sum()
    grads = torch.autograd.grad(loss, list(net.parameters()))
    ref_prop = PropTorch("acoustic", impl="eager", **SETTINGS)
    ref_loss = ((ref_prop(net(), source_amplitudes=amp) - observed) ** 2).sum()
    ref = torch.autograd.grad(ref_loss, list(net.parameters()))
    assert float(loss.detach()) > 0
    for a, b in zip(grads, ref, strict=True):
        assert float(b.abs().max()) > 0
        _close(a, b)


# -- EagerOptions: torch.compile and store_last_wavefield ---------------------------
@pytest.mark.filterwarnings("ignore::UserWarning:torch.*")
def test_torch_compile_eager_agrees():
    v, amp = _problem()
    opts = EagerOptions(use_compile=True, compile_backend="aot_eager", compile_fullgraph=True)
    prop = PropTorch("acoustic", backend="eager", eager_options=opts, **SETTINGS)
    ref = _loss_and_grads(PropTorch("acoustic", impl="eager", **SETTINGS), v, amp)
    for _ in range(2):  # second call reuses the compiled step
        for a, b in zip(_loss_and_grads(prop, v, amp), ref, strict=True):
            _close(a, b, rtol=1e-12)
    assert len(prop._compiled) == 1


@pytest.mark.filterwarnings("ignore::UserWarning:torch.*")
def test_torch_compile_with_ckpt_via_backend_options():
    v, amp = _problem(nt=20)
    opts = EagerOptions(use_compile=True, compile_backend="aot_eager")
    prop = PropTorch(
        "acoustic", backend="eager", backend_options=opts, use_ckpt=True, ckpt_chunks=3, **SETTINGS
    )
    assert prop.eager_options is opts
    ref = _loss_and_grads(PropTorch("acoustic", impl="eager", **SETTINGS), v, amp)
    for a, b in zip(_loss_and_grads(prop, v, amp), ref, strict=True):
        _close(a, b, rtol=1e-12)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning:torch.*")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # raised inside torch's inductor
def test_torch_compile_inductor_agrees():
    v, amp = _problem(nt=12)
    prop = PropTorch(
        "acoustic", impl="eager", eager_options=EagerOptions(use_compile=True), **SETTINGS
    )
    ref = _loss_and_grads(PropTorch("acoustic", impl="eager", **SETTINGS), v, amp)
    for a, b in zip(_loss_and_grads(prop, v, amp), ref, strict=True):
        _close(a, b, rtol=1e-10)


@pytest.mark.filterwarnings("ignore::UserWarning:torch.*")
def test_differentiated_step_compiles_with_earlier_materialisation():
    """Only the step compiled with grad (and its backward) see the lowered inductor
    threshold; the forward passes keep inductor's default (it slowed them)."""
    from torch._dynamo import register_backend
    from torch._dynamo.backends.common import aot_autograd
    from torch._inductor import config

    from sweep.propagator.torch import _GRAD_STEP_INDUCTOR

    key = "realize_cpu_opcount_threshold"
    seen = {"fw": [], "bw": []}

    def recorder(which):
        def compiler(gm, example_inputs):
            seen[which].append(getattr(config, key))
            return gm.forward

        return compiler

    name = "sweep_test_config_recorder"
    register_backend(aot_autograd(fw_compiler=recorder("fw"), bw_compiler=recorder("bw")), name)
    v, amp = _problem(nt=8)
    opts = EagerOptions(use_compile=True, compile_backend=name)
    prop = PropTorch("acoustic", impl="eager", eager_options=opts, **SETTINGS)
    ref = _loss_and_grads(PropTorch("acoustic", impl="eager", **SETTINGS), v, amp)
    for a, b in zip(_loss_and_grads(prop, v, amp), ref, strict=True):
        _close(a, b, rtol=1e-12)
    default, lowered = getattr(config, key), _GRAD_STEP_INDUCTOR[key]
    assert default != lowered
    assert seen["bw"] and set(seen["bw"]) == {lowered}
    assert default in seen["fw"] and lowered in seen["fw"]  # no-grad forward, step with grad


def test_store_last_wavefield():
    v, amp = _problem()
    prop = PropTorch(
        "acoustic", impl="eager", eager_options=EagerOptions(store_last_wavefield=True), **SETTINGS
    )
    prop(v.requires_grad_(True), source_amplitudes=amp)
    assert prop.last_wavefield.shape == (2, 12, 14)
    assert not prop.last_wavefield.requires_grad
    assert set(prop.last_state) == {"u", "u_prev", "psi", "zeta"}
    ref = sweep.acoustic(v.detach(), source_amplitudes=amp, impl="eager", **SETTINGS)
    _close(prop.last_wavefield, ref.wavefield)
    assert PropTorch("acoustic", impl="eager", **SETTINGS).last_wavefield is None


# -- CUDA options pass-through ------------------------------------------------------
@needs_binding
@pytest.mark.parametrize(
    "memory",
    [
        MemoryOptions(strategy="boundary", boundary=BoundaryOptions(storage="gpu")),
        MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="chunk", chunks=100)),
    ],
)
def test_memory_strategy_accepted(memory):
    params = __import__("inspect").signature(sweep.acoustic).parameters
    opts = CUDAOptions(memory=memory)
    if "memory" in params:  # the core implements strategies: passed through
        prop = PropTorch("acoustic", backend="cuda", cuda_options=opts, **SETTINGS)
        assert prop._memory == {"memory": memory}
    else:
        with pytest.warns(UserWarning, match="does not implement memory strategy"):
            prop = PropTorch("acoustic", backend="cuda", cuda_options=opts, **SETTINGS)
        assert prop._memory == {}
    assert prop.memory is memory
    v, amp = _problem()
    ref = _loss_and_grads(PropTorch("acoustic", impl="c", **SETTINGS), v, amp)
    for a, b in zip(_loss_and_grads(prop, v, amp), ref, strict=True):
        _close(a, b)


@needs_binding
def test_memory_none_strategy_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prop = PropTorch(
            "acoustic", impl="c", backend_options=CUDAOptions(memory=MemoryOptions()), **SETTINGS
        )
    assert prop.memory == MemoryOptions()


# -- errors -------------------------------------------------------------------------
def test_option_block_must_match_backend():
    with pytest.raises(ValueError, match="CUDAOptions configure the compiled implementation"):
        PropTorch("acoustic", backend="eager", cuda_options=CUDAOptions(), **SETTINGS)
    with pytest.raises(ValueError, match="EagerOptions configure the eager implementation"):
        PropTorch("acoustic", backend="cuda", eager_options=EagerOptions(), **SETTINGS)
    with pytest.raises(ValueError, match="use_ckpt checkpoints the eager time loop"):
        PropTorch("acoustic", impl="c", use_ckpt=True, **SETTINGS)
    with pytest.raises(ValueError, match="backend='eager' selects impl='eager'"):
        PropTorch("acoustic", backend="eager", impl="c", **SETTINGS)
    with pytest.raises(TypeError, match="backend_options must be"):
        PropTorch("acoustic", backend_options=MemoryOptions(), **SETTINGS)


def test_bad_settings_and_models():
    with pytest.raises(TypeError, match="did you mean 'pml_width'"):
        PropTorch("acoustic", impl="eager", pml_widht=4, **SMALL)
    with pytest.raises(ValueError, match="did you mean 'acoustic'"):
        PropTorch("acustic", impl="eager", **SMALL)
    prop = PropTorch("acoustic", impl="eager", **SETTINGS)
    v, amp = _problem()
    with pytest.raises(TypeError, match=r"takes 1 model tensor\(s\)"):
        prop(v, v, source_amplitudes=amp)
    with pytest.raises(ValueError, match="CFL"):
        PropTorch("acoustic", impl="eager", **{**SETTINGS, "dt": 0.05})(v, source_amplitudes=amp)


# -- fallback when the compiled binding is missing ------------------------------------
@pytest.mark.parametrize("kw", [{"impl": "c"}, {"impl": None}, {"backend": "cuda"}])
def test_fallback_warning_when_binding_hidden(monkeypatch, kw):
    monkeypatch.setattr(_impl, "binding_error", lambda: "ImportError: hidden for the test")
    with pytest.warns(UserWarning, match="falling back to impl='eager'"):
        prop = PropTorch("acoustic", **kw, **SETTINGS)
    assert prop.impl == "eager"
    v, amp = _problem()
    _, g_v, _ = _loss_and_grads(prop, v, amp)
    assert float(g_v.abs().max()) > 0


def test_eager_never_warns(monkeypatch):
    monkeypatch.setattr(_impl, "binding_error", lambda: "ImportError: hidden for the test")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert PropTorch("acoustic", impl="eager", **SETTINGS).impl == "eager"
