"""Fields of Maxwell's equations on the Yee grid, and the source and receiver components.

Array axes are named ``z, x`` (2D) or ``z, y, x`` (3D), in array order; the
field components are named by the Cartesian direction they point along.  On
the Yee grid a field's index ``i`` along an array axis is the position ``i``
or ``i + 1/2`` (staggered along that axis)::

    E_c   staggered along the axis of c         (the middle of a cell edge)
    H_c   staggered along the other axes         (the middle of a cell face)

TM2D (axes z, x; nothing varies along y) keeps ``ey`` (on the nodes), ``hx``
(staggered along z) and ``hz`` (staggered along x); 3D keeps all six.  The
curl is written once with the Levi-Civita symbol, ``(curl F)_a = sum_bc
eps_abc d_b F_c``, over the array axes present, so TM2D is 3D without the
derivatives along y.
"""

from __future__ import annotations

from typing import Any

from ..._staggered import check_point_kinds

AXES = {2: ("z", "x"), 3: ("z", "y", "x")}
COMPONENTS = ("x", "y", "z")


def levi_civita(a: str, b: str, c: str) -> int:
    """Return the Levi-Civita symbol of three component names."""
    if len({a, b, c}) < 3:
        return 0
    return 1 if a + b + c in ("xyz", "yzx", "zxy") else -1


def electric(ndim: int) -> tuple[str, ...]:
    """Components of E in the state (``ey`` in TM2D)."""
    return ("ey",) if ndim == 2 else tuple("e" + c for c in COMPONENTS)


def magnetic(ndim: int) -> tuple[str, ...]:
    """Components of H in the state (``hx``, ``hz`` in TM2D)."""
    return ("hx", "hz") if ndim == 2 else tuple("h" + c for c in COMPONENTS)


def fields(ndim: int) -> dict[str, frozenset[int]]:
    """Fields in update order (H, then E), each with the array axes it is staggered along."""
    axes = AXES[ndim]
    out = {}
    for name in (*magnetic(ndim), *electric(ndim)):
        along = {i for i, a in enumerate(axes) if (a == name[1]) == (name[0] == "e")}
        out[name] = frozenset(along)
    return out


def curl_terms(name: str, ndim: int) -> list[tuple[str, int, int]]:
    """``(field, axis, sign)`` of the curl of the other field at component ``name``.

    For ``ea``: ``(curl H)_a = sum eps_abc d_b H_c``; for ``ha``: the same of E.
    ``axis`` is the array axis of ``b``; only fields and axes that exist.
    """
    other = magnetic(ndim) if name[0] == "e" else electric(ndim)
    out = []
    for d, b in enumerate(AXES[ndim]):
        for f in other:
            s = levi_civita(name[1], b, f[1])
            if s:
                out.append((f, d, s))
    return out


def memory_variables(ndim: int) -> list[tuple[str, str, int]]:
    """(name, field, axis) of the C-PML memory variable of every derivative of the curls.

    The name is ``m_<field>_<axis>``, e.g. ``m_ey_z`` for ``d ey / dz``.
    """
    seen = {}
    for name in fields(ndim):
        for f, d, _ in curl_terms(name, ndim):
            seen[(f, d)] = f"m_{f}_{AXES[ndim][d]}"
    return [(key, f, d) for (f, d), key in seen.items()]


def check_components(value: Any, count: int, ndim: int, role: str) -> tuple[str, ...]:
    """Validate ``source_component`` / ``receiver_component``: one per column.

    ``"ex"``, ``"ey"``, ``"ez"`` (3D; TM2D has ``"ey"`` only); one string for
    all or one per source / receiver.  Unknown names raise with the closest.
    """
    table = electric(ndim)
    why = "does not exist in TM2D (its only electric component is 'ey')"
    elsewhere = {n: why for n in electric(3) if n not in table}
    return check_point_kinds(
        value, count, f"{role}_component", role, table, "ey", elsewhere=elsewhere
    )
