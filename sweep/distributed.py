"""Shot-parallel gradients on more than one process or machine: Dask and torch.distributed.

Shots are independent until their gradients are summed, so a survey is split
into groups of shots; each group's forward pass, residual and adjoint pass
run in one process (no wavefield crosses the network) and only models,
observed data and gradients travel.

Dask (``pip install "sweep[dist]"``)
    :func:`gradient` runs the groups as tasks on a ``dask.distributed``
    client (a ``LocalCluster`` on one machine, e.g. from :func:`local_client`,
    ``dask-jobqueue`` on SLURM or PBS, any other cluster) and sums the group
    gradients in a fixed order; :class:`NpyLoader` lets the workers read the
    observed data themselves.

torch.distributed
    :func:`torch_init`, :func:`shard` and :func:`all_reduce` split the shots
    between the ranks of a ``torchrun`` job and sum the gradients of
    :class:`sweep.propagator.PropTorch` (see ``examples/fwi_torchrun.py``).

See ``docs/distributed.md`` for the set-up, the measured scaling and its
model.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._config import config

__all__ = [
    "PER_SHOT_KEYWORDS",
    "QUIET_DASK_CONFIG",
    "NpyLoader",
    "TorchContext",
    "all_reduce",
    "gradient",
    "l2_misfit",
    "local_client",
    "misfit_from_jax",
    "misfit_from_torch",
    "shard",
    "shot_groups",
    "torch_init",
]

# Keywords of a propagator whose leading axis is the shot (split between groups).
PER_SHOT_KEYWORDS = ("source_amplitudes", "source_locations", "receiver_locations")
# Gradients that are per shot (concatenated in shot order); the others are summed.
_PER_SHOT_GRADIENTS = ("source_amplitudes",)
# Models whose copies for all groups together are at most this many bytes travel
# inside each group's task instead of as one task the groups depend on: on
# loopback here 12 MB of task data cost ~25 ms and the dependency hop ~7 ms.
_INLINE_MODEL_BYTES = 2 << 20

Misfit = Callable[[np.ndarray, np.ndarray], tuple[float, np.ndarray]]
Loader = Callable[[slice], np.ndarray]


# -- misfits ------------------------------------------------------------------------------
def l2_misfit(predicted: np.ndarray, observed: np.ndarray) -> tuple[float, np.ndarray]:
    """Least-squares misfit: ``0.5 * sum((predicted - observed) ** 2)`` and its residual.

    Parameters
    ----------
    predicted, observed : numpy.ndarray
        Receiver data ``(n_shots, n_receivers, nt)`` of one group of shots.

    Returns
    -------
    loss : float
        The misfit, summed in float64.
    residual : numpy.ndarray
        Its derivative with respect to ``predicted``: ``predicted - observed``.
    """
    residual = predicted - observed
    return 0.5 * float(np.sum(np.square(residual, dtype=np.float64))), residual


def misfit_from_torch(loss_fn: Callable[[Any, Any], Any]) -> Misfit:
    """Turn a PyTorch loss ``loss_fn(predicted, observed) -> scalar tensor`` into a misfit.

    The residual is the loss's gradient with respect to ``predicted``, from
    torch autograd.  Pass the result as ``misfit=`` to :func:`gradient`; it
    runs on the workers, which need PyTorch.

    Parameters
    ----------
    loss_fn : callable
        Takes two CPU tensors (predicted, observed) and returns a scalar tensor.

    Returns
    -------
    callable
        ``misfit(predicted, observed) -> (loss, residual)`` on NumPy arrays.
    """
    return _TorchMisfit(loss_fn)


def misfit_from_jax(loss_fn: Callable[[Any, Any], Any]) -> Misfit:
    """Turn a JAX loss ``loss_fn(predicted, observed) -> scalar`` into a misfit.

    The residual is ``jax.grad`` of the loss with respect to ``predicted``.
    Pass the result as ``misfit=`` to :func:`gradient`; the workers need JAX.

    Parameters
    ----------
    loss_fn : callable
        Takes two JAX arrays (predicted, observed) and returns a scalar.

    Returns
    -------
    callable
        ``misfit(predicted, observed) -> (loss, residual)`` on NumPy arrays.
    """
    return _JaxMisfit(loss_fn)


class _TorchMisfit:
    def __init__(self, loss_fn: Callable[[Any, Any], Any]) -> None:
        self.loss_fn = loss_fn

    def __call__(self, predicted: np.ndarray, observed: np.ndarray) -> tuple[float, np.ndarray]:
        import torch

        pred = torch.from_numpy(np.ascontiguousarray(predicted)).requires_grad_(True)
        loss = self.loss_fn(pred, torch.from_numpy(np.ascontiguousarray(observed)))
        (residual,) = torch.autograd.grad(loss, pred)
        return float(loss.detach()), residual.numpy()


class _JaxMisfit:
    def __init__(self, loss_fn: Callable[[Any, Any], Any]) -> None:
        self.loss_fn = loss_fn

    def __call__(self, predicted: np.ndarray, observed: np.ndarray) -> tuple[float, np.ndarray]:
        import jax

        loss, residual = jax.value_and_grad(self.loss_fn)(predicted, observed)
        return float(loss), np.asarray(residual)


# -- shot groups --------------------------------------------------------------------------
def _check_counts(**counts: Any) -> None:
    """Raise ValueError naming the first count that is given (not None) and not an int >= 1."""
    for name, value in counts.items():
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1
        ):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def shot_groups(n_shots: int, n_groups: int) -> list[slice]:
    """Split ``n_shots`` into ``n_groups`` contiguous groups whose sizes differ by at most one.

    Parameters
    ----------
    n_shots : int
        Number of shots (at least 1).
    n_groups : int
        Number of groups, at least 1; more than ``n_shots`` gives ``n_shots``.

    Returns
    -------
    list of slice
        The groups in shot order; the first ``n_shots % n_groups`` are one shot longer.
    """
    _check_counts(n_shots=n_shots, n_groups=n_groups)
    n = min(int(n_groups), int(n_shots))
    size, extra = divmod(int(n_shots), n)
    out, start = [], 0
    for i in range(n):
        stop = start + size + (1 if i < extra else 0)
        out.append(slice(start, stop))
        start = stop
    return out


def shard(n_shots: int, rank: int, world_size: int) -> np.ndarray:
    """Shot indices of one rank: group ``rank`` of :func:`shot_groups` (``world_size`` groups).

    A rank beyond the number of shots gets none (an empty array).
    """
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size={world_size}), got {rank}")
    groups = shot_groups(n_shots, world_size)
    if rank >= len(groups):
        return np.arange(0)
    g = groups[rank]
    return np.arange(g.start, g.stop)


# -- Dask -----------------------------------------------------------------------------------
def _group_task(
    fn: Callable[..., Any],
    models: Sequence[np.ndarray],
    shots: dict[str, np.ndarray],
    grid_spacing: Any,
    dt: float,
    keywords: dict[str, Any],
    misfit: Misfit,
    settings: dict[str, Any],
) -> dict[str, Any]:
    """Forward, residual and adjoint of one shot group; runs on a worker."""
    from ._vjp import vjp

    shots = dict(shots)  # the worker's stored copy must stay whole for a rerun
    observed = shots.pop("observed")
    group = shots.pop("group")
    if callable(observed):  # a loader: the data are read here, on the worker
        observed = _load_group(observed, group)
    with config(**settings):  # the client's sweep.config keywords
        out, pullback = vjp(fn, *models, grid_spacing, dt, **shots, **keywords)
        predicted = np.asarray(out.receivers)
        if observed.shape != predicted.shape:
            raise ValueError(
                f"observed data of shots {group.start}-{group.stop - 1} have shape "
                f"{observed.shape}; the propagator recorded {predicted.shape}"
            )
        loss, residual = misfit(predicted, observed)
        residual = np.asarray(residual)
        if residual.shape != predicted.shape:
            raise ValueError(
                f"the misfit returned a residual of shape {residual.shape}; it must have the "
                f"predicted data's shape {predicted.shape}"
            )
        grads = pullback(np.ascontiguousarray(residual, dtype=predicted.dtype))
        getattr(pullback, "release", lambda: None)()
    return {"loss": float(loss), **{k: np.asarray(g) for k, g in grads.items()}}


def _load_group(loader: Loader, group: slice) -> np.ndarray:
    """Call an observed-data loader for one group's shots and check what it returns."""
    try:
        data = loader(group)
    except Exception as exc:
        raise RuntimeError(
            f"the observed-data loader {loader!r} failed for shots {group.start}-"
            f"{group.stop - 1}: {exc}"
        ) from exc
    data = np.asarray(data)
    if data.ndim != 3 or data.shape[0] != group.stop - group.start:
        raise ValueError(
            f"the observed-data loader returned shape {data.shape} for shots {group.start}-"
            f"{group.stop - 1}; it must return ({group.stop - group.start}, n_receivers, nt)"
        )
    return data


