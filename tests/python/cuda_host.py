"""python.cuda-host: the Python module's CUDA path with one process per rank, run under
`mpirun -np 2` on the host implementation of the device layer (MSCCL_CUDA_DEVICE=host), as
it runs on GPUs with torch CUDA tensors:

* Communicator.from_mpi(backend="cuda") runs plans with the CUDA executor in each process
  (CudaRankSession; its buffers and its peers' mapped from POSIX shared memory here, by CUDA IPC
  on a GPU);
* NumPy arrays (host memory, which the host device addresses) and a CUDA-tensor look-alike
  (device.type == "cuda", data_ptr()) are accepted; the look-alike passes an explicit stream
  (torch.cuda.current_stream() needs a CUDA torch);
* sum (out of place, and in place with LL packets) and avg (divided in a host copy of the device
  result) are checked element by element;
* a CPU-backend communicator refuses the CUDA tensor, naming backend='cuda'.
Run as several nodes (MSCCL_RANKS_PER_NODE, python.cuda-host-nodes), it runs the hierarchical
AllReduce instead, whose port channels between the nodes go host-staged over TCP.
Prints "PASS" on each rank; exits non-zero on any mismatch.
"""
import os
import sys

import numpy as np

import msccl


class FakeCudaTensor:
    """What hostView reads of a torch CUDA tensor; the memory is a NumPy array's."""

    class _Device:
        type = "cuda"
        index = None

    def __init__(self, array):
        self.array = array
        self.device = FakeCudaTensor._Device()
        self.dtype = "torch.float32"

    def data_ptr(self):
        return self.array.ctypes.data

    def element_size(self):
        return self.array.itemsize

    def numel(self):
        return self.array.size

    def is_contiguous(self):
        return True


def main():
    comm = msccl.Communicator.from_mpi(backend="cuda")
    rank, n = comm.rank, comm.world_size
    assert comm.backend == "cuda", comm.backend
    ex = msccl.Executor(comm)
    count = 4099  # not a multiple of the plan's chunks: uneven chunks on the device code too
    send = (np.arange(count, dtype=np.float32) % 97) * (rank + 1)
    expect_sum = (np.arange(count, dtype=np.float32) % 97) * sum(r + 1 for r in range(n))
    if comm.ranks_per_node < n:
        problems = across_nodes(comm, ex, send, expect_sum)
        where = ["(%d nodes)" % (n // comm.ranks_per_node)]
    else:
        problems = one_node(comm, ex, send, expect_sum)
        where = []
    for p in problems:
        print("FAIL: rank %d: %s" % (rank, p))
    print("PASS" if not problems else "FAIL", "rank", rank, *where)
    sys.stdout.flush()
    return 1 if problems else 0


def one_node(comm, ex, send, expect_sum):
    """The ring and LL all-pairs AllReduce with every rank on one node; returns the problems."""
    rank, n = comm.rank, comm.world_size
    plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": n, "inplace": False})
    count = send.size
    problems = []
    recv = np.zeros(count, dtype=np.float32)
    ex.execute(send, recv, plan)
    if not np.array_equal(recv, expect_sum):
        problems.append("sum: first difference at %d" % int(np.argmax(recv != expect_sum)))
    recv_t = FakeCudaTensor(np.zeros(count, dtype=np.float32))
    ex.execute(FakeCudaTensor(send), recv_t, plan, op="avg", stream=1)
    if not np.allclose(recv_t.array, expect_sum / n):
        problems.append("avg on the CUDA tensor look-alike: first difference at %d" %
                        int(np.argmax(~np.isclose(recv_t.array, expect_sum / n))))
    packets = msccl.compile("stdlib:allreduce/allpairs_packet", defines={"ranks": n, "inplace": True})
    inplace = send[:4096].copy()
    ex.execute(inplace, inplace, packets)  # in place, LL packets between the processes
    if not np.array_equal(inplace, expect_sum[:4096]):
        problems.append("in-place LL all-pairs: first difference at %d" % int(np.argmax(inplace != expect_sum[:4096])))
    if rank == 0:
        cpu = msccl.Executor(msccl.Communicator.local(n))
        try:
            cpu.execute(FakeCudaTensor(send), recv, plan, rank=0)
            problems.append("a CPU-backend communicator took a CUDA tensor")
        except ValueError as e:
            if "backend='cuda'" not in str(e):
                problems.append("the refusal does not name backend='cuda': %s" % e)
    return problems


def across_nodes(comm, ex, send, expect_sum):
    """The hierarchical AllReduce over this job's nodes, on NumPy arrays and the CUDA look-alike;
    returns the problems."""
    n = comm.world_size
    plan = msccl.compile("stdlib:allreduce/hierarchical",
                         defines={"ranks": n, "ranks_per_node": comm.ranks_per_node, "inplace": False})
    problems = []
    count = 4096 * n
    data = np.resize(send, count)
    expect = np.resize(expect_sum, count)
    recv = np.zeros(count, dtype=np.float32)
    ex.execute(data, recv, plan)
    if not np.array_equal(recv, expect):
        problems.append("hierarchical sum across nodes: first difference at %d" % int(np.argmax(recv != expect)))
    recv_t = FakeCudaTensor(np.zeros(count, dtype=np.float32))
    ex.execute(FakeCudaTensor(data), recv_t, plan, stream=1)
    if not np.array_equal(recv_t.array, expect):
        problems.append("hierarchical sum across nodes on the CUDA look-alike: first difference at %d" %
                        int(np.argmax(recv_t.array != expect)))
    return problems


if __name__ == "__main__":
    sys.exit(main())
