"""Choice between the compiled kernels (impl="c") and the eager Array-API path."""

from __future__ import annotations

import functools
import importlib.machinery
import os
import sys
from pathlib import Path
from typing import Any

from ._warn import warn_user

IMPLS = (None, "auto", "c", "eager")

EDITABLE_INSTALL = "pip install --no-build-isolation -e ."


@functools.cache
def compiled_module() -> Any:
    """``sweep._C``, or None where it does not import (the NumPy / eager fallbacks then)."""
    try:
        from . import _C
    except ImportError:
        return None
    return _C


def compiled_function(name: str) -> Any:
    """``sweep._C.<name>``, or None without the compiled kernels or in a build that lacks it."""
    return getattr(compiled_module(), name, None)


def binding_error() -> str | None:
    """None when ``sweep._C`` imports, else the reason it does not."""
    try:
        from . import _C  # noqa: F401
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _same_dir(entry: str, root: Path) -> bool:
    try:
        return Path(entry or os.curdir).resolve() == root
    except OSError:
        return False


def source_tree_hint() -> str | None:
    """Say what to do when ``sweep`` was imported from an unbuilt source checkout.

    Python puts the current directory (``python -c``, ``-m``, the REPL) or the
    script's folder first on ``sys.path``, so a script run from the
    repository root imports the ``sweep/`` folder there, which has no compiled
    ``sweep._C``, instead of the installed package.  An editable install
    (meson-python) imports the same folder through its own finder and builds
    ``_C``, so it is not this case.

    Returns
    -------
    str or None
        Sentences naming the checkout, any installed copy it hides and the
        fix; None when ``sweep`` is not an unbuilt source checkout.
    """
    spec = sys.modules[__package__].__spec__
    # The plain path-based loader exactly: an editable install's loader subclasses it.
    if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader:
        return None
    pkg = Path(__file__).resolve().parent
    root = pkg.parent
    if not ((pkg / "meson.build").is_file() and (root / "pyproject.toml").is_file()):
        return None  # installed packages have no meson.build
    others = [p for p in sys.path if not _same_dir(p, root)]
    other = importlib.machinery.PathFinder.find_spec(__package__, others)
    origin = getattr(other, "origin", None)
    where = f"Python imported sweep from the source checkout {root}, which has no built sweep._C"
    editable = (
        f"build this checkout in place with the editable install ({EDITABLE_INSTALL} in "
        f"{root}; it needs meson-python, meson, ninja, Cython and numpy, and rebuilds "
        "sweep._C on import)"
    )
    if origin is not None:
        return (
            f"{where}, instead of the installed sweep at {Path(origin).parent}, because it "
            "puts the current directory (or the script's folder) first on sys.path. Run from "
            f"another directory to use the installed sweep, or {editable}."
        )
    return (
        f"{where}, and found no installed sweep. Either {editable}, or install it "
        f"(pip install . in {root}) and run from another directory."
    )


def binding_fix() -> str:
    """Return what to do to get ``sweep._C``: the source-checkout hint, or build from source."""
    hint = source_tree_hint()
    if hint is not None:
        return hint
    return "Build sweep from source with a C compiler (pip install .) to enable impl='c'."


def resolve_impl(impl: str | None, *, compiled: bool = True, equation: str = "") -> str:
    """Return "c" or "eager" for a requested ``impl``.

    ``None``/"auto" and "c" use the compiled kernels when ``sweep._C`` imports
    and otherwise fall back to "eager" with a ``UserWarning`` naming the
    reason and the fix (see :func:`source_tree_hint`).  An equation without
    compiled kernels (``compiled=False``) runs eager for ``None``/"auto" and
    refuses "c" with a clear error.
    """
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of None, 'auto', 'c' or 'eager', got {impl!r}")
    if not compiled:
        if impl == "c":
            raise ValueError(
                f"sweep.{equation} has no compiled kernels yet, so impl='c' is not available; "
                "use impl='eager' (or None, which chooses it)"
            )
        return "eager"
    if impl == "eager":
        return "eager"
    reason = binding_error()
    if reason is None:
        return "c"
    warn_user(
        f"sweep._C is not available ({reason}); falling back to impl='eager', which is much "
        f"slower and differentiates PyTorch and JAX arrays only. {binding_fix()}"
    )
    return "eager"
