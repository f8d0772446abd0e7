#!/usr/bin/env python3
"""pytorch_case.py - the PyTorch-shaped NCCL client under the shim, plans only (nccl.pytorch).

Compiles the stdlib plans a 4-rank PyTorch job needs (in place and out of place where it makes both
kinds of call, 2-rank plans for its split communicators), runs tests/nccl/pytorch_client.c under
`mpirun -np 4` with LD_PRELOAD=libmsccl_nccl.so MSCCL_BACKEND=cpu MSCCL_DEBUG=INFO and no real NCCL
(MSCCL_NCCL_LIB_PATH names a file that does not exist), and checks: the client found every result
right and every call returned success (a call no plan takes would fail: there is no NCCL to go
to), MSCCL_DEBUG shows a plan for every collective call of every rank and no fallback.

With --tuned MSCCL_TUNE the 4-rank AllReduce plans are msccl-tune's directory for hgx-h100 instead
(its index, with the other plans added to it): the client's odd AllReduce sizes (16372, 3108, 4
bytes), which the tuned LL plans cannot cut, go to the tuner's fallback entry, never to NCCL."""
import argparse, json, os, re, subprocess, sys, tempfile

# (stdlib algorithm, defines, file name)
PLANS = [
    ("allreduce/allpairs", ["ranks=4", "inplace=true"], "allreduce_ip.json"),
    ("allreduce/allpairs", ["ranks=4", "inplace=false"], "allreduce_oop.json"),
    ("allreduce/ring", ["ranks=2", "inplace=false"], "allreduce_tp.json"),
    ("broadcast/tree", ["ranks=4", "inplace=true"], "broadcast_ip.json"),
    ("reduce/tree", ["ranks=4", "inplace=false"], "reduce.json"),
    ("alltoall/allpairs", ["ranks=4", "inplace=false"], "alltoall.json"),
    ("alltoallv/allpairs", ["ranks=4"], "alltoallv.json"),
    ("allgather/allpairs", ["ranks=4", "inplace=false"], "allgather.json"),
]

