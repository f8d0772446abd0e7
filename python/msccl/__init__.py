"""msccl: compile `.msccl` collective algorithms to MSCCL++ execution plans and run them.

The Python face of libmsccl (docs/integration.md, "Python"), in the shape of MSCCL++'s
customized communicator:

* ``compile("stdlib:allreduce/ring", defines={"ranks": 4})`` or ``compile(source=...)`` -> ``Plan``,
  in-process, through the on-disk cache (``MSCCL_CACHE_DIR``);
* ``Plan.load(path)``, ``Plan.from_json(text)``, ``plan.to_json()``;
* ``PlanRegistry``: ``register`` plans with what they are for, ``select`` one per call,
  ``explain`` why, ``set_selector`` (a Python callable);
* ``Communicator``: ``from_mpi()`` (mpirun; mpi4py's MPI too), ``from_env()`` (torchrun's RANK,
  WORLD_SIZE, MASTER_ADDR, MASTER_PORT; MPI when launched by mpirun), ``init_rank(get_unique_id(),
  world_size, rank)``, ``local(world_size)``;
* ``Executor(comm).execute(send, recv, plan)`` on anything with a data pointer: NumPy arrays
  (buffer protocol), PyTorch tensors (``data_ptr()``: CPU tensors, and CUDA tensors with a
  communicator of ``backend="cuda"``, the call then waiting for ``torch.cuda.current_stream()``),
  buffers, or int addresses with sizes;
  ``execute_local(plan, sends, recvs)`` runs every rank in this process.

Errors are ``msccl.Error`` subclasses carrying the library's message: ``CompileError`` (rendered
diagnostics), ``PlanError`` (JSON path), ``ArgumentError`` (also a ValueError), ``FileError`` (also an
OSError: an unreadable file), ``NoPlanError``,
``ExecutionError`` (``.kind``: InvalidSize, Deadlock, Misuse, Unsupported, Backend, ...).
"""

import os as _os

from . import _msccl
from ._msccl import (  # noqa: F401
    ArgumentError, CompileError, Communicator, Error, ExecutionError, Executor, FileError, NoPlanError, Plan, PlanError,
    PlanRegistry, RegisteredPlan, SelectRequest, __version__, compiler_version, data_types, default_cache_dir,
    execute_local, get_unique_id)


def _installed_stdlib():
    """<prefix>/share/msccl/stdlib when this package is installed under <prefix>/lib/pythonX.Y/site-packages."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    candidate = _os.path.normpath(_os.path.join(here, "..", "..", "..", "..", "share", "msccl", "stdlib"))
    return candidate if _os.path.isdir(candidate) else None


def compile(file=None, *, source=None, defines=None, include_dirs=(), options=None, verify=True, cache=True,
            cache_dir=None, info=None):
    """Compile a .msccl program to a ``Plan`` in-process, as ``mscclc`` does, through the cache.

    file: a .msccl file or ``"stdlib:NAME"`` (e.g. ``"stdlib:allreduce/ring"``); source: the program
    text instead. defines: ``{"ranks": 4}`` as ``-D ranks=4``; options: ``{"instances": 2}`` as
    ``--option instances=2``; include_dirs: ``-I`` directories; verify: the plan checks and the
    static verifier (``--no-verify`` when False). cache: read and write the on-disk cache (key: the
    source and its imports, the parameters, the compiler version) in cache_dir (default
    ``default_cache_dir()``: $MSCCL_CACHE_DIR, else ~/.cache/msccl). info: a dict to fill with
    ``cache_hit``, ``key``, ``cache_file``, ``sources``. Raises CompileError with the diagnostics.
    """
    if file is not None:
        file = _os.fspath(file)
    stdlib = None if _os.environ.get("MSCCL_STDLIB_PATH") else _installed_stdlib()
    return _msccl._compile(file, source=source, defines=dict(defines or {}),
                           include_dirs=[_os.fspath(d) for d in include_dirs], options=dict(options or {}),
                           stdlib_dir=stdlib, verify=verify, cache=cache,
                           cache_dir=None if cache_dir is None else _os.fspath(cache_dir), info=info)


_store_generation = [0]


def _launcher_store():
    """torch.distributed's store when this job has one: the default group's (after
    init_process_group), else torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE=True, at
    MASTER_ADDR:MASTER_PORT). None without torch or either store."""
    try:
        import torch.distributed as dist
    except Exception:  # noqa: BLE001 - no torch (or a broken one): no store
        return None
    try:
        if dist.is_available() and dist.is_initialized():
            return dist.distributed_c10d._get_default_store()
        if _os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            import datetime
            return dist.TCPStore(_os.environ["MASTER_ADDR"], int(_os.environ["MASTER_PORT"]),
                                 int(_os.environ["WORLD_SIZE"]), False, datetime.timedelta(seconds=300))
    except Exception:  # noqa: BLE001 - a store we cannot reach: the environment path says why
        return None
    return None


def _from_env(backend="cpu"):
    """This process's communicator, from how it was launched.

    torchrun (and other launchers that set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), in this
    order:
    * MSCCL_BOOTSTRAP_SECRET set: the unique-id bootstrap over TCP at MASTER_ADDR, port
      MSCCL_BOOTSTRAP_PORT or MASTER_PORT + 1, keyed by that secret (docs/integration.md);
    * the launcher's store reachable (torch.distributed initialized, or torchrun's agent store):
      rank 0 makes a unique id (a fresh random key, a port the OS picks) and hands it to the other
      ranks through the store, as PyTorch hands out NCCL's ncclUniqueId;
    * otherwise the unique-id bootstrap at MASTER_PORT + 1, keyed by TORCHELASTIC_RUN_ID (a warning
      says when the key derives from public data only).
    mpirun/srun: MPI (as from_mpi()). No MPI in the torchrun paths.
    backend: "cpu" (host memory) or "cuda" (the CUDA executor with one process per rank: torch
    CUDA tensors, the call waiting for torch's current stream).
    Raises msccl.Error when neither describes the job.
    """
    if backend not in ("cpu", "cuda"):
        raise ArgumentError("from_env: backend must be 'cpu' or 'cuda', not %r" % (backend,))
    if all(v in _os.environ for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
        store = None if _os.environ.get("MSCCL_BOOTSTRAP_SECRET") else _launcher_store()
        if store is None:
            return Communicator._from_environment(backend)
        rank, size = int(_os.environ["RANK"]), int(_os.environ["WORLD_SIZE"])
        # Every rank calls from_env the same number of times: the n-th call uses the n-th key.
        # A restarted worker group (TORCHELASTIC_RESTART_COUNT) never reads an earlier attempt's id.
        key = "msccl/attempt_%s/unique_id/%d" % (_os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"),
                                                 _store_generation[0])
        _store_generation[0] += 1
        if rank == 0:
            uid = get_unique_id()
            store.set(key, uid)
        else:
            uid = bytes(store.get(key))
        return Communicator.init_rank(uid, size, rank, backend=backend)
    if Communicator.launched_by_mpi():
        return Communicator.from_mpi(backend=backend)
    raise Error("Communicator.from_env: set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (torchrun does) "
                "or launch with mpirun")


Communicator.from_env = staticmethod(_from_env)
