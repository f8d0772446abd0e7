"""Worker of python.torchrun-store: Communicator.from_env() under torchrun takes its unique id from
the launcher's store (a random key, a port the OS picks), not from MASTER_PORT + 1.

Rank 0 holds MASTER_PORT + 1 itself before from_env(), so the old rendezvous there could not bind;
two communicators in a row take two ids (msccl/attempt_0/unique_id/0 and /1 in the store); each
sums the ranks through an executed plan-free exchange (barrier) and a checked AllReduce plan.
Prints PASS on rank 0; any failure raises (FAIL_REGULAR_EXPRESSION: Traceback).
"""
import errno
import os
import socket

import torch
import torch.distributed as dist

import msccl

dist.init_process_group(backend="gloo")
rank, size = dist.get_rank(), dist.get_world_size()
blocker = None
if rank == 0:  # the port the environment path would guess is taken
    blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        blocker.bind(("", int(os.environ["MASTER_PORT"]) + 1))
        blocker.listen(1)
    except OSError as e:  # another process holds it already (torchrun's port is random): as good
        if e.errno != errno.EADDRINUSE:
            raise
        blocker.close()
        blocker = None
dist.barrier()
assert "MSCCL_BOOTSTRAP_SECRET" not in os.environ
comms = [msccl.Communicator.from_env(), msccl.Communicator.from_env()]
store = dist.distributed_c10d._get_default_store()
store.wait(["msccl/attempt_0/unique_id/0", "msccl/attempt_0/unique_id/1"])
plan = msccl.compile("stdlib:allreduce/allpairs", defines={"ranks": size})
for comm in comms:
    assert (comm.rank, comm.size) == (rank, size), (comm.rank, comm.size)
    comm.barrier()
    x = torch.full((size * 512,), float(rank + 1))
    msccl.Executor(comm).execute(x, x, plan, dtype=x.dtype)
    assert torch.equal(x, torch.full((size * 512,), float(size * (size + 1) // 2))), x[:4]
dist.barrier()
if rank == 0:
    print("PASS: two communicators from the launcher's store, MASTER_PORT + 1 untouched")
