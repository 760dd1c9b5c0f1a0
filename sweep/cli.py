"""The ``sweep`` command line.

::

    sweep list equations      table of the registered equations (generated live)
    sweep show EQUATION       models, wavefields, sources, receivers, orders, options
    sweep diagnostics         compiled binding, OpenMP, CuPy/CUDA, versions and settings
    sweep precompile          compile every CUDA kernel into the kernel cache
    sweep demo [ARGS...]      the README demo (``sweep.demo.main``)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__, equations

__all__ = ["main"]

COMMANDS = ("list", "show", "diagnostics", "demo", "precompile")
LISTABLE = ("equations",)


class _Error(Exception):
    """A usage error reported as ``sweep: error: ...`` with exit status 2."""


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def list_equations() -> str:
    """Return the equation table: equation, dimensions, models, binding support and readiness."""
    from .backend.torch import binding

    ready = binding.is_available()
    rows = []
    for name in equations.names():
        spec = equations.REGISTRY[name]
        rows.append(
            [
                name,
                ", ".join(f"{n}D" for n in spec.ndims),
                ", ".join(spec.models),
                _yes(spec.compiled),
                _yes(spec.compiled and ready) if spec.compiled else "-",
            ]
        )
    headers = ["Equation", "Dimensions", "Models", "Torch Binding", "Binding Ready"]
    return _table(headers, rows)


def show_equation(name: str) -> str:
    """Everything the registry knows about one equation, as text."""
    try:
        spec = equations.get(name)
    except ValueError as exc:
        raise _Error(str(exc)) from None
    lines = [f"{spec.name}: {spec.description}" if spec.description else spec.name]
    fields = [
        ("dimensions", ", ".join(f"{n}D" for n in spec.ndims)),
        ("models", ", ".join(f"{m.name} ({m.constraint})" for m in spec.model_specs)),
        ("wavefields", ", ".join(spec.wavefields)),
        ("sources", ", ".join(spec.sources)),
        ("receivers", ", ".join(spec.receivers)),
        ("orders", ", ".join(str(o) for o in spec.orders)),
        ("compiled (impl='c')", _yes(spec.compiled)),
        ("boundary saving", _yes(spec.compiled and spec.reversible)),
        ("eager (impl='eager')", _yes(spec.eager_entry is not None)),
        ("function", spec.entry.replace(":", ".")),
    ]
    width = max(len(k) for k, _ in fields)
    lines += [f"  {k.ljust(width)}  {v}" for k, v in fields]
    lines.append("  options:")
    defaults = spec.option_defaults()
    width = max((len(k) for k in defaults), default=0)
    lines += [f"    {k.ljust(width)}  default {v!r}" for k, v in defaults.items()]
    return "\n".join(lines)


def _format_value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return _yes(value)
    return str(value)


def diagnostics_text(info: dict[str, Any]) -> str:
    """Format the diagnostics dict as aligned ``key: value`` lines.

    A ``"settings"`` entry (a list of :meth:`sweep.config.describe` rows)
    becomes a table of the run-time settings after the lines.
    """
    info = dict(info)
    settings = info.pop("settings", None)
    width = max(len(k) for k in info)
    text = "\n".join(f"{k.ljust(width)}  {_format_value(v)}" for k, v in info.items())
    if settings is None:
        return text
    rows = [[s["name"], _setting_value(s["value"]), s["source"], s["env"]] for s in settings]
    table = _table(["Setting", "Value", "From", "Variable"], rows)
    return f"{text}\nRun-time settings (sweep.config or SWEEP_* variables):\n{table}"


def _setting_value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, tuple):
        return ",".join(str(x) for x in value)
    return str(value)


def diagnostics() -> dict[str, Any]:
    """Return the diagnostics dict plus ``"settings"``: every run-time setting and its source."""
    from ._config import config
    from .backend.torch import binding

    info = binding.diagnostics()
    info["settings"] = config.describe()
    return info


def precompile() -> str:
    """Compile every CUDA kernel specialisation into the kernel cache; return a report line."""
    from . import _cuda_backend
    from ._config import config

    try:
        count = _cuda_backend.precompile()
    except RuntimeError as exc:
        raise _Error(str(exc)) from None
    return f"compiled {count} CUDA kernel modules into {config.get('cuda_cache_dir')}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sweep", description="Differentiable wave-equation propagation: inspect and demo."
    )
    parser.add_argument("--version", action="version", version=f"sweep {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("list", help="list registered items (equations)")
    p.add_argument("what", metavar="WHAT", help="what to list: equations")
    p = sub.add_parser("show", help="describe one equation")
    p.add_argument("equation", metavar="EQUATION")
    p = sub.add_parser(
        "diagnostics", help="compiled binding, OpenMP, CUDA, versions and run-time settings"
    )
    p.add_argument("--json", action="store_true", help="print the dict as JSON")
    sub.add_parser(
        "precompile",
        help="compile every CUDA kernel into the kernel cache (cuda_cache_dir), e.g. before a "
        "cluster job",
    )
    sub.add_parser("demo", help="run the README demo (arguments go to sweep.demo)")
    return parser


def _run(argv: list[str]) -> int:
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        raise _Error(f"unknown command {argv[0]!r}{equations.suggest(argv[0], COMMANDS)}")
    if argv[:1] == ["demo"]:
        from . import demo  # every further argument (--help included) belongs to the demo

        return int(demo.main(argv[1:]) or 0)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "list":
        if args.what not in LISTABLE:
            raise _Error(f"cannot list {args.what!r}{equations.suggest(args.what, LISTABLE)}")
        print(list_equations())
    elif args.command == "show":
        print(show_equation(args.equation))
    elif args.command == "diagnostics":
        info = diagnostics()
        print(json.dumps(info, indent=2, default=str) if args.json else diagnostics_text(info))
    elif args.command == "precompile":
        print(precompile())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sweep`` command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 2 for a usage error.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    except _Error as exc:
        print(f"sweep: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse: --help, --version and its own usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
