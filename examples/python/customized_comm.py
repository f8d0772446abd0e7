"""A customized communicator for PyTorch (the shape of MSCCL++'s CustomizedComm), on CPU tensors.

    torchrun --nproc_per_node=4 customized_comm.py
    python3 -m msccl.torchrun --nproc_per_node=4 customized_comm.py   # Debian 12's torch 1.13

torchrun sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT. The script starts two process
groups side by side: torch.distributed on the gloo backend (which takes MASTER_PORT for its
store) and an msccl Communicator whose unique id rank 0 hands out through that store (as PyTorch
does for NCCL's; no MPI). CustomizedComm.all_reduce selects a registered plan for the
tensor's size and runs it in place on the tensor's memory through data_ptr(); every result is
checked against torch.distributed.all_reduce on gloo. Exits non-zero on any difference.

With MSCCL_PLANS set to a plan directory (msccl-tune -o DIR writes one, with an index of size
ranges), the registry takes its plans instead of the two compiled here:

    msccl-tune --topology hgx-h100 --ranks 4 --collective allreduce -o tuned/
    MSCCL_PLANS=tuned/ torchrun --nproc_per_node=4 customized_comm.py
"""
import os
import sys

import torch
import torch.distributed as dist

import msccl



def nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


class CustomizedComm:
    """all_reduce through msccl plans; the plans are compiled (cached) and registered once."""

    def __init__(self, comm: msccl.Communicator):
        self.comm = comm
        self.rank = comm.rank
        self.world_size = comm.size
        self.executor = msccl.Executor(comm)
        self.registry = msccl.PlanRegistry()
        if os.environ.get("MSCCL_PLANS"):
            # A plan directory (e.g. msccl-tune's winners and their size ranges).
            self.registry.register_directory(os.environ["MSCCL_PLANS"])
            return
        n = {"ranks": self.world_size}
        # In-place AllReduce plans: all-pairs (one step) for small tensors, the ring above 32 KiB.
        self.registry.register(msccl.compile("stdlib:allreduce/allpairs", defines=n),
                               name="allpairs", max_bytes=32 << 10, tags=["low-latency"])
        self.registry.register(msccl.compile("stdlib:allreduce/ring", defines=n),
                               name="ring", min_bytes=(32 << 10) + 1, tags=["bandwidth"])

    def all_reduce(self, tensor: torch.Tensor, op=dist.ReduceOp.SUM):
        """In place, as torch.distributed.all_reduce. Returns the name of the plan that ran."""
        assert op == dist.ReduceOp.SUM, "the registered plans sum"
        request = self.comm.request("allreduce", nbytes(tensor), in_place=True)
        chosen = self.registry.select(request)
        if chosen is None:
            raise RuntimeError(self.registry.explain_text(request))
        # The tensor's memory through data_ptr(); its dtype for the reduction.
        self.executor.execute(tensor, tensor, chosen.plan, dtype=tensor.dtype, op=op)
        return chosen.name

    def barrier_cpu(self):
        self.comm.barrier()

    def destroy(self):
        self.executor = None
        self.registry = None
        self.comm = None


def main():
    dist.init_process_group(backend="gloo")
    comm = CustomizedComm(msccl.Communicator.from_env())
    assert (comm.rank, comm.world_size) == (dist.get_rank(), dist.get_world_size())
    comm.barrier_cpu()
    failures = 0
    cases = [(1024, torch.float32), (64 << 10, torch.float32), (4096, torch.int32)]
    for elements, dtype in cases:
        torch.manual_seed(100 + comm.rank)
        # Integer values: any summation order gives the same exact result.
        x = torch.randint(-1000, 1000, (elements,), dtype=dtype)
        expect = x.clone()
        dist.all_reduce(expect)  # gloo
        used = comm.all_reduce(x)  # msccl
        ok = torch.equal(x, expect)
        failures += 0 if ok else 1
        if comm.rank == 0:
            print(f"all_reduce {nbytes(x):>8} B {str(dtype):<13}: plan {used:<8} "
                  f"{'matches gloo' if ok else 'DIFFERS from gloo'}")
    comm.barrier_cpu()
    total = torch.tensor([failures])
    dist.all_reduce(total)
    if comm.rank == 0:
        print("CustomizedComm.all_reduce matches torch.distributed (gloo)" if total.item() == 0
              else f"FAIL: {total.item()} mismatches")
    comm.destroy()
    dist.destroy_process_group()
    return 0 if total.item() == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
