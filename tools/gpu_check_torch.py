"""The GPU check's torch step (tools/gpu-check.sh, step `torch`): PyTorch's own NCCL process group
on CUDA tensors, with libmsccl_nccl.so preloaded (LD_PRELOAD) and MSCCL_PLANS naming the plans,
as the seeds' integration guide runs it under torchrun with backend="nccl". Started once per rank
with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; every rank uses GPU 0 (the machine has one), so
the real NCCL cannot make its communicator (one GPU, several ranks) and the shim says so once and
runs the calls its plans take (MSCCL_BACKEND=cuda: CudaRankSession, CUDA IPC between processes).

Checks each result against torch's own, computed on the CPU: all_reduce in place (float32
exactly; float16 within one rounding per addition, as the order of additions differs; counts the
chunks divide and one they do not), all_reduce with ReduceOp.AVG (scaled after the plan's sum, on
the call's stream), all_gather_into_tensor and
reduce_scatter_tensor; then times 20 all_reduce calls of 8 KiB and 1 MiB (measured: the processes'
kernels share one GPU by time slices). Prints "torch-check rank R: PASS ..." or FAIL lines.
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=n)
    problems = []
    weight = sum(r + 1 for r in range(n))
    for count, dtype in [(4096, torch.float32), (262144, torch.float32), (4099, torch.float32), (8192, torch.float16)]:
        base = torch.arange(count, dtype=torch.float32) % 251
        x = (base * (rank + 1)).to(dtype).cuda()
        dist.all_reduce(x)
        torch.cuda.synchronize()
        expected = sum((base * (r + 1)).to(dtype).to(torch.float32) for r in range(n)).to(dtype)
        # float16 sums depend on the order of the additions (the ring's differs from torch's):
        # within one rounding per addition; float32 sums of these integers are exact.
        same = torch.equal(x.cpu(), expected) if dtype == torch.float32 else \
            torch.allclose(x.cpu().float(), expected.float(), rtol=(n - 1) * 2.0 ** -10, atol=0)
        if not same:
            bad = int((x.cpu() != expected).nonzero()[0])
            problems.append("all_reduce %d x %s: element %d is %s, torch says %s" %
                            (count, dtype, bad, x.cpu()[bad].item(), expected[bad].item()))
    # ncclAvg: the shim sums with the plan, then scales on the call's stream (Executor::copy waits
    # for the stream first: without that wait a copy could read the sum before the launch wrote it).
    base = torch.arange(65536, dtype=torch.float32) % 251
    x = (base * (rank + 1)).cuda()
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    torch.cuda.synchronize()
    expected = base * weight / n
    if not torch.allclose(x.cpu(), expected, rtol=1e-6, atol=0):
        bad = int((~torch.isclose(x.cpu(), expected, rtol=1e-6, atol=0)).nonzero()[0])
        problems.append("all_reduce AVG: element %d is %s, torch says %s" % (bad, x.cpu()[bad].item(), expected[bad].item()))
    part = 16384
    mine = (torch.arange(part, dtype=torch.float32) + 1000 * rank).cuda()
    gathered = torch.zeros(part * n, device="cuda")
    dist.all_gather_into_tensor(gathered, mine)
    expected = torch.cat([torch.arange(part, dtype=torch.float32) + 1000 * r for r in range(n)])
    if not torch.equal(gathered.cpu(), expected):
        problems.append("all_gather_into_tensor: wrong result")
    full = (torch.arange(part * n, dtype=torch.float32) % 101 * (rank + 1)).cuda()
    out = torch.zeros(part, device="cuda")
    dist.reduce_scatter_tensor(out, full)
    expected = (torch.arange(part * n, dtype=torch.float32) % 101 * weight)[rank * part:(rank + 1) * part]
    if not torch.equal(out.cpu(), expected):
        problems.append("reduce_scatter_tensor: wrong result")
    times = []
    for nbytes in [8192, 1 << 20]:
        x = torch.ones(nbytes // 4, device="cuda")
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times.append("%d B %.1f us" % (nbytes, (time.perf_counter() - t0) / 20 * 1e6))
    dist.destroy_process_group()
    for p in problems:
        print("torch-check rank %d: FAIL %s" % (rank, p))
    if not problems:
        print("torch-check rank %d: PASS (%d ranks; all_reduce per call, measured: %s)" % (rank, n, ", ".join(times)))
    sys.stdout.flush()
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
