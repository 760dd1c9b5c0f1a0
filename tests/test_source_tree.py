"""Running from a source checkout without a built sweep._C: the warning says why and what to do.

Each case copies the package into a temporary "checkout" (no ``_C``) and runs
Python there in a subprocess, the way a script in the repository root runs.
``python -S`` skips site's ``.pth`` files, so an editable install's import
hook does not claim ``import sweep``; the site-packages folders are on
``PYTHONPATH`` instead, for NumPy and the rest.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

import sweep
from sweep import _impl

PROBE = r"""
import json, warnings
import numpy as np
import sweep
from sweep.models import ricker, surface_acquisition

v = np.full((20, 30), 2000.0, dtype=np.float32)
src, rec = surface_acquisition(v.shape, 1, 3)
kw = dict(source_amplitudes=ricker(10.0, 40, 1e-3)[None, None], source_locations=src,
          receiver_locations=rec, pml_width=4)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = sweep.acoustic(v, 10.0, 1e-3, **kw)
    try:
        sweep.vjp(sweep.acoustic, v, 10.0, 1e-3, **kw)
        error = None
    except ValueError as exc:
        error = str(exc)
print(json.dumps({
    "file": sweep.__file__,
    "impl": out.impl,
    "warnings": [str(w.message) for w in caught if "sweep._C" in str(w.message)],
    "error": error,
}))
"""


def _checkout(tmp_path: Path) -> Path:
    """A source checkout without ``_C``: the package plus the build files that mark it."""
    root = tmp_path / "checkout"
    package = Path(sweep.__file__).parent
    shutil.copytree(
        package, root / "sweep", ignore=shutil.ignore_patterns("_C*", "__pycache__", "*.so")
    )
    (root / "sweep" / "meson.build").write_text("# marks the source tree\n")
    (root / "pyproject.toml").write_text("[project]\nname = 'sweep'\n")
    return root


def _run(cwd: Path, *extra_path: Path) -> dict:
    path = [*(str(p) for p in extra_path), *_site_paths()]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    done = subprocess.run(
        [sys.executable, "-S", "-c", PROBE],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _site_paths() -> list[str]:
    path = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        path.append(site.getusersitepackages())
    return path


def test_unbuilt_checkout_without_install_says_how_to_build(tmp_path):
    # A non-editable install (CI's `pip install .`) puts a sweep package in
    # site-packages, which the child sees: that is the next test's case.
    if importlib.machinery.PathFinder.find_spec("sweep", _site_paths()) is not None:
        pytest.skip("an installed sweep is in site-packages here (the hiding-an-install case)")
    root = _checkout(tmp_path)
    got = _run(root)
    assert Path(got["file"]).resolve() == (root / "sweep" / "__init__.py").resolve()
    assert got["impl"] == "eager"
    warning = got["warnings"][0]  # sweep.acoustic's; sweep.vjp warns the same
    assert set(got["warnings"]) == {warning}
    assert warning.startswith("sweep._C is not available")
    assert f"source checkout {root.resolve()}" in warning
    assert "found no installed sweep" in warning
    assert "pip install --no-build-isolation -e ." in warning
    assert "run from another directory" in warning
    # The gradient error (NumPy has no autodiff) names the same cause and fix.
    assert "NumPy has none" in got["error"]
    assert f"source checkout {root.resolve()}" in got["error"]
    assert "pip install --no-build-isolation -e ." in got["error"]


def test_unbuilt_checkout_hiding_an_install_names_both(tmp_path):
    root = _checkout(tmp_path)
    installed = tmp_path / "site" / "sweep"
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    got = _run(root, installed.parent)
    warning = got["warnings"][0]
    assert f"instead of the installed sweep at {installed}" in warning
    assert "Run from another directory to use the installed sweep" in warning
    assert "pip install --no-build-isolation -e ." in warning


def test_installed_or_editable_sweep_gets_no_source_hint():
    # The test run's own sweep is installed or editable (its loader is not the
    # plain source loader), so a missing _C there is a build problem, not this.
    if _impl.binding_error() is not None:
        pytest.skip("sweep._C is not built here")
    assert _impl.source_tree_hint() is None


def test_fallback_message_without_checkout(monkeypatch):
    monkeypatch.setattr(_impl, "binding_error", lambda: "ImportError: hidden for the test")
    monkeypatch.setattr(_impl, "source_tree_hint", lambda: None)
    with pytest.warns(UserWarning, match=r"hidden for the test\); falling back.*pip install \."):
        assert _impl.resolve_impl(None) == "eager"


def test_every_cuda_source_is_installed():
    """cuda/meson.build installs every .cu and .h of cuda/: CuPy compiles them from the
    installed package, and a file missing there failed only in non-editable installs."""
    import re
    from pathlib import Path

    cuda = Path(__file__).resolve().parents[1] / "cuda"
    build = (cuda / "meson.build").read_text()
    listed = set(re.findall(r"'([\w.]+\.(?:cu|h))'", build))
    present = {p.name for p in cuda.iterdir() if p.suffix in (".cu", ".h")}
    assert present == listed, (sorted(present - listed), sorted(listed - present))
