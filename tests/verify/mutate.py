#!/usr/bin/env python3
"""Mutation test of the plan verifier (issue 11): which wrong plans do msccl-verify and
msccl-run --race-check catch?

Compiles stdlib programs with mscclc, applies one semantic mutation at a time to each plan
(deleted/moved/relaxed syncs, deleted flush, changed chunk indices, protocol flips), then runs
  msccl-verify PLAN            (caught: exit 1)
  msccl-run PLAN --race-check  (caught: non-zero exit: wrong result, race, deadlock or a refused plan)
on every mutant and prints one table row per mutation class: mutants made, caught by each tool,
caught by neither. Mutants that do not change the plan's meaning cannot be told apart from the
original; the report (docs/verification.md) explains every class with misses.

Exit status: 1 when msccl-verify misses a mutant that msccl-run --race-check catches (the static
verifier must be at least as strong as the dynamic checker), or when an unmutated plan is not
proven; else 0. --table-only prints the table without failing.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

# (stdlib name, -D defines): small shapes of every algorithm.
PROGRAMS = [
    ("allreduce/allpairs", ["ranks=4"]),
    ("allreduce/allpairs_packet", ["ranks=4"]),
    ("allreduce/ring", ["ranks=4"]),
    ("allreduce/pipelined", ["ranks=3", "unit=256"]),
    ("allreduce/nvls", ["ranks=4"]),
    ("allreduce/hierarchical", ["ranks=4", "ranks_per_node=2"]),
    ("allgather/allpairs", ["ranks=4"]),
    ("allgather/ring", ["ranks=4"]),
    ("allgather/packet", ["ranks=4"]),
    ("allgather/hierarchical", ["ranks=4", "ranks_per_node=2"]),
    ("reducescatter/allpairs", ["ranks=4"]),
    ("reducescatter/ring", ["ranks=4"]),
    ("reducescatter/packet", ["ranks=4"]),
    ("alltoall/allpairs", ["ranks=4"]),
    ("alltoall/multinode", ["ranks=4", "ranks_per_node=2"]),
    ("sendrecv/pairs", ["ranks=2", "ranks_per_node=1"]),
]

SIGNALS = ("signal", "rlxsignal")
WAITS = ("wait", "rlxwait")
PUTS = ("put", "pws", "pwsf", "ppkt")


def ops_of(plan):
    """(gpu, tb, ops list) for every threadblock."""
    for g in plan["gpus"]:
        for tb in g["threadblocks"]:
            yield g, tb, tb["ops"]


def first_index(ops, names, last=False):
    idx = [i for i, o in enumerate(ops) if o["name"] in names]
    if not idx:
        return None
    return idx[-1] if last else idx[0]


# Each mutation: plan -> list of mutants (each applied at one rank's threadblock, the first
# threadblock of rank 1 where it applies, so that the mutant differs from the original).
def per_tb(fn):
    def make(plan):
        out = []
        for gi in range(len(plan["gpus"])):
            for ti in range(len(plan["gpus"][gi]["threadblocks"])):
                p = copy.deepcopy(plan)
                ops = p["gpus"][gi]["threadblocks"][ti]["ops"]
                if fn(p, ops):
                    out.append(p)
                    if len(out) >= 2:  # two sites per plan and class keep the run short
                        return out
        return out
    return make


def del_entry_wait(p, ops):
    i = first_index(ops, WAITS)
    if i is None:
        return False
    del ops[i]
    return True


def del_exit_wait(p, ops):
    i = first_index(ops, WAITS, last=True)
    j = first_index(ops, WAITS)
    if i is None or i == j:
        return False
    del ops[i]
    return True


def del_nop_after_wait(p, ops):
    i = first_index(ops, WAITS)
    if i is None or i + 1 >= len(ops) or ops[i + 1]["name"] != "nop":
        return False
    del ops[i + 1]
    return True


def del_flush(p, ops):
    for i, o in enumerate(ops):
        if o["name"] == "flush":
            del ops[i]
            return True
        if o["name"] == "pwsf":
            o["name"] = "pws"
            return True
    return False


def move_last_signal_before_put(p, ops):
    s = first_index(ops, SIGNALS, last=True)
    k = first_index(ops, PUTS, last=True)
    if s is None or k is None or s < k:
        return False
    sig = ops.pop(s)
    ops.insert(k, sig)
    return True


def relax_sync(p, ops):
    done = False
    for o in ops:
        if o.get("channel_type") == "memory" and o["name"] in ("signal", "wait"):
            o["name"] = "rlx" + o["name"]
            done = True
    return done


def del_signal(p, ops):
    i = first_index(ops, SIGNALS, last=True)
    if i is None:
        return False
    del ops[i]
    return True


def shift_index(p, ops):
    for o in ops:
        for e in o.get("src_buff", []):
            if "type" in e and e["type"] in ("i", "o"):
                e["index"] = e["index"] + 1 if e["index"] == 0 else e["index"] - 1
                return True
    return False


def whole(fn):
    def make(plan):
        p = copy.deepcopy(plan)
        return [p] if fn(p) else []
    return make


def ll_to_simple(p):
    if p.get("protocol") != "LL":
        return False
    p["protocol"] = "Simple"
    return True


def single_scratch(p):
    if p.get("protocol") != "LL" or not p.get("use_double_scratch_buffer"):
        return False
    p["use_double_scratch_buffer"] = False
    return True


MUTATIONS = [
    ("delete entry wait", per_tb(del_entry_wait)),
    ("delete exit wait", per_tb(del_exit_wait)),
    ("delete nop after entry wait", per_tb(del_nop_after_wait)),
    ("delete flush (pwsf -> pws)", per_tb(del_flush)),
    ("move last signal before last put", per_tb(move_last_signal_before_put)),
    ("relax memory signal/wait", per_tb(relax_sync)),
    ("delete last signal", per_tb(del_signal)),
    ("change a chunk index", per_tb(shift_index)),
    ("protocol LL -> Simple", whole(ll_to_simple)),
    ("single scratch for LL", whole(single_scratch)),
]


def run(cmd, timeout=120):
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        return r.returncode, r.stdout
    except subprocess.TimeoutExpired:
        return 124, "timeout"


def race_check(run_tool, path, plan):
    g = plan["gpus"][0]
    size = 16 * max(g["input_chunks"], g["output_chunks"], 1)
    # 3 launches: an LL plan's double scratch buffer reuses its first half in the third.
    rc, out = run([run_tool, path, "--backend", "cpu", "-b", str(size), "-e", str(size), "-n", "3", "-w", "0",
                   "--check", "--race-check"])
    return rc != 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mscclc", required=True)
    ap.add_argument("--msccl-verify", dest="verify", required=True)
    ap.add_argument("--msccl-run", dest="run", required=True)
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    failures = []
    # made, verify, race-check, neither, only race-check, only verify
    rows = {name: [0, 0, 0, 0, 0, 0] for name, _ in MUTATIONS}
    misses = {name: [] for name, _ in MUTATIONS}
    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
        for algo, defines in PROGRAMS:
            base = os.path.join(tmp, algo.replace("/", "_") + ".json")
            cmd = [args.mscclc, "stdlib:" + algo, "-o", base]
            for d in defines:
                cmd += ["-D", d]
            rc, out = run(cmd)
            if rc != 0:
                failures.append("%s does not compile: %s" % (algo, out[:300]))
                continue
            with open(base) as f:
                plan = json.load(f)
            rc, out = run([args.verify, "--quiet", base])
            if rc != 0:
                failures.append("%s: the unmutated plan is not proven:\n%s" % (algo, out[:600]))
            for name, make in MUTATIONS:
                for k, mutant in enumerate(make(plan)):
                    path = os.path.join(tmp, "m.json")
                    with open(path, "w") as f:
                        json.dump(mutant, f)
                    rc, out = run([args.verify, "--quiet", path])
                    static = rc == 1
                    if rc not in (0, 1):
                        failures.append("%s / %s: msccl-verify exited %d:\n%s" % (algo, name, rc, out[:400]))
                    dynamic = race_check(args.run, path, mutant)
                    row = rows[name]
                    row[0] += 1
                    row[1] += static
                    row[2] += dynamic
                    if not static and not dynamic:
                        row[3] += 1
                        misses[name].append(algo)
                    if static and not dynamic:
                        row[5] += 1
                    if dynamic and not static:
                        row[4] += 1
                        failures.append("%s / %s #%d: msccl-run --race-check catches it, msccl-verify does not" %
                                        (algo, name, k))
                    if args.verbose:
                        print("%-28s %-36s verify=%d race-check=%d" % (algo, name, static, dynamic), flush=True)
    print("| mutation | mutants | msccl-verify | msccl-run --race-check | only msccl-verify | neither |")
    print("|---|---:|---:|---:|---:|---:|")
    total = [0, 0, 0, 0, 0]
    for name, _ in MUTATIONS:
        made, st, dy, neither, _only_dy, only_st = rows[name]
        total = [a + b for a, b in zip(total, [made, st, dy, only_st, neither])]
        print("| %s | %d | %d | %d | %d | %d |" % (name, made, st, dy, only_st, neither))
    print("| **all** | %d | %d | %d | %d | %d |" % tuple(total))
    for name, _ in MUTATIONS:
        if misses[name]:
            print("# not caught, %s: %s" % (name, ", ".join(sorted(set(misses[name])))))
    for f in failures:
        print("FAIL: " + f)
    return 0 if args.table_only or not failures else 1


if __name__ == "__main__":
    sys.exit(main())