class NpyLoader:
    """Observed data read on the workers from a ``.npy`` file: ``observed=NpyLoader(path)``.

    The file, ``(n_shots, n_receivers, nt)`` as saved by :func:`numpy.save`,
    must be readable at ``path`` from every worker (a shared or parallel file
    system, or the same machine); each task memory-maps it and copies its own
    group's shots, so the data never pass through the client or the
    scheduler.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npy`` file, as the workers see it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)

    def __call__(self, shots: slice) -> np.ndarray:
        """Return the observed data of ``shots`` (a slice of shot indices)."""
        return np.array(np.load(self.path, mmap_mode="r")[shots])

    def __repr__(self) -> str:
        return f"NpyLoader({self.path!r})"


def _model_task(model: np.ndarray) -> np.ndarray:
    """Return ``model``: a task holding a model, recomputable if its worker dies."""
    return model


def _combine(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Sum two groups' results (a first): losses and model gradients add, per-shot ones join."""
    out = {}
    for key in a:
        if key in _PER_SHOT_GRADIENTS:
            out[key] = np.concatenate([a[key], b[key]], axis=0)
        else:
            out[key] = a[key] + b[key]
    return out


def _check_shots(observed: Any, keywords: dict[str, Any]) -> int:
    if callable(observed):  # a loader: the shots are those of the per-shot keywords
        given = [k for k in PER_SHOT_KEYWORDS if keywords.get(k) is not None]
        if not given:
            raise ValueError(
                "observed is a loader, so the number of shots comes from the per-shot "
                f"keywords; give at least one of {', '.join(PER_SHOT_KEYWORDS)}"
            )
        ref = given[0]
        n_shots = int(np.shape(keywords[ref])[0])
    elif not isinstance(observed, np.ndarray) or observed.ndim != 3:
        raise ValueError(
            "observed must be a NumPy array (n_shots, n_receivers, nt) or a loader "
            "observed(shots: slice) -> array run on the workers (e.g. "
            f"sweep.distributed.NpyLoader(path)), got "
            f"{type(observed).__name__}{getattr(observed, 'shape', '')}"
        )
    else:
        ref, n_shots = "observed", observed.shape[0]
    for name in PER_SHOT_KEYWORDS:
        x = keywords.get(name)
        if x is not None and np.shape(x)[:1] != (n_shots,):
            raise ValueError(
                f"{name} has {np.shape(x)[:1] or 'no'} shots along its first axis, but "
                f"{ref} has {n_shots}; give every per-shot array the same shots in the same order"
            )
    return n_shots


