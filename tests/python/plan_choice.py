"""python.plan-choice: msccl-run --plans DIR picks, for every request of a matrix (sizes x in/out of
place), the plan that libmsccl's PlanRegistry picks for the same directory and request, which is
what the NCCL shim (MSCCL_PLANS) and Python clients run.

Usage: plan_choice.py MSCCLC MSCCL_RUN. The directory holds four AllReduce plans of 4 ranks made
here by mscclc: all-pairs limited to 64 KiB (narrowest range: it wins small calls), the ring in
place and out of place, and the ring with 3 chunks per rank (it can split fewer sizes). The old
msccl-run rule (the first file, sorted, whose chunks divide the size) picked differently at 1 KiB.
Exits non-zero on any difference; prints one line per request.
"""
import json
import os
import subprocess
import sys
import tempfile

import msccl

MSCCLC, RUN = sys.argv[1], sys.argv[2]
PROGRAMS = {
    "a_ring.json": ["stdlib:allreduce/ring", "-D", "ranks=4"],
    "b_ring_oop.json": ["stdlib:allreduce/ring", "-D", "ranks=4", "-D", "inplace=false"],
    "c_ring3.json": ["stdlib:allreduce/ring", "-D", "ranks=4", "-D", "chunks=3"],
    "d_allpairs_small.json": ["stdlib:allreduce/allpairs", "-D", "ranks=4", "--option", "max_message_size=65536"],
}
SIZES = [1024, 1000, 48 << 10, 64 << 10, (64 << 10) + 64, (64 << 10) + 192, 1 << 20, 3 << 20]


def run_choice(d, size, in_place, extra):
    """The plan msccl-run --plans D runs at `size` (its --jsonl row's plan column), None if skipped."""
    jsonl = os.path.join(d, "rows.jsonl")
    if os.path.exists(jsonl):
        os.remove(jsonl)
    subprocess.run([RUN, "--plans", d, *extra, "--collective", "allreduce", "--size", str(size),
                    "--in-place" if in_place else "--out-of-place", "--backend", "sim", "-n", "1", "--jsonl", jsonl],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    row = json.loads(open(jsonl).read().splitlines()[-1])
    return row["plan"] if row["status"] != "skipped" else None

with tempfile.TemporaryDirectory() as d:
    for name, args in PROGRAMS.items():
        subprocess.run([MSCCLC, *args, "-o", os.path.join(d, name)], check=True)
    reg = msccl.PlanRegistry()
    reg.register_directory(d)
    comm = msccl.Communicator.local(4)
    differ = 0
    for size in SIZES:
        for in_place in (True, False):
            chosen = reg.select(comm.request("allreduce", size, in_place=in_place))
            # By file: the registry names a plan by its program's name (msccl-run by its file).
            want = None if chosen is None else os.path.splitext(os.path.basename(chosen.source))[0]
            got = run_choice(d, size, in_place, ["--nranks", "4"])
            got = None if got is None else os.path.splitext(got)[0]
            ok = got == want
            differ += not ok
            print(f"{size:>9} B {'in place' if in_place else 'out of place':<12} registry: {want or '-':<18} "
                  f"msccl-run: {got or '-':<18} {'same' if ok else 'DIFFERENT'}")
    # The ranking is not first-fit: the narrowest range wins at 1 KiB although a_ring sorts first.
    first = reg.select(comm.request("allreduce", 1024, in_place=True))
    assert first is not None and os.path.basename(first.source) == "d_allpairs_small.json", first.source

# A directory of programs with an index (msccl-plans.json): one .msccl in three builds, compiled
# by both with -D ranks=4; msccl-run loads it as libmsccl does (names from the index).
with tempfile.TemporaryDirectory() as d:
    stdlib = os.environ.get("MSCCL_STDLIB_PATH") or os.path.join(os.path.dirname(__file__), "..", "..", "stdlib")
    with open(os.path.join(stdlib, "allreduce", "ring.msccl")) as f:
        ring = f.read()
    with open(os.path.join(d, "ring.msccl"), "w") as f:
        f.write(ring)
    with open(os.path.join(d, "msccl-plans.json"), "w") as f:
        json.dump({"plans": [
            {"file": "ring.msccl", "name": "ring_in", "defines": {"inplace": True}},
            {"file": "ring.msccl", "name": "ring_oop", "defines": {"inplace": False}},
            {"file": "ring.msccl", "name": "ring_in_small", "defines": {"inplace": True, "chunks": 2},
             "max_bytes": 65536}]}, f)
    reg = msccl.PlanRegistry()
    reg.register_directory(d, defines={"ranks": 4})
    comm = msccl.Communicator.local(4)
    for size in (1024, 64 << 10, 1 << 20):
        for in_place in (True, False):
            chosen = reg.select(comm.request("allreduce", size, in_place=in_place))
            want = None if chosen is None else chosen.name
            got = run_choice(d, size, in_place, ["-D", "ranks=4"])
            ok = got == want
            differ += not ok
            print(f"{size:>9} B {'in place' if in_place else 'out of place':<12} index: registry {want or '-':<14} "
                  f"msccl-run {got or '-':<14} {'same' if ok else 'DIFFERENT'}")
    assert reg.select(comm.request("allreduce", 1024, in_place=True)).name == "ring_in_small"
sys.exit(1 if differ else 0)