# Collective calls the client makes per rank, by MSCCL_DEBUG line (the plan named by its file):
# (pattern, lines per world rank 0..3). The split communicators' ranks are 0 and 1 in each pair,
# so their allreduce shows twice under ranks 0 and 1.
EXPECTED = [
    (r"ncclBroadcast 4028 bytes float32 in-place: plan \S+ \(\S*/broadcast_ip\.json\)", [1, 1, 1, 1]),
    (r"ncclAllReduce 8000 bytes float32: plan \S+ \(\S*/allreduce_tp\.json\)", [2, 2, 0, 0]),
    (r"ncclAllReduce 16372 bytes float32 in-place: plan \S+ \(\S*/allreduce_ip\.json\)", [1, 1, 1, 1]),
    (r"ncclAllReduce 4 bytes float32 in-place: plan \S+ \(\S*/allreduce_ip\.json\)", [1, 1, 1, 1]),
    (r"ncclAllReduce 3108 bytes float32 in-place: plan \S+ \(\S*/allreduce_ip\.json\)", [1, 1, 1, 1]),
    (r"ncclAllReduce 4096 bytes float32: plan \S+ \(\S*/allreduce_oop\.json\)", [1, 1, 1, 1]),
    (r"ncclGroupEnd: 8 send/recv call\(s\) as an AllToAllV: plan \S+ \(\S*/alltoallv\.json\)", [1, 1, 1, 1]),
    (r"ncclGroupEnd: 8 send/recv call\(s\) as an AllToAll: plan \S+ \(\S*/alltoall\.json\)", [1, 1, 1, 1]),
    (r"ncclReduce 132 bytes float32: plan \S+ \(\S*/reduce\.json\)", [1, 1, 1, 1]),
    (r"ncclBroadcast 308 bytes float32 in-place: plan \S+ \(\S*/broadcast_ip\.json\)", [1, 1, 1, 1]),
    (r"ncclReduce 180 bytes float32: plan \S+ \(\S*/reduce\.json\)", [1, 1, 1, 1]),
    (r"ncclAllGather 32 bytes int64: plan \S+ \(\S*/allgather\.json\)", [1, 1, 1, 1]),
]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mscclc", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--installed", action="store_true",
                    help="give the plans as the installed directory (MSCCL_INSTALLED_PLANS, with an index, as "
                         "msccl-tune --install writes it) instead of MSCCL_PLANS")
    ap.add_argument("--tuned", metavar="MSCCL_TUNE",
                    help="the 4-rank AllReduce plans from msccl-tune (this binary) instead of the stdlib's")
    ap.add_argument("--backend", choices=["cpu", "cuda-host"], default="cpu",
                    help="cuda-host: the shim's CUDA path (MSCCL_BACKEND=cuda, one CudaRankSession per rank) on "
                         "the host implementation of the device layer (MSCCL_CUDA_DEVICE=host)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="nccl-pytorch-")
    plans = os.path.join(tmp, "plans")
    os.mkdir(plans)
    plan_list = PLANS
    if a.tuned:  # the tuner's index first, then the plans it does not cover
        subprocess.run([a.tuned, "--topology", "hgx-h100", "--ranks", "4", "--quick", "--no-synth", "--collective",
                        "allreduce", "--max-bytes", "1M", "-o", plans], check=True, stdout=subprocess.DEVNULL)
        plan_list = [p for p in PLANS if p[2] not in ("allreduce_ip.json", "allreduce_oop.json")]
        with open(os.path.join(plans, "msccl-plans.json")) as f:
            index = json.load(f)
        index["plans"] += [{"file": name} for _, _, name in plan_list]
        with open(os.path.join(plans, "msccl-plans.json"), "w") as f:
            json.dump(index, f)
    for algo, defines, name in plan_list:
        cmd = [a.mscclc, "stdlib:" + algo, "-o", os.path.join(plans, name)]
        for d in defines:
            cmd += ["-D", d]
        subprocess.run(cmd, check=True)
    env = dict(os.environ)
    env.update(MSCCL_BACKEND="cpu" if a.backend == "cpu" else "cuda", MSCCL_CUDA_DEVICE="host", MSCCL_DEBUG="INFO",
               MSCCL_NCCL_LIB_PATH=os.path.join(tmp, "no-such-libnccl.so.2"), MSCCL_TIMEOUT="60")
    plans_var = "MSCCL_INSTALLED_PLANS" if a.installed else "MSCCL_PLANS"
    env.pop("MSCCL_PLANS", None)
    env[plans_var] = plans
    if a.installed:
        with open(os.path.join(plans, "msccl-plans.json"), "w") as f:
            json.dump({"plans": [{"file": name} for _, _, name in PLANS]}, f)
    cmd = [a.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4"]
    for k in ["LD_PRELOAD", "MSCCL_BACKEND", plans_var, "MSCCL_DEBUG", "MSCCL_NCCL_LIB_PATH", "MSCCL_TIMEOUT",
              "MSCCL_CUDA_DEVICE"]:
        cmd += ["-x", k]
    env["LD_PRELOAD"] = a.preload
    p = subprocess.run(cmd + [a.client], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=240)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    problems = []
    if p.returncode != 0:
        problems.append("the client failed (exit %d)" % p.returncode)
    if not re.search(r"stuck call aborted: returned [1-9]\d* after \d+\.\d+ s", p.stdout):
        problems.append("the stuck call was not ended by ncclCommAbort")
    m = re.search(r"pytorch_client: (\d+) calls, (\d+) failure\(s\)", p.stdout)
    if not m or m.group(2) != "0":
        problems.append("the client's result checks did not all pass")
    expected = EXPECTED
    if a.tuned:  # a tuned plan (any but the 2-rank one) where the stdlib's 4-rank AllReduce was
        expected = [(pat.replace(r"allreduce_ip\.json", r"allreduce_(?!tp)\S+\.json")
                     .replace(r"allreduce_oop\.json", r"allreduce_(?!tp)\S+\.json"), c) for pat, c in EXPECTED]
        if not re.search(r"ncclAllReduce 16372 bytes float32 in-place: plan \S+_fallback ", p.stderr):
            problems.append("the 16372-byte AllReduce did not take the tuner's fallback entry")
    for rank in range(4):
        for pattern, counts in expected:
            got = len(re.findall(r"MSCCL INFO rank %d: %s" % (rank, pattern), p.stderr))
            count = counts[rank]
            if got != count:
                problems.append("rank %d: %d line(s) of `%s`, expected %d" % (rank, got, pattern, count))
    want = "cpu backend, plans run" if a.backend == "cpu" else "cuda backend, plans run"
    if len(re.findall(r"MSCCL INFO rank \d of 4: communicator ready \(" + want, p.stderr)) != 4:
        problems.append("not every rank's communicator says \"%s\"" % want)
    if a.installed and "installed by msccl-tune --install; MSCCL_PLANS is not set" not in p.stderr:
        problems.append("the installed plans were not loaded (or not said so)")
    fallbacks = re.findall(r"MSCCL INFO rank \d: \S+ .*: NCCL \(.*", p.stderr)
    if fallbacks:
        problems.append("calls went to NCCL: " + "; ".join(fallbacks[:4]))
    for pr in problems:
        print("FAIL: " + pr)
    print("%d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