def _worker_slots(client: Any) -> list[str]:
    """One entry per worker thread (its worker's address), workers in address order."""
    try:
        threads = client.nthreads()
    except Exception:  # e.g. no workers yet: the scheduler places every task
        return []
    return [addr for addr in sorted(threads) for _ in range(int(threads[addr]))]


def gradient(
    fn: Callable[..., Any],
    *models: Any,
    grid_spacing: Any,
    dt: float,
    observed: np.ndarray,
    client: Any,
    misfit: Misfit | None = None,
    shots_per_group: int | None = None,
    retries: int = 2,
    progress: bool = False,
    **keywords: Any,
) -> tuple[float, dict[str, np.ndarray]]:
    """Misfit and gradient summed over shots, with groups of shots run as Dask tasks.

    Each group's forward pass, misfit and adjoint pass run in one task on one
    worker; the models travel as task arguments (inside each group's task
    when small, else once as a task the groups depend on, so that a lost
    copy can be made again), and the group results are summed in a fixed binary
    tree over the groups (on the workers, the last pair here), so a repeated
    call returns bitwise the same result, whichever workers ran which group,
    and the result equals one serial call over all shots to round-off.  A
    task whose worker dies is run again elsewhere (Dask
    reschedules it), and one that raises is retried ``retries`` times.

    Parameters
    ----------
    fn : callable
        A sweep propagator, e.g. :func:`sweep.acoustic`.
    *models : numpy.ndarray
        The propagator's model arrays, in its order (``v`` for acoustic).
    grid_spacing, dt
        As for ``fn``.
    observed : numpy.ndarray or callable
        Observed data ``(n_shots, n_receivers, nt)``, the shape of ``fn``'s
        ``receivers``; each group's shots travel inside its task (through
        the scheduler).  Or a loader ``observed(shots) -> array`` called on
        the worker with the group's ``slice`` of shot indices, e.g.
        :class:`NpyLoader` for a ``.npy`` file on a shared file system: the
        data then never pass through the client or the scheduler (read again
        if a worker dies).  With a loader, the number of shots is that of the
        per-shot keywords.  It must pickle, as ``misfit``.
    client : distributed.Client
        The Dask client whose workers run the groups.
    misfit : callable, optional
        ``misfit(predicted, observed) -> (loss, residual)`` on one group's
        NumPy data, the residual being d loss / d predicted; default
        :func:`l2_misfit`.  See :func:`misfit_from_torch` and
        :func:`misfit_from_jax` to write it with autodiff.  It must pickle:
        a module-level function, or a closure or lambda (sent by value).
    shots_per_group : int, optional
        Shots per task.  Default: the shots divided evenly among the
        client's worker threads (one group each).  Fix it to make results
        bitwise equal across clusters of different sizes (the grouping sets
        the order of the sum).
    retries : int
        Times a task that raised is run again before the call fails.
    progress : bool
        Show a tqdm bar over the groups (the Dask dashboard shows them too).
    **keywords
        The other keywords of ``fn``: ``source_amplitudes``,
        ``source_locations`` and ``receiver_locations`` (first axis: shots)
        are split between the groups; the rest go to every group as given.

    Returns
    -------
    loss : float
        The misfit summed over shots (for :func:`l2_misfit`,
        ``0.5 * sum((fn(...).receivers - observed) ** 2)``).
    grads : dict of numpy.ndarray
        What ``sweep.vjp``'s pullback returns for the residual: model
        gradients (``"v"``) summed over shots, ``"source_amplitudes"`` per
        shot.

    Notes
    -----
    Values set with ``sweep.config(...)`` in this process are applied on the
    workers for the duration of each task; ``SWEEP_*`` environment variables
    are the workers' own.  Dask's nanny starts workers with
    ``OMP_NUM_THREADS=1``, so each task uses one OpenMP thread unless
    ``n_threads`` is given.  On one machine, :func:`local_client` starts a
    cluster set up for this (quiet Dask settings, workers pinned to cores).
    """
    if not callable(getattr(fn, "__sweep_vjp__", None)):
        raise TypeError(f"fn must be a sweep propagator such as sweep.acoustic, got {fn!r}")
    if not hasattr(client, "scatter") or not hasattr(client, "submit"):
        raise TypeError(
            f"client must be a dask.distributed.Client, got {type(client).__name__}; create one "
            "with distributed.Client(distributed.LocalCluster()) or a dask-jobqueue cluster"
        )
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be a non-negative integer, got {retries!r}")
    if shots_per_group is not None and (
        isinstance(shots_per_group, bool)
        or not isinstance(shots_per_group, int)
        or shots_per_group < 1
    ):
        raise ValueError(f"shots_per_group must be a positive integer, got {shots_per_group!r}")
    if keywords.get("progress"):
        raise ValueError("progress=True inside a worker is not shown; pass progress to gradient")
    n_shots = _check_shots(observed, keywords)
    misfit = l2_misfit if misfit is None else misfit
    if not callable(misfit):
        raise TypeError("misfit must be callable: misfit(predicted, observed) -> (loss, residual)")
    try:
        from dask import config as dask_config
    except ImportError as exc:
        raise ImportError(
            f"sweep.distributed.gradient needs Dask ({exc}): pip install 'sweep[dist]'"
        ) from None
    models = tuple(np.asarray(m) for m in models)
    slots = _worker_slots(client)
    if shots_per_group is None:
        shots_per_group = math.ceil(n_shots / max(len(slots), 1))
    groups = shot_groups(n_shots, math.ceil(n_shots / shots_per_group))

    shared = {k: v for k, v in keywords.items() if k not in PER_SHOT_KEYWORDS}
    per_shot = {k: keywords[k] for k in PER_SHOT_KEYWORDS if keywords.get(k) is not None}
    payloads = [
        {
            "observed": observed if callable(observed) else observed[g],
            "group": g,
            **{k: np.asarray(v)[g] for k, v in per_shot.items()},
        }
        for g in groups
    ]
    # Models and shots travel as task arguments, never as scattered data: Dask's
    # active memory manager drops replicas that no queued task needs, so a broadcast
    # copy per worker does not last, and scattered data whose last copy dies cannot
    # be recomputed (every task waiting on it is then cancelled).  A task can: the
    # scheduler keeps its arguments and runs it again.  Small models go inside every
    # group's task (no dependency to wait for: the groups start ~7 ms sooner here);
    # larger ones go once, as a task returning them, copied to every worker before
    # the groups are submitted.  Dask runs a task only where its dependencies are,
    # so groups submitted while one worker held the models queued there together
    # (7 of 10 calls of two 0.4 s groups, the other worker idle).  No group is tied
    # to a worker's address: Dask never runs such a task, even loosely tied, on a
    # worker that joins after every worker it named has died.
    settings = config.keywords()
    with dask_config.set({"distributed.admin.large-graph-warning-threshold": "1TB"}):
        if len(payloads) * sum(m.nbytes for m in models) <= _INLINE_MODEL_BYTES:
            model_args: list[Any] = list(models)
        else:
            model_args = [client.submit(_model_task, m, pure=False) for m in models]
            try:
                client.replicate(model_args)
            except Exception:  # placement only: gather reports real failures
                pass
        tasks = [
            client.submit(_group_task, fn, model_args, shots, grid_spacing, dt, shared,
                          misfit, settings, retries=retries, pure=False)
            for shots in payloads
        ]  # fmt: skip
    # Fixed pairing (group 0 with 1, 2 with 3, ..., then the pairs): the sum order
    # does not depend on timing.  The last pair is summed here, which saves a task
    # round trip and gives bitwise the same sum.
    level = list(tasks)
    while len(level) > 2:
        pairs = [
            client.submit(_combine, level[i], level[i + 1], retries=retries, pure=False)
            for i in range(0, len(level) - 1, 2)
        ]
        level = pairs + level[len(pairs) * 2 :]
    if progress:
        _show_progress(client, tasks)
    parts = client.gather(level)
    total = parts[0] if len(parts) == 1 else _combine(parts[0], parts[1])
    loss = total.pop("loss")
    return loss, total


