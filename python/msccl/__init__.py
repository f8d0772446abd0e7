"""msccl: compile `.msccl` collective algorithms to MSCCL++ execution plans and run them.

The Python face of the msccl C++ library (docs/integration.md, "Python"):

* ``compile(file_or_stdlib_name, defines={...})`` or ``compile(source=...)`` -> ``Plan``;
* ``Plan.load(path)``, ``Plan.from_json(text)``, ``plan.to_json()``;
* ``execute_local(plan, sends, recvs)``: every rank of a plan in this process (CPU executor);
* ``Communicator.from_mpi()`` / ``Communicator.from_env()``: this process's rank of a job with one
  process per rank.

Buffers are anything with a data pointer: NumPy arrays (buffer protocol), PyTorch CPU tensors
(``data_ptr()``), or an int address with its size. Errors are ``msccl.Error`` subclasses
(``CompileError``, ``PlanError``, ``ExecutionError``) carrying the library's message.
"""

import os as _os

from . import _msccl
from ._msccl import *  # noqa: F401,F403
from ._msccl import __version__, Error, CompileError, PlanError, ExecutionError, Plan  # noqa: F401


def _installed_stdlib():
    """<prefix>/share/msccl/stdlib when this package is installed under <prefix>/lib/pythonX.Y/site-packages."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    candidate = _os.path.normpath(_os.path.join(here, "..", "..", "..", "..", "share", "msccl", "stdlib"))
    return candidate if _os.path.isdir(candidate) else None


def compile(file=None, *, source=None, defines=None, include_dirs=(), options=None, instances=None,
            protocol=None, verify=True):
    """Compile a .msccl program to a ``Plan`` in-process, as ``mscclc`` does.

    file: a path to a .msccl file or ``"stdlib:NAME"`` (e.g. ``"stdlib:allreduce/ring"``);
    source: the program's text instead of a file;
    defines: ``{"ranks": 4}`` as ``-D ranks=4``; include_dirs: ``-I`` directories;
    options: ``{"NAME": value}`` as ``--option NAME=VALUE``; instances / protocol: overrides;
    verify: run the plan checks and the static verifier (as mscclc does by default).
    Raises CompileError with the rendered diagnostics.
    """
    if file is not None:
        file = _os.fspath(file)
    stdlib = None if _os.environ.get("MSCCL_STDLIB_PATH") else _installed_stdlib()
    return _msccl._compile_uncached(file, source=source, defines=dict(defines or {}),
                                    include_dirs=[_os.fspath(d) for d in include_dirs],
                                    options=dict(options or {}), instances=instances, protocol=protocol,
                                    stdlib_dir=stdlib, verify=verify)
