#!/usr/bin/env python3
"""nccl_case.py - the NCCL interposition test (nccl.interpose).

Compiles stdlib plans for 4 ranks into a plan directory with mscclc, runs the plain-C NCCL client
under `mpirun -np 4` with LD_PRELOAD=libmsccl_nccl.so MSCCL_BACKEND=cpu MSCCL_PLANS=<dir>
MSCCL_NCCL_LIB_PATH=<stand-in> MSCCL_DEBUG=INFO, and checks: the client's own result checks
passed (AllReduce/AllGather/ReduceScatter/AlltoAll through plans), MSCCL_DEBUG names the plan of
each planned call and a reason for each fallback, the planned calls never reached the stand-in,
every unplanned call reached it with its arguments (each "expect:" line of the client is in the
stand-in's log), and every rank's NCCL communicator was made from the one id rank 0 got from
the stand-in.

With --backend cuda-host the same run takes the shim's CUDA path (MSCCL_BACKEND=cuda, plans run
by the CUDA executor with one process per rank, CudaRankSession) on the host implementation of
the device layer (MSCCL_CUDA_DEVICE=host), and every rank must say its communicator runs plans on
the cuda backend."""
import argparse, os, re, shutil, subprocess, sys, tempfile

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mscclc", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--standin", required=True)
    ap.add_argument("--stdlib", required=True)
    ap.add_argument("--backend", choices=["cpu", "cuda-host"], default="cpu")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="nccl-case-")
    plans = os.path.join(tmp, "plans")
    os.mkdir(plans)
    # AlltoAll as a program: compiled at comm init through the cache (MSCCL_PLANS_DEFINES).
    shutil.copy(os.path.join(a.stdlib, "alltoall", "allpairs.msccl"), os.path.join(plans, "alltoall_allpairs.msccl"))
    # AllToAllV (symbolic sizes) for grouped send/recv sets with unequal counts.
    subprocess.run([a.mscclc, "stdlib:alltoallv/allpairs", "-o", os.path.join(plans, "alltoallv_allpairs.json"),
                    "-D", "ranks=4"], check=True)
    # Broadcast and Reduce (root 0; other roots run them renamed).
    for algo in ["broadcast/tree", "reduce/chain"]:
        subprocess.run([a.mscclc, "stdlib:" + algo, "-o", os.path.join(plans, algo.replace("/", "_") + ".json"),
                        "-D", "ranks=4", "-D", "inplace=false"], check=True)
    # Two-rank AllReduce for the communicators ncclCommSplit makes.
    subprocess.run([a.mscclc, "stdlib:allreduce/ring", "-o", os.path.join(plans, "allreduce_ring2.json"), "-D", "ranks=2",
                    "-D", "inplace=false"], check=True)
    for algo in ["allreduce/ring", "allgather/ring", "reducescatter/ring"]:
        out = os.path.join(plans, algo.replace("/", "_") + ".json")
        subprocess.run([a.mscclc, "stdlib:" + algo, "-o", out, "-D", "ranks=4", "-D", "inplace=false"], check=True)
    log = os.path.join(tmp, "standin.log")
    env = dict(os.environ)
    env.update(MSCCL_BACKEND="cpu" if a.backend == "cpu" else "cuda", MSCCL_CUDA_DEVICE="host", MSCCL_PLANS=plans, MSCCL_NCCL_LIB_PATH=a.standin, MSCCL_DEBUG="INFO",
               STANDIN_NCCL_LOG=log, MSCCL_CACHE_DIR=os.path.join(tmp, "cache"),
               MSCCL_PLANS_DEFINES="ranks=4,inplace=false", MSCCL_STDLIB_PATH=a.stdlib)
    cmd = [a.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4"]
    for k in ["LD_PRELOAD", "MSCCL_BACKEND", "MSCCL_PLANS", "MSCCL_NCCL_LIB_PATH", "MSCCL_DEBUG", "STANDIN_NCCL_LOG",
              "MSCCL_CACHE_DIR", "MSCCL_PLANS_DEFINES", "MSCCL_STDLIB_PATH", "MSCCL_CUDA_DEVICE"]:
        cmd += ["-x", k]
    env["LD_PRELOAD"] = a.preload
    cmd.append(a.client)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    problems = []
    if p.returncode != 0:
        problems.append("the client failed (exit %d)" % p.returncode)
    standin = open(log).read().splitlines() if os.path.exists(log) else []
    for line in p.stdout.splitlines():
        if line.startswith("expect: ") and line[8:] not in standin:
            problems.append("not in the stand-in's log: " + line[8:])
    # Planned calls stay with us: the stand-in saw no float32 sum allreduce of 4096, etc.
    for s in standin:
        if re.search(r"ncclAllReduce .* count=(4096|4001|0) ", s) or re.search(r"ncclAlltoAll ", s) or \
           re.search(r"ncclReduceScatter ", s) or re.search(r"ncclAllGather ", s):
            problems.append("a planned call reached NCCL: " + s)
    # The forwarded float64 allreduce of the client's group reached NCCL inside a real group.
    for rank in range(4):
        idx = [i for i, s in enumerate(standin) if re.match(r"ncclAllReduce rank=%d .* count=8 type=8 " % rank, s)]
        if len(idx) != 1:
            problems.append("rank %d's grouped float64 allreduce reached NCCL %d times" % (rank, len(idx)))
            continue
        pid = None
        for s in reversed(standin[:idx[0]]):
            m = re.match(r"ncclGroup(Start|End) pid=(\d+)", s)
            if m and m.group(1) == "Start":
                pid = m.group(2)
                break
        if pid is None:
            problems.append("rank %d's grouped float64 allreduce reached NCCL outside ncclGroupStart" % rank)
    ids = [re.search(r"id=(\w+)", s).group(1) for s in standin if s.startswith("ncclGetUniqueId")]
    inits = [re.search(r"id=(\w+)", s).group(1) for s in standin if s.startswith("ncclCommInitRank")]
    if len(ids) != 1 or len(inits) != 4 or set(inits) != set(ids):
        problems.append("NCCL's communicators were not all made from rank 0's NCCL id: %s / %s" % (ids, inits))
    want = "cpu backend, plans run" if a.backend == "cpu" else "cuda backend, plans run"
    for rank in range(4):
        if not re.search(r"MSCCL INFO rank %d of 4: communicator ready \(%s" % (rank, want), p.stderr):
            problems.append("rank %d's communicator does not say \"%s\"" % (rank, want))
        for algo in ["allreduce", "allgather", "reducescatter", "alltoall"]:
            if not re.search(r"MSCCL INFO rank %d: nccl\w+ \d+ bytes float32: plan \S*%s" % (rank, algo), p.stderr,
                             re.IGNORECASE):
                problems.append("no MSCCL_DEBUG line of rank %d's %s plan" % (rank, algo))
        for kind in ["AllToAll: plan \\S*alltoall_allpairs", "AllToAllV: plan \\S*alltoallv_allpairs"]:
            if not re.search(r"MSCCL INFO rank %d: ncclGroupEnd: 8 send/recv call\(s\) as an %s" % (rank, kind), p.stderr):
                problems.append("rank %d's grouped send/recv set did not run as an %s" % (rank, kind.split(":")[0]))
        if not re.search(r"MSCCL INFO rank %d: ncclGroupEnd: 2 send/recv call\(s\): NCCL \(no (send to|receive from) rank"
                         % rank, p.stderr):
            problems.append("rank %d's send/recv ring did not go to NCCL with its reason" % rank)
        if len(re.findall(r"MSCCL INFO rank %d: nccl(AllReduce|AllGather) 0 bytes: nothing to do" % rank, p.stderr)) != 2:
            problems.append("rank %d's count-0 calls were not answered at once" % rank)
        for api, nbytes, plan in [("ncclBroadcast", "4004 bytes float32", "broadcast_tree"),
                                  ("ncclReduce", "3108 bytes float32", "reduce_chain"),
                                  ("ncclBroadcast", "77 bytes uint8", "broadcast_tree"),
                                  ("ncclReduce", "396 bytes float32", "reduce_chain")]:
            if not re.search(r"MSCCL INFO rank %d: %s %s: plan %s " % (rank, api, nbytes, plan), p.stderr):
                problems.append("rank %d's %s of %s did not run plan %s" % (rank, api, nbytes, plan))
        if not re.search(r"MSCCL INFO rank \d: ncclAllReduce 16384 bytes float32: plan allreduce_ring2 ", p.stderr):
            problems.append("the split communicators' allreduce did not run the 2-rank plan")
        for what in ["16384 bytes float32: plan", "16384 bytes int32: plan"]:
            if len(re.findall(r"MSCCL INFO rank %d: ncclAllReduce %s" % (rank, what), p.stderr)) < 1:
                problems.append("rank %d: no planned allreduce %s" % (rank, what))
        if not re.search(r"MSCCL INFO rank %d: ncclAllReduce 256 bytes: NCCL \(the PreMulSum's scalar differs" % rank,
                         p.stderr):
            problems.append("rank %d's PreMulSum with per-rank scalars did not go to NCCL with its reason" % rank)
        if not any(re.match(r"ncclAllReduce rank=%d .* count=64 type=7 op=10\d\d " % rank, s) for s in standin):
            problems.append("rank %d's PreMulSum allreduce did not reach NCCL with NCCL's own op" % rank)
        if not re.search(r"MSCCL INFO rank %d: ncclAllReduce 512 bytes: NCCL \(element type float64" % rank, p.stderr):
            problems.append("no MSCCL_DEBUG fallback reason for rank %d's float64 allreduce" % rank)
        # Counts the plans' chunks do not divide run with uneven chunks (runtime/UnevenChunks.h).
        for api, nbytes, algo in [("ncclAllReduce", 16004, "allreduce"), ("ncclAllGather", 64016, "allgather"),
                                  ("ncclReduceScatter", 15952, "reducescatter"), ("ncclAlltoAll", 15952, "alltoall")]:
            if not re.search(r"MSCCL INFO rank %d: %s %d bytes float32: plan \S*%s" % (rank, api, nbytes, algo), p.stderr):
                problems.append("rank %d's %s of %d bytes (an odd count) did not run a plan" % (rank, api, nbytes))
        if not re.search(r"MSCCL INFO rank %d: ncclAllReduce 1024 bytes: NCCL \(no plan: request: allreduce, 4 ranks.*"
                         r"in place;.*allreduce_ring \[[^]]*\]: not eligible: the call is in place" % rank, p.stderr):
            problems.append("no MSCCL_DEBUG explain line for rank %d's in-place allreduce" % rank)
    # The real NCCL cannot make its communicator (as without a GPU): rank 0 alone says why, for every
    # rank, in NCCL's words with the usual causes; planned calls still run, an unplanned one fails
    # naming that reason. Where only some ranks fail, rank 0 (whose init worked) names them.
    env["MSCCL_DEBUG"] = "WARN"
    # The stand-in's words name the rank (as NCCL's "Duplicate GPU detected : rank 1 and rank 0 ..."
    # do): still one warning, quoting the first failing rank's words.
    for fail, ranks, first in [("all", "all 4 ranks", 0), ("1,3", "ranks 1, 3 of 4", 1)]:
        env["STANDIN_NCCL_FAIL_INIT"] = fail
        q = subprocess.run(cmd[:-1] + ["-x", "STANDIN_NCCL_FAIL_INIT", a.client], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=240)
        warn = re.findall(r"MSCCL WARN the real NCCL's ncclCommInitRank failed on %s with error 1 \(standin: error\): "
                          r"standin: no CUDA device for rank %d \(rank %d's words; the others' differ only in their "
                          r"numbers\)\. Calls that no registered plan takes will fail.*NCCL_DEBUG=INFO"
                          % (re.escape(ranks), first, first), q.stderr)
        if len(warn) != 1 or q.stderr.count("MSCCL WARN the real NCCL's ncclCommInitRank") != 1:
            problems.append("%s: expected one warning (rank 0) naming NCCL's init failure on %s and its causes, got "
                            "%d:\n%s" % (fail, ranks, len(warn), q.stderr[-2000:]))
        if not re.search(r"no plan and no NCCL to fall back to \(.*standin: no CUDA device", q.stderr + q.stdout):
            problems.append("%s: an unplanned call without NCCL did not name NCCL's init failure" % fail)
    cache = os.path.join(tmp, "cache")
    if not os.path.isdir(cache) or not os.listdir(cache):
        problems.append("the .msccl program in MSCCL_PLANS left no entry in MSCCL_CACHE_DIR")
    for pr in problems:
        print("FAIL: " + pr)
    print("%d problem(s); stand-in log: %d lines" % (len(problems), len(standin)))
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())
