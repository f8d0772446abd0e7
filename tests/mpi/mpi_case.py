#!/usr/bin/env python3
"""One test of the one-process-per-rank runtime (msccl-run under mpirun).

Cases (--case):
  equiv     compile a stdlib algorithm, run it with the single-process CPU executor and with
            `mpirun -np N msccl-run` over the same sizes; both must verify every size with 0 wrong
            and give the same rows (size, count, #wrong). --ranks-per-node K sets
            MSCCL_RANKS_PER_NODE (multi-node algorithms on one machine).
  deadlock  a plan whose ranks wait for signals nobody sends: the run must fail within the timeout
            (plus a margin) with a report from every rank naming its threadblock, op and JSON path.
  killed    one rank is killed (SIGKILL) while the others wait for it: mpirun must end with an
            error, not hang.
  misuse    a plan whose signals are never waited for: the rank that finds it reports it, the
            others say another rank failed, the run exits non-zero.
  mismatch  a plan for more ranks than processes: a clear error from every rank.
  netns     two "hosts" in two network namespaces joined by a veth pair (root and `ip netns`
            needed; skipped with a message elsewhere): port channels cross a real network (TCP).
CI runs as root: mpirun gets --allow-run-as-root --oversubscribe.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77  # ctest SKIP_RETURN_CODE


def mpirun_cmd(args, np, extra_env=None):
    cmd = [args.mpirun, "--oversubscribe", "-np", str(np)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    for k in sorted((extra_env or {}).keys()):
        cmd += ["-x", k]
    return cmd


def env_with(extra):
    env = dict(os.environ)
    env.update(extra or {})
    return env


def rows(text):
    """The table rows of msccl-run's output (launcher warnings and error lines are ignored)."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if not f or not f[0].isdigit():
            continue
        if len(f) > 1 and f[1] == "skipped:":
            out.append((f[0], "skipped"))
        elif len(f) >= 9:
            out.append((f[0], f[1], f[7]))  # size, count, #wrong
    return out


def compile_plan(args, tmp, algo, defines):
    path = os.path.join(tmp, algo.replace("/", "_") + ".json")
    cmd = [args.mscclc, "stdlib:" + algo, "-o", path]
    for d in defines:
        cmd += ["-D", d]
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return path


