"""Host buffers of the compiled kernels: zero-filled, and at the page offsets asked for."""

import inspect

import numpy as np
import pytest

import sweep
from sweep import _hostmem
from sweep._compiled import CompiledAcoustic
from sweep.acoustic import _prepare
from sweep.testing import random_problem


@pytest.mark.parametrize("shape", [(3, 50), (2, 1100, 1000)])  # ordinary and huge-page sizes
@pytest.mark.parametrize("phase", [None, 0, 1088, 4092])
def test_zeros_has_the_phase_and_is_zero(shape, phase):
    a = _hostmem.zeros(shape, np.float32, phase=phase)
    assert a.shape == shape and a.dtype == np.float32 and a.flags.c_contiguous
    assert not a.any()
    if phase is not None:
        assert a.ctypes.data % 4096 == phase
    a[...] = 1  # the whole array is writable memory
    assert a.sum() == a.size


def test_field_phases_are_distinct():
    phases = {_hostmem.field_phase(k) for k in range(64)}
    assert len(phases) == 64
    assert all(p % 64 == 0 for p in phases)


def test_kernel_fields_start_at_distinct_page_offsets():
    problem = random_problem(2, np.float32, nt=5)
    args = inspect.signature(sweep.acoustic).bind(**problem)
    args.apply_defaults()
    geom = _prepare(**args.arguments).geom
    engine = CompiledAcoustic(geom, np, np.dtype(np.float32))
    state = engine.new_state()
    adj = engine.new_adjoint(model=True, source=True)
    fields = [state.u_prev, state.u, adj.lam_prev, adj.lam, adj.g, adj.grad_v2dt2]
    for ax in engine.axes:
        fields += [*state.psi[ax], state.zeta[ax], *adj.P[ax], *adj.Z[ax]]
    fields.append(engine.kernel_v2dt2(np.ones(state.u.shape[1:], np.float32)))
    offsets = [f.ctypes.data % 4096 for f in fields]
    assert len(set(offsets)) == len(offsets)
