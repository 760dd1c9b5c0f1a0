"""Run-time settings: one registry, set by keyword or by ``SWEEP_*`` environment variables.

Every setting has a keyword of :data:`sweep.config` and an environment
variable.  A value given by keyword wins over the environment variable, which
wins over the default.  Values are read when they are used (not at import),
so a variable set after ``import sweep`` still counts, and an invalid one is
reported, naming the variable, by the first call that needs it.
:meth:`Config.describe` lists every setting with its value and where the
value came from (``sweep diagnostics`` prints it).
"""

from __future__ import annotations

import difflib
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Config", "Setting", "config"]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"expected True or False (or one of {', '.join(_TRUE + _FALSE)})")


def _bit(value: Any) -> bool:
    # SWEEP_SIMD_ROWS has always taken exactly 0 or 1.
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return value.strip() == "1"
    raise ValueError("expected 0 or 1")


def _int_at_least(low: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError(f"expected an integer >= {low}")
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise ValueError(f"expected an integer >= {low}") from None
        if not isinstance(value, int) or value < low:
            raise ValueError(f"expected an integer >= {low}")
        return int(value)

    return parse


def _fraction(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number in (0, 1]")
    try:
        x = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise ValueError("expected a number in (0, 1]") from None
    if not 0 < x <= 1:
        raise ValueError("expected a number in (0, 1]")
    return x


_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
          "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30,
          "tib": 2**40}  # fmt: skip
_BYTES = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*$")


def _bytes(value: Any) -> int | None:
    """Parse a byte count: an integer, or a string such as ``"12GiB"`` or ``"500 MB"``."""
    if value is None:
        return None
    if isinstance(value, str):
        if value.strip().lower() in ("", "none", "auto"):
            return None
        m = _BYTES.match(value)
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError("expected a number of bytes such as 8000000000, '8GB' or '7.5GiB'")
        return int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("expected a number of bytes >= 0, a string such as '8GiB', or None")
    return int(value)


def _path(value: Any) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError("expected a path (str or os.PathLike) or None")
    return os.fspath(value)


def _blocking(value: Any) -> tuple[int, int, int] | None:
    """``"auto"`` / None (tuned at run time) or three integers ``steps, group, tile``."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "auto")):
        return None
    parts = value.split(",") if isinstance(value, str) else value
    try:
        steps, group, tile = (int(x) for x in parts)
    except (TypeError, ValueError):
        raise ValueError("expected 'auto' or three integers 'steps,group,tile'") from None
    return max(steps, 1), max(group, 1), max(tile, 1)


def _cache_home() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return os.path.join(base, "sweep", "cuda")


@dataclass(frozen=True)
class Setting:
    """One run-time setting.

    Attributes
    ----------
    name : str
        Keyword of :data:`sweep.config`.
    env : str
        Environment variable (``SWEEP_*``).
    default : object or callable
        Value when neither the keyword nor the variable is set; a callable is
        called at each read (defaults that depend on the environment).
    parse : callable
        Turns a keyword value or the variable's text into the value; raises
        ``ValueError`` with what it expected.
    doc : str
        One line for listings.
    """

    name: str
    env: str
    default: Any
    parse: Callable[[Any], Any]
    doc: str

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default


SETTINGS: tuple[Setting, ...] = (
    Setting("n_threads", "SWEEP_NUM_THREADS", 0, _int_at_least(0),
            "OpenMP threads of the CPU kernels when a call gives none (0: all cores)"),
    Setting("memory_fraction", "SWEEP_MEMORY_FRACTION", 0.8, _fraction,
            "share of the free memory the gradient planner may use when no byte limit is set"),
    Setting("memory_limit_host", "SWEEP_MEMORY_LIMIT_HOST", None, _bytes,
            "host byte budget of the gradient planner (None: memory_fraction of what is free)"),
    Setting("memory_limit_device", "SWEEP_MEMORY_LIMIT_DEVICE", None, _bytes,
            "GPU byte budget of the gradient planner (None: memory_fraction of what is free)"),
    Setting("tmpdir", "SWEEP_TMPDIR", None, _path,
            "folder for on-disk snapshot stores (None: the system's temporary folder)"),
    Setting("store_cache", "SWEEP_STORE_CACHE", True, _bool,
            "keep released host stores and wavefields for reuse by the next run"),
    Setting("time_blocking", "SWEEP_TIME_BLOCKING", None, _blocking,
            "CPU temporal blocking (steps, group, tile); None/'auto': tuned at run time"),
    Setting("simd_rows", "SWEEP_SIMD_ROWS", True, _bit,
            "CPU kernels run plain x ranges as explicit vector rows (0: scalar loops)"),
    Setting("cuda_cache", "SWEEP_CUDA_CACHE", True, _bool,
            "keep compiled CUDA kernels on disk across processes (off: emulate a cold start)"),
    Setting("cuda_cache_dir", "SWEEP_CUDA_CACHE_DIR", _cache_home, _path,
            "folder of the CUDA kernel cache"),
    Setting("fast_math", "SWEEP_FAST_MATH", False, _bool,
            "compile the CUDA kernels with --use_fast_math (changes results at round-off)"),
    Setting("debug", "SWEEP_DEBUG", False, _bool,
            "index bounds checks in the kernels, NaN/Inf checks of the wavefields, "
            "extra validation"),
    Setting("debug_check_every", "SWEEP_DEBUG_CHECK_EVERY", 1, _int_at_least(1),
            "debug mode: check the wavefields for NaN/Inf every this many time steps"),
)  # fmt: skip

_BY_NAME = {s.name: s for s in SETTINGS}
_UNSET = object()


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, list(_BY_NAME), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Restore:
    """What :meth:`Config.__call__` returns: a context manager that undoes the call."""

    def __init__(self, owner: Config, previous: dict[str, Any]) -> None:
        self._owner, self._previous = owner, previous

    def __enter__(self) -> Config:
        return self._owner

    def __exit__(self, *exc: object) -> None:
        self._owner._restore(self._previous)

    def __repr__(self) -> str:
        return repr(self._owner)


class Config:
    """The run-time settings of sweep (the one instance is :data:`sweep.config`).

    Call it with keywords to set values for this process; a keyword set to
    None goes back to the environment variable or the default.  The call
    returns a context manager that restores the previous keywords::

        sweep.config(debug=True)                 # from now on
        with sweep.config(fast_math=True):       # inside the block only
            ...

    Read a value as an attribute (``sweep.config.n_threads``).  The settings,
    their variables and defaults are listed in ``docs/configuration.md`` and
    by :meth:`describe`.
    """

    def __init__(self) -> None:
        self._keywords: dict[str, Any] = {}
        self._lock = threading.Lock()

    # -- setting ------------------------------------------------------------------
    def __call__(self, **settings: Any) -> _Restore:
        """Set settings by keyword (None: unset); return a context manager restoring them."""
        parsed = {}
        for name, value in settings.items():
            setting = _BY_NAME.get(name)
            if setting is None:
                raise TypeError(f"sweep.config got an unknown setting {name!r}{_suggest(name)}")
            if value is not None:
                try:
                    value = setting.parse(value)
                except ValueError as exc:
                    raise ValueError(
                        f"sweep.config({name}={value!r}): {exc} ({setting.doc})"
                    ) from None
            parsed[name] = value
        with self._lock:
            previous = {name: self._keywords.get(name, _UNSET) for name in parsed}
            for name, value in parsed.items():
                if value is None:
                    self._keywords.pop(name, None)
                else:
                    self._keywords[name] = value
        return _Restore(self, previous)

    def _restore(self, previous: dict[str, Any]) -> None:
        with self._lock:
            for name, value in previous.items():
                if value is _UNSET:
                    self._keywords.pop(name, None)
                else:
                    self._keywords[name] = value

    def reset(self) -> None:
        """Forget every value set by keyword (environment variables still count)."""
        with self._lock:
            self._keywords.clear()

    def keywords(self) -> dict[str, Any]:
        """Return the values set by keyword in this process (to pass on to worker processes)."""
        with self._lock:
            return dict(self._keywords)

    # -- reading ------------------------------------------------------------------
    def get(self, name: str) -> Any:
        """Return the value of setting ``name``: keyword, else environment variable, else default.

        Raises
        ------
        ValueError
            When the environment variable holds an invalid value (the message
            names the variable and what it expects).
        """
        return self._lookup(name)[0]

    def source(self, name: str) -> str:
        """Return where the value of ``name`` comes from.

        ``"sweep.config"`` (set by keyword), the name of its environment
        variable, or ``"default"``.
        """
        return self._lookup(name)[1]

    def _lookup(self, name: str) -> tuple[Any, str]:
        setting = _BY_NAME.get(name)
        if setting is None:
            raise AttributeError(f"sweep.config has no setting {name!r}{_suggest(name)}")
        with self._lock:
            value = self._keywords.get(name, _UNSET)
        if value is not _UNSET:
            return value, "sweep.config"
        text = os.environ.get(setting.env)
        if text is not None and text.strip():
            try:
                return setting.parse(text), setting.env
            except ValueError as exc:
                raise ValueError(
                    f"environment variable {setting.env}={text!r} is invalid: {exc} "
                    f"({setting.doc}); fix or unset it"
                ) from None
        return setting.default_value(), "default"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.get(name)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *_BY_NAME]

    def __iter__(self) -> Iterator[str]:
        return iter(_BY_NAME)

    def describe(self) -> list[dict[str, Any]]:
        """Every setting: name, value, source, env, default and doc.

        An invalid environment variable does not raise here: its entry has
        value None and ``source`` ``"invalid: <message>"``.
        """
        out = []
        for s in SETTINGS:
            try:
                value, source = self._lookup(s.name)
            except ValueError as exc:
                value, source = None, f"invalid: {exc}"
            out.append({"name": s.name, "value": value, "source": source, "env": s.env,
                        "default": s.default_value(), "doc": s.doc})  # fmt: skip
        return out

    def __repr__(self) -> str:
        items = ", ".join(f"{d['name']}={d['value']!r}" for d in self.describe())
        return f"sweep.config({items})"


config = Config()
