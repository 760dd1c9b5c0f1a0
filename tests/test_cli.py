"""The ``sweep`` command line: list, show, diagnostics, demo and helpful errors."""

from __future__ import annotations

import json
import re
import sys
import types

import pytest

import sweep
from sweep import _impl, cli, equations


def _run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_equations_table(capsys):
    code, out, _ = _run(capsys, "list", "equations")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split("  ")[0] == "Equation"
    for header in ("Dimensions", "Models", "Torch Binding", "Binding Ready"):
        assert header in lines[0]
    assert set(lines[1]) <= {"-", " "}
    rows = {line.split()[0]: line for line in lines[2:]}
    assert set(rows) == set(equations.names())
    row = rows["acoustic"].split()
    assert row[:4] == ["acoustic", "2D,", "3D", "v"]
    ready = "yes" if sweep.binding_available() else "no"
    assert row[4:] == ["yes", ready]


def test_list_equations_is_live(capsys, monkeypatch):
    monkeypatch.setattr(_impl, "binding_error", lambda: "ImportError: hidden for the test")
    extra = equations.EquationSpec("toy", ndims=(2,), models=("eps", "mu"), compiled=False)
    monkeypatch.setitem(equations.REGISTRY, "toy", extra)
    _, out, _ = _run(capsys, "list", "equations")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert rows["acoustic"][-2:] == ["yes", "no"]
    assert rows["toy"] == ["toy", "2D", "eps,", "mu", "no", "-"]


def test_show_equation(capsys):
    code, out, _ = _run(capsys, "show", "acoustic")
    assert code == 0
    assert out.startswith("acoustic")
    for word in ("models", "wavefields", "u_prev", "sources", "pressure", "receivers"):
        assert word in out
    assert "orders                2, 4, 6, 8" in out
    assert "accuracy" in out and "default 4" in out
    assert "pml_width" in out and "default 20" in out


def test_show_unknown_equation_suggests(capsys):
    code, out, err = _run(capsys, "show", "acustic")
    assert code == 2
    assert out == ""
    assert "unknown equation 'acustic'; did you mean 'acoustic'?" in err


def test_unknown_command_suggests(capsys):
    code, _, err = _run(capsys, "lst", "equations")
    assert code == 2
    assert "unknown command 'lst'; did you mean 'list'?" in err
    code, _, err = _run(capsys, "zzz")
    assert code == 2
    assert "choose from 'list', 'show', 'diagnostics', 'demo'" in err


def test_list_unknown_kind_suggests(capsys):
    code, _, err = _run(capsys, "list", "equatons")
    assert code == 2
    assert "did you mean 'equations'?" in err


def test_diagnostics_text(capsys):
    code, out, _ = _run(capsys, "diagnostics")
    assert code == 0
    keys = [line.split()[0] for line in out.splitlines()]
    assert keys[0] == "binding_available"
    assert "openmp_max_threads" in keys
    assert "sweep_version" in keys
    assert f"sweep_version{' ' * 8}" in out or sweep.__version__ in out


def test_diagnostics_json(capsys):
    code, out, _ = _run(capsys, "diagnostics", "--json")
    assert code == 0
    info = json.loads(out)
    assert info["binding_available"] == sweep.binding_available()
    assert info["sweep_version"] == sweep.__version__


def test_demo_forwards_arguments(capsys, monkeypatch):
    seen = []

    def fake_main(argv=None):
        seen.append(argv)
        print("demo ran")
        return 3

    monkeypatch.setitem(sys.modules, "sweep.demo", types.SimpleNamespace(main=fake_main))
    monkeypatch.setattr(sweep, "demo", sys.modules["sweep.demo"], raising=False)
    code, out, _ = _run(capsys, "demo", "--iterations", "2", "--out", "x.png")
    assert code == 3
    assert seen == [["--iterations", "2", "--out", "x.png"]]
    assert "demo ran" in out


def test_help_and_version(capsys):
    code, out, _ = _run(capsys)
    assert code == 0
    assert "usage: sweep" in out
    code, out, _ = _run(capsys, "--version")
    assert code == 0
    assert sweep.__version__ in out
    code, out, _ = _run(capsys, "--help")
    assert code == 0
    for command in ("list", "show", "diagnostics", "demo"):
        assert command in out


def test_argparse_usage_errors_return_2(capsys):
    code, _, err = _run(capsys, "show")
    assert code == 2
    assert "EQUATION" in err


@pytest.mark.parametrize("name", equations.names())
def test_every_registered_equation_shows(capsys, name):
    code, out, _ = _run(capsys, "show", name)
    assert code == 0
    assert name in out
    # Boundary saving: equations with a compiled stepper that runs backwards in time.
    spec = equations.get(name)
    want = "yes" if spec.compiled and spec.reversible else "no"
    assert re.search(rf"^  boundary saving +{want}$", out, re.M), out