def case_equiv(args, tmp):
    inplace = "true" if args.mode == "in-place" else "false"
    if args.counts:  # AllToAllV: out of place, sized by the count matrix (size = average bytes per rank)
        plan_path = compile_plan(args, tmp, args.algo, args.defines)
        plan = json.load(open(plan_path))
        n = len(plan["gpus"])
        sweep = ["-b", "64", "-e", "1024", "-f", "4", "-n", "2", "-w", "1", "--counts", args.counts]
    else:
        plan_path = compile_plan(args, tmp, args.algo, args.defines + ["inplace=" + inplace])
        plan = json.load(open(plan_path))
        n = len(plan["gpus"])
        gpu = plan["gpus"][0]
        align = int(plan.get("buffer_alignment", 16))
        chunk = max(align, args.chunk_bytes // align * align)
        base = chunk * max(gpu["input_chunks"], gpu["output_chunks"])
        factor = 4
        if args.odd:  # 1001, 3003, 9009 float32s per rank block: odd, so no plan's 16-byte chunks divide them
            base, factor = 4 * n * 1001, 3
        sweep = ["-b", str(base), "-e", str(base * factor * factor), "-f", str(factor), "-n", "2", "-w", "1",
                 "--" + args.mode]
    single = subprocess.run([args.run, plan_path] + sweep, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(single.stdout)
    if single.returncode != 0:
        print("FAIL: the single-process run failed")
        return 1
    extra = {"MSCCL_RANKS_PER_NODE": str(args.ranks_per_node)} if args.ranks_per_node else {}
    cmd = mpirun_cmd(args, n, extra) + [args.run, plan_path, "--timeout", "30"] + sweep
    print("+ " + " ".join(cmd), flush=True)
    multi = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env_with(extra),
                           timeout=240)
    print(multi.stdout)
    if multi.returncode != 0:
        print("FAIL: mpirun exited with %d" % multi.returncode)
        return 1
    if "# mpi: %d processes" % n not in multi.stdout:
        print("FAIL: msccl-run did not run one rank per process")
        return 1
    if args.ranks_per_node and "MSCCL_RANKS_PER_NODE=%d" % args.ranks_per_node not in multi.stdout:
        print("FAIL: MSCCL_RANKS_PER_NODE was not honoured")
        return 1
    a, b = rows(single.stdout), rows(multi.stdout)
    if a != b or len(a) != 3 or any(r[-1] != "0" for r in a):
        print("FAIL: rows differ or are not all verified:\n single %s\n mpi    %s" % (a, b))
        return 1
    print("ok: %d sizes verified with 0 wrong in both modes" % len(a))
    return 0


def case_deadlock(args, tmp):
    timeout = 3
    cmd = mpirun_cmd(args, 2) + [args.run, args.plan, "--size", "4096", "--timeout", str(timeout)]
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    took = time.time() - t0
    print(p.stdout)
    ok = True
    if p.returncode == 0:
        print("FAIL: a deadlocked plan exited 0")
        ok = False
    if took > timeout + 30:
        print("FAIL: took %.1f s with --timeout %d" % (took, timeout))
        ok = False
    for r in (0, 1):
        pat = r"rank %d tb 0 op 0 \(wait\) at gpus\[%d\]\.threadblocks\[0\]\.ops\[0\]: waits for a signal" % (r, r)
        if not re.search(pat, p.stdout):
            print("FAIL: no report line for rank %d (%s)" % (r, pat))
            ok = False
    if ok:
        print("ok: failed after %.1f s with a report from every rank" % took)
    return 0 if ok else 1


def case_killed(args, tmp):
    cmd = mpirun_cmd(args, 2) + [args.run, args.plan, "--size", "4096", "--timeout", "120"]
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    # Find a rank process (a child of mpirun running msccl-run) once both ranks wait.
    victim = None
    deadline = time.time() + 30
    while time.time() < deadline and victim is None:
        time.sleep(1.0)
        ps = subprocess.run(["ps", "-o", "pid=,ppid=,args=", "-g", str(p.pid)], stdout=subprocess.PIPE, text=True)
        for line in ps.stdout.splitlines():
            f = line.split(None, 2)
            if len(f) == 3 and int(f[1]) == p.pid and args.run in f[2]:
                victim = int(f[0])
                break
    if victim is None:
        os.killpg(p.pid, signal.SIGKILL)
        print("FAIL: no rank process found")
        return 1
    os.kill(victim, signal.SIGKILL)
    print("killed rank process %d" % victim, flush=True)
    try:
        out, _ = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        print("FAIL: the run hung after a rank was killed")
        return 1
    print(out)
    left = []
    for _ in range(20):  # mpirun has exited; give its SIGTERM to the other rank a moment
        left = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(p.pid)], stdout=subprocess.PIPE,
                              text=True).stdout.split("\n")
        left = [l.split()[0] for l in left if l.strip() and not l.split()[1].startswith("Z")]
        if not left:
            break
        time.sleep(0.5)
    if p.returncode == 0:
        print("FAIL: exited 0 after a rank was killed")
        return 1
    if left:
        print("FAIL: processes left behind: %s" % left)
        return 1
    print("ok: ended with status %d after %.1f s, no process left" % (p.returncode, time.time() - t0))
    return 0


def case_misuse(args, tmp):
    cmd = mpirun_cmd(args, 2) + [args.run, args.plan, "--size", "4096", "--timeout", "20"]
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    print(p.stdout)
    ok = p.returncode != 0
    if not re.search(r"rank 1 memory channel 0 \(to rank 0\) received \d+ signal\(s\) but waited 0 time\(s\)", p.stdout):
        print("FAIL: rank 1 did not report its unbalanced channel")
        ok = False
    if "rank 0: finished launch" not in p.stdout or "another rank failed" not in p.stdout:
        print("FAIL: rank 0 did not say that another rank failed")
        ok = False
    return 0 if ok else 1


def case_mismatch(args, tmp):
    plan_path = compile_plan(args, tmp, "allreduce/ring", ["ranks=4"])
    cmd = mpirun_cmd(args, 2) + [args.run, plan_path]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    print(p.stdout)
    ok = p.returncode != 0
    for r in (0, 1):
        if "error: rank %d: plan %s has 4 ranks but the job has 2 processes" % (r, plan_path) not in p.stdout:
            print("FAIL: no error from rank %d" % r)
            ok = False
    return 0 if ok else 1