# Dask settings for workers that run one long task at a time.  Each worker's
# background threads (a 100 Hz stack profiler, a 20 ms event-loop watchdog,
# monitors) and the scheduler's and nannies' took 11 % of a core during the
# scaling benchmark's gradient (2 workers); on a machine whose cores all run
# shot groups, that is taken from the groups.  With these: 3.5 %.
QUIET_DASK_CONFIG: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,  # the dashboard's profile stays empty
    "distributed.admin.tick.interval": "1s",  # blocked-event-loop watchdog
    "distributed.worker.memory.monitor-interval": "1s",  # the nanny's memory checks
    "distributed.admin.system-monitor.interval": "2s",  # the dashboard's system plots
    "distributed.scheduler.work-stealing-interval": "1s",
}


def _pin_this_process(cores: list[int] | None) -> None:
    """Restrict every thread of this process (and those it starts later) to ``cores``."""
    if not cores or not hasattr(os, "sched_setaffinity"):
        return
    try:
        threads = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]  # the calling thread; threads started from it inherit
    for tid in threads:
        try:
            os.sched_setaffinity(tid, cores)
        except OSError:  # a thread that ended meanwhile
            pass


def _pinning_plugin(cores_by_name: dict[str, list[int]]) -> Any:
    """Make a worker plugin pinning worker ``name`` to ``cores_by_name[name]`` (restarts too)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class PinToCores(WorkerPlugin):
        name = "sweep-pin-to-cores"

        def __init__(self, cores: dict[str, list[int]]) -> None:
            self.cores = cores

        def setup(self, worker: Any) -> None:
            _pin_this_process(self.cores.get(str(worker.name)))

    return PinToCores(cores_by_name)


def local_client(
    n_workers: int | None = None,
    threads_per_worker: int = 1,
    *,
    pin: bool | None = None,
    **cluster_kwargs: Any,
) -> Any:
    """Start a ``LocalCluster`` set up for :func:`gradient` and return a client on it.

    Worker processes of ``threads_per_worker`` threads (default one, so one
    shot group per core), started with :data:`QUIET_DASK_CONFIG`: Dask's
    periodic background work in the workers, nannies and scheduler drops
    from 11 % to 3.5 % of a core while 2 workers compute (measured: see
    ``docs/distributed.md``).  ``client.close()`` also closes the cluster.
    For a cluster started otherwise (e.g. ``dask-jobqueue``), set the same
    values with ``dask.config.set(QUIET_DASK_CONFIG)`` before starting it.

    Parameters
    ----------
    n_workers : int, optional
        Worker processes; default the cores this process may use divided by
        ``threads_per_worker``.
    threads_per_worker : int
        Threads per worker (one task at a time per thread).
    pin : bool, optional
        Pin worker ``i`` (its threads) to its own ``threads_per_worker``
        cores.  Default (None): pin when the workers' threads fill exactly the
        cores this process may use, in worker processes, on Linux; True
        demands those conditions.  Two single-threaded groups pinned ran
        1-3 % faster each on a 2-core machine (``docs/distributed.md``).
    **cluster_kwargs
        Passed on to ``distributed.LocalCluster`` (``host``,
        ``dashboard_address``, ``memory_limit``, ...).

    Returns
    -------
    distributed.Client
    """
    _check_counts(n_workers=n_workers, threads_per_worker=threads_per_worker)
    try:
        import dask
        import distributed
    except ImportError as exc:
        raise ImportError(
            f"sweep.distributed.local_client needs Dask ({exc}): pip install 'sweep[dist]'"
        ) from None
    if pin not in (None, True, False):
        raise ValueError(f"pin must be None, True or False, got {pin!r}")
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_setaffinity") else []
    if n_workers is None:
        n_workers = max(1, (len(cores) or os.cpu_count() or 1) // threads_per_worker)
    cluster_kwargs.setdefault("processes", True)
    # Pinning is safe when each worker gets whole cores of its own: processes
    # (threads of one process would share one set), every allowed core used once.
    fits = (
        bool(cores) and cluster_kwargs["processes"] and n_workers * threads_per_worker == len(cores)
    )
    if pin and not fits:
        raise ValueError(
            f"pin=True needs worker processes whose threads fill exactly the {len(cores)} "
            f"cores this process may use; got {n_workers} worker(s) x {threads_per_worker} "
            f"thread(s), processes={cluster_kwargs['processes']}; pass pin=None or False"
        )
    # The scheduler, nannies and workers read these when they start (the worker
    # processes receive a copy of this process's Dask config).
    with dask.config.set(QUIET_DASK_CONFIG):
        client = distributed.Client(
            n_workers=int(n_workers), threads_per_worker=int(threads_per_worker), **cluster_kwargs
        )
    if fits and pin is not False:
        # LocalCluster names its workers 0, 1, ...; a restarted worker keeps its name.
        tpw = int(threads_per_worker)
        by_name = {str(i): cores[i * tpw : (i + 1) * tpw] for i in range(int(n_workers))}
        client.register_plugin(_pinning_plugin(by_name))
    return client


def _show_progress(client: Any, tasks: list[Any]) -> None:
    from distributed import as_completed
    from tqdm.auto import tqdm

    with tqdm(total=len(tasks), desc="sweep shot groups", unit="group") as bar:
        for _ in as_completed(tasks, loop=client.loop, raise_errors=False):
            bar.update(1)


# -- torch.distributed ----------------------------------------------------------------------
@dataclass(frozen=True)
class TorchContext:
    """The place of this process in a ``torchrun`` job (or a job of one process).

    Attributes
    ----------
    rank, world_size, local_rank : int
        From torchrun's ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` (0, 1, 0
        without torchrun).
    device : torch.device
        ``cuda:<local_rank>`` with NCCL, else ``cpu``; set as the current
        CUDA device before the process group starts.
    backend : str or None
        ``"nccl"``, ``"gloo"``, or None for a single process without a group.
    """

    rank: int
    world_size: int
    local_rank: int
    device: Any
    backend: str | None

    @property
    def is_main(self) -> bool:
        """True on rank 0 (print, save and show progress there)."""
        return self.rank == 0


def torch_init(backend: str | None = None, *, timeout_s: float = 600.0) -> TorchContext:
    """Join the ``torchrun`` job this process belongs to; a single process needs no job.

    Reads ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` from the environment
    (torchrun sets them).  With NCCL it sets each rank's CUDA device to
    ``cuda:<local_rank>`` before it starts the process group and passes it as
    the group's device, so that collectives never run on a device other ranks
    do not expect (a known source of wrong DDP results when left implicit).
    Without torchrun it returns a context of one process and starts nothing,
    so the same script runs with ``python script.py`` and with ``torchrun``.

    Parameters
    ----------
    backend : {"nccl", "gloo"}, optional
        Default: ``"nccl"`` when CUDA is available, else ``"gloo"``.
    timeout_s : float
        Seconds a collective may wait before the job fails.

    Returns
    -------
    TorchContext
    """
    import datetime
    import inspect

    import torch
    import torch.distributed as dist

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend not in ("nccl", "gloo"):
        raise ValueError(f"backend must be 'nccl' or 'gloo', got {backend!r}")
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise RuntimeError("backend='nccl' needs CUDA; use backend='gloo' on CPUs")
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)  # before the group starts: each rank its own GPU
    else:
        device = torch.device("cpu")
    if world == 1:
        return TorchContext(0, 1, 0, device, None)
    if not dist.is_initialized():
        kwargs: dict[str, Any] = {"timeout": datetime.timedelta(seconds=timeout_s)}
        takes_device = "device_id" in inspect.signature(dist.init_process_group).parameters
        if backend == "nccl" and takes_device:
            kwargs["device_id"] = device  # torch >= 2.3: the group binds to this device
        dist.init_process_group(backend, rank=rank, world_size=world, **kwargs)
    return TorchContext(rank, world, local_rank, device, backend)


def all_reduce(tensors: Any, ctx: TorchContext, *, average: bool = False) -> None:
    """Sum tensors (e.g. gradients) over the ranks, in place; a no-op for one process.

    The tensors are packed into one buffer per dtype, so a call is one
    collective per dtype.
    Every rank ends with the same values (the backend reduces each element
    once and sends the result to all ranks), so parameters updated from them
    stay identical across ranks.

    Parameters
    ----------
    tensors : torch.Tensor or iterable of torch.Tensor
        Tensors on ``ctx.device``, or parameters: then their ``.grad`` (those
        without a gradient are skipped).
    ctx : TorchContext
        From :func:`torch_init`.
    average : bool
        Divide by the world size (the mean instead of the sum).
    """
    import torch

    items = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
    flat_in = []
    for t in items:
        if isinstance(t, torch.nn.Parameter) or (t.requires_grad and t.is_leaf):
            t = t.grad
        if t is not None:
            flat_in.append(t)
    if ctx.world_size == 1 or not flat_in:
        return
    import torch.distributed as dist

    by_dtype: dict[Any, list[Any]] = {}
    for t in flat_in:  # one buffer per dtype: float32 gradients are not sent as float64
        by_dtype.setdefault(t.dtype, []).append(t)
    for group in by_dtype.values():
        buffer = torch.cat([t.reshape(-1) for t in group])
        dist.all_reduce(buffer, op=dist.ReduceOp.SUM)
        if average:
            buffer /= ctx.world_size
        offset = 0
        for t in group:
            t.copy_(buffer[offset : offset + t.numel()].view_as(t))
            offset += t.numel()
