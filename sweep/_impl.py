"""Choice between the compiled kernels (impl="c") and the eager Array-API path."""

from __future__ import annotations

import warnings

IMPLS = (None, "auto", "c", "eager")


def binding_error() -> str | None:
    """None when ``sweep._C`` imports, else the reason it does not."""
    try:
        from . import _C  # noqa: F401
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def resolve_impl(impl: str | None, *, stacklevel: int = 3) -> str:
    """Return "c" or "eager" for a requested ``impl``.

    ``None``/"auto" and "c" use the compiled kernels when ``sweep._C`` imports
    and otherwise fall back to "eager" with a ``UserWarning`` naming the reason.
    """
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of None, 'auto', 'c' or 'eager', got {impl!r}")
    if impl == "eager":
        return "eager"
    reason = binding_error()
    if reason is None:
        return "c"
    warnings.warn(
        f"sweep._C is not available ({reason}); falling back to impl='eager', which is much "
        "slower. Build sweep from source with a C compiler (pip install .) to enable impl='c'.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return "eager"