def case_netns(args, tmp):
    if os.geteuid() != 0 or not shutil.which("ip"):
        print("SKIP: needs root and iproute2 (ip netns) to build two network namespaces")
        return SKIP
    tag = str(os.getpid() % 100000)
    ns = ["mscclA" + tag, "mscclB" + tag]
    veth = ["mvA" + tag, "mvB" + tag]
    addr = ["10.77.%d.1" % (os.getpid() % 250), "10.77.%d.2" % (os.getpid() % 250)]
    net = addr[0].rsplit(".", 1)[0] + ".0/24"

    def ip(*a):
        return subprocess.run(["ip"] + list(a), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    made = []
    try:
        for n in ns:
            r = ip("netns", "add", n)
            if r.returncode != 0:
                print("SKIP: cannot create a network namespace here: %s" % r.stderr.strip())
                return SKIP
            made.append(n)
        steps = [("link", "add", veth[0], "type", "veth", "peer", "name", veth[1])]
        for i in (0, 1):
            steps += [("link", "set", veth[i], "netns", ns[i]),
                      ("-n", ns[i], "addr", "add", addr[i] + "/24", "dev", veth[i]),
                      ("-n", ns[i], "link", "set", veth[i], "up"), ("-n", ns[i], "link", "set", "lo", "up")]
        for st in steps:
            r = ip(*st)
            if r.returncode != 0:
                print("SKIP: cannot set up the veth pair (%s): %s" % (" ".join(st), r.stderr.strip()))
                return SKIP
        plan_path = compile_plan(args, tmp, "sendrecv/pairs", ["ranks=2", "ranks_per_node=1", "inplace=false"])
        run = [args.run, plan_path, "-b", "4K", "-e", "1M", "-f", "16", "-n", "2", "-w", "1", "--timeout", "30"]
        env = env_with({"MSCCL_RANKS_PER_NODE": "1", "PMIX_MCA_ptl_tcp_remote_connections": "1",
                        "PMIX_MCA_ptl_tcp_if_include": net})
        # mpirun lives in host A; rank 1 is started inside host B. Everything between the ranks
        # (MPI's wire-up, the one-sided traffic of port channels) goes over TCP on the veth pair.
        cmd = ["ip", "netns", "exec", ns[0], args.mpirun, "--oversubscribe", "-x", "MSCCL_RANKS_PER_NODE",
               "--mca", "oob_tcp_if_include", net, "--mca", "btl_tcp_if_include", net, "--mca", "btl", "self,tcp",
               "--mca", "pml", "ob1", "--mca", "osc", "sm,pt2pt"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += ["-np", "1"] + run + [":", "-np", "1", "ip", "netns", "exec", ns[1]] + run
        print("+ " + " ".join(cmd), flush=True)
        before = int(ip("netns", "exec", ns[0], "cat", "/sys/class/net/%s/statistics/tx_bytes" % veth[0]).stdout or 0)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=240)
        print(p.stdout)
        after = int(ip("netns", "exec", ns[0], "cat", "/sys/class/net/%s/statistics/tx_bytes" % veth[0]).stdout or 0)
        if p.returncode != 0:
            print("FAIL: the two-host run exited with %d" % p.returncode)
            return 1
        got = rows(p.stdout)
        if "2 nodes: {0} {1}" not in p.stdout or len(got) != 3 or any(r[-1] != "0" for r in got):
            print("FAIL: expected 3 verified sizes on 2 nodes, got %s" % got)
            return 1
        # 1 MiB each way, 4 launches (warmup, 2 timed, checked) at the largest size alone.
        if after - before < 4 * (1 << 20):
            print("FAIL: only %d bytes left host A through the veth pair" % (after - before))
            return 1
        print("ok: verified across two network namespaces; %d bytes crossed the veth pair" % (after - before))
        return 0
    finally:
        for n in made:
            ip("netns", "del", n)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", required=True, choices=["equiv", "deadlock", "killed", "misuse", "mismatch", "netns"])
    ap.add_argument("--mscclc", required=True)
    ap.add_argument("--msccl-run", dest="run", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--algo")
    ap.add_argument("-D", dest="defines", action="append", default=[])
    ap.add_argument("--ranks-per-node", type=int, default=0)
    ap.add_argument("--mode", choices=["in-place", "out-of-place"], default="out-of-place")
    ap.add_argument("--chunk-bytes", type=int, default=256)
    ap.add_argument("--plan")
    ap.add_argument("--counts", default="", help="AllToAllV plans: msccl-run --counts SPEC")
    ap.add_argument("--odd", action="store_true",
                    help="sizes of odd float32 counts per rank block (1001, 3003, 9009), which the plan's chunks "
                         "do not divide: uneven chunks (runtime/UnevenChunks.h)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mpi-") as tmp:
        return globals()["case_" + args.case](args, tmp)


if __name__ == "__main__":
    sys.exit(main())
