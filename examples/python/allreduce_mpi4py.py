"""A customized communicator in Python under mpirun, with mpi4py and NumPy.

    mpirun -np 4 python3 allreduce_mpi4py.py [--sizes 4096,262144]

Every rank compiles the plans it may use (through the on-disk cache, so only the first run
compiles), registers them with what they are for, and for each collective call asks the
registry which plan fits (collective, world size, ranks per node, message size, in-place). The
results are checked against MPI's own collectives (mpi4py) on the same NumPy arrays; the script
exits non-zero on any wrong element. Rank 0 prints which plan ran and the registry's reasons.
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI

import msccl


def build_registry(world_size):
    """Plans for this job size: a ring for large AllReduce, all-pairs for small ones, AllGather."""
    registry = msccl.PlanRegistry()
    n = {"ranks": world_size}
    registry.register(msccl.compile("stdlib:allreduce/ring", defines={**n, "inplace": False}),
                      name="allreduce-ring", min_bytes=64 << 10, tags=["ring"])
    registry.register(msccl.compile("stdlib:allreduce/allpairs", defines={**n, "inplace": False}),
                      name="allreduce-allpairs", max_bytes=(64 << 10) - 1, tags=["allpairs"])
    registry.register(msccl.compile("stdlib:allreduce/ring", defines=n), name="allreduce-ring-inplace")
    registry.register(msccl.compile("stdlib:allgather/ring", defines={**n, "inplace": False}),
                      name="allgather-ring")
    return registry


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4096,262144", help="AllReduce message sizes in bytes")
    args = parser.parse_args()
    world = MPI.COMM_WORLD
    comm = msccl.Communicator.from_mpi()  # MPI was initialised by mpi4py; msccl joins it
    assert (comm.rank, comm.size) == (world.Get_rank(), world.Get_size())
    registry = build_registry(comm.size)
    executor = msccl.Executor(comm)
    rng = np.random.default_rng(1234 + comm.rank)
    failures = 0

    for nbytes in [int(s) for s in args.sizes.split(",")]:
        # Integer-valued floats: every summation order gives the same exact sum.
        x = rng.integers(-1000, 1000, nbytes // 4).astype(np.float32)
        y = np.empty_like(x)
        chosen = registry.select(comm.request("allreduce", x.nbytes))
        executor.execute(x, y, chosen.plan)
        expect = np.empty_like(x)
        world.Allreduce(x, expect, op=MPI.SUM)
        wrong = int(np.count_nonzero(y != expect))
        failures += wrong
        if comm.rank == 0:
            print(f"allreduce {nbytes:>8} B: plan {chosen.name:<20} {'ok' if not wrong else f'{wrong} wrong'}")

    # In place (send buffer = receive buffer), int32.
    x = rng.integers(-1000, 1000, 1024).astype(np.int32)
    expect = np.empty_like(x)
    world.Allreduce(x, expect, op=MPI.SUM)
    chosen = registry.select(comm.request("allreduce", x.nbytes, in_place=True))
    executor.execute(x, x, chosen.plan)
    wrong = int(np.count_nonzero(x != expect))
    failures += wrong
    if comm.rank == 0:
        print(f"allreduce {x.nbytes:>8} B in place: plan {chosen.name:<20} {'ok' if not wrong else f'{wrong} wrong'}")

    # AllGather of int32: each rank sends n elements, receives n * size.
    mine = (np.arange(256, dtype=np.int32) + 10000 * comm.rank)
    gathered = np.empty(256 * comm.size, np.int32)
    chosen = registry.select(comm.request("allgather", gathered.nbytes))
    executor.execute(mine, gathered, chosen.plan)
    expect = np.empty_like(gathered)
    world.Allgather(mine, expect)
    wrong = int(np.count_nonzero(gathered != expect))
    failures += wrong
    if comm.rank == 0:
        print(f"allgather {gathered.nbytes:>8} B: plan {chosen.name:<20} {'ok' if not wrong else f'{wrong} wrong'}")

    if comm.rank == 0:
        print(registry.explain_text(comm.request("allreduce", 1024)))
    total = world.allreduce(failures, op=MPI.SUM)
    if comm.rank == 0:
        print("all results match MPI's" if total == 0 else f"FAIL: {total} wrong elements over all ranks")
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
