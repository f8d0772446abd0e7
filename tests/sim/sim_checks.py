#!/usr/bin/env python3
"""Performance-model checks on stdlib plans (compiled with mscclc, simulated with msccl-run --backend sim).

  figures      the model reproduces, within 15%, published figures for equivalent algorithms
               (the published figures cited in share/topologies/*.json): NCCL ring AllReduce large-message
               busbw on 8x H100 (~370 GB/s), NVLS AllReduce large-message busbw (~480 GB/s, H100
               and H200), MSCCL++ small-message AllReduce on 8x H100 (~6.5 us at 1 KB);
  closed-form  on tests/sim/alpha-beta.json (only link latency a and bandwidth B cost) the stdlib
               ring takes exactly 2(n-1)/n * S/B + 2(n-1)*a, plus one a for its opening handshake;
  monotone     time grows with the size for every stdlib allreduce plan, and every row names what
               bounds it;
  suggest      --suggest-ranges on the stdlib allreduce plans: contiguous ranges that cover the
               sweep, agree with the per-size winners, latency algorithms at the small end, NVLS at
               the large end where the topology has it and never where it does not.

Usage: sim_checks.py --mscclc PATH --msccl-run PATH --topology-dir DIR CHECK
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FAILS = []


def check(cond, msg):
    print(("ok    " if cond else "FAIL  ") + msg)
    if not cond:
        FAILS.append(msg)


def compile_plan(args, tmp, algo, **defines):
    name = algo.replace("/", ".") + "".join("+%s=%s" % kv for kv in sorted(defines.items())) + ".json"
    out = os.path.join(tmp, name)
    cmd = [args.mscclc, "stdlib:" + algo, "-o", out]
    for k, v in defines.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    subprocess.run(cmd, check=True)
    return out


def sim_rows(args, tmp, plan, topology, *sweep):
    jsonl = os.path.join(tmp, "rows.jsonl")
    if os.path.exists(jsonl):
        os.remove(jsonl)
    cmd = [args.msccl_run, plan, "--backend", "sim", "--topology", topology, "--jsonl", jsonl, "-n", "1", "-w", "0"]
    r = subprocess.run(cmd + list(sweep), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed:\n%s%s" % (" ".join(cmd + list(sweep)), r.stdout, r.stderr))
    with open(jsonl) as f:
        return [json.loads(l) for l in f if l.strip()], r.stdout


def within(got, want, tol=0.15):
    return abs(got - want) <= tol * want


def figures(args, tmp):
    ring = compile_plan(args, tmp, "allreduce/ring", ranks=8, chunks=16)  # NCCL runs 16+ channels on H100
    rows, _ = sim_rows(args, tmp, ring, "hgx-h100", "--size", "1G")
    bw = rows[0]["busbw_GBps"]
    check(within(bw, 370), "ring allreduce 8x H100, 1 GiB: busbw %.1f GB/s vs published ~370 (NCCL ring)" % bw)
    nvls = compile_plan(args, tmp, "allreduce/nvls", ranks=8)
    for topo, want in (("hgx-h100", 480), ("hgx-h200", 480)):
        rows, _ = sim_rows(args, tmp, nvls, topo, "--size", "1G")
        bw = rows[0]["busbw_GBps"]
        check(within(bw, want), "nvls allreduce %s, 1 GiB: busbw %.1f GB/s vs published ~%d (NCCL NVLS)" % (topo, bw, want))
    rows, _ = sim_rows(args, tmp, nvls, "hgx-h100", "--size", "1K")
    t = rows[0]["time_us"]
    check(within(t, 6.5), "nvls allreduce 8x H100, 1 KiB: %.2f us vs published ~6.5 us (MSCCL++ DSL NVLS)" % t)
    rows, _ = sim_rows(args, tmp, nvls, "hgx-h100", "--size", "64K")
    t = rows[0]["time_us"]
    check(within(t, 6.5), "nvls allreduce 8x H100, 64 KiB: %.2f us vs published ~6.5 us flat to 64 KiB" % t)


def closed_form(args, tmp):
    topo = os.path.join(args.topology_dir, "alpha-beta.json")
    with open(topo) as f:
        t = json.load(f)
    B = t["intra_node"]["bandwidth_GBps"]["value"] * 1e9
    a = t["intra_node"]["latency_us"]["value"] * 1e-6
    for n in (2, 4, 8, 16):
        plan = compile_plan(args, tmp, "allreduce/ring", ranks=n)
        rows, _ = sim_rows(args, tmp, plan, topo, "-b", str(16 * n), "-e", str(16 * n * 4 ** 10), "-f", "16")
        for r in rows:
            S = r["size"]
            want = (2 * (n - 1) / n * S / B + 2 * (n - 1) * a + a) * 1e6
            check(abs(r["time_us"] - want) <= 1e-6 * want,
                  "ring n=%d S=%d on alpha-beta: %.6f us == 2(n-1)/n*S/B + 2(n-1)a + a = %.6f us" % (n, S, r["time_us"], want))


def monotone(args, tmp):
    for algo, d in (("allreduce/allpairs_packet", {}), ("allreduce/allpairs", {}), ("allreduce/ring", {}),
                    ("allreduce/pipelined", {"unit": 65536}), ("allreduce/nvls", {})):
        plan = compile_plan(args, tmp, algo, ranks=8, **d)
        for topo in ("hgx-h100", "gb200-nvl72"):
            rows, text = sim_rows(args, tmp, plan, topo, "-b", "1K", "-e", "256M", "-f", "4")
            times = [r["time_us"] for r in rows]
            check(len(times) >= 8 and all(b > a for a, b in zip(times, times[1:])),
                  "%s on %s: time grows with size (%s)" % (algo, topo, ", ".join("%.1f" % x for x in times)))
            check(all("busiest" in r.get("bound_by", "") for r in rows) and text.count("#   busiest") == len(rows),
                  "%s on %s: every row says what bounds it" % (algo, topo))


def suggest(args, tmp):
    plans = [compile_plan(args, tmp, "allreduce/allpairs_packet", ranks=8),
             compile_plan(args, tmp, "allreduce/allpairs", ranks=8, instances=4),
             compile_plan(args, tmp, "allreduce/ring", ranks=8, chunks=16),
             compile_plan(args, tmp, "allreduce/nvls", ranks=8)]
    labels = [os.path.basename(p) for p in plans]
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "stdlib-table"))
    import stdlib_table
    for topo in ("hgx-h100", "pcie-l40s"):
        cmd = [args.msccl_run, "--backend", "sim", "--topology", topo, "--suggest-ranges"] + plans + \
              ["-b", "256", "-e", "1G", "-f", "4"]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(r.returncode == 0, "%s: --suggest-ranges exits 0 (%s)" % (topo, r.stderr.strip()))
        groups = stdlib_table.parse_ranges(r.stdout)
        check(len(groups) == 1 and groups[0]["collective"] == "allreduce" and groups[0]["ranks"] == 8,
              "%s: one group, allreduce on 8 ranks" % topo)
        g = groups[0]
        check(sorted(g["plans"]) == sorted(labels), "%s: a line per plan" % topo)
        sizes = [256 * 4 ** i for i in range(12)]
        check(len(g["sizes"]) == len(sizes), "%s: a winner for each of the %d sizes" % (topo, len(sizes)))
        winners = [w for _, _, w in g["sizes"]]
        # The ranges reproduce the per-size winners and tile the sweep without gaps or overlaps.
        ok = True
        for s, w in zip(sizes, winners):
            owners = [l for l, rg in g["plans"].items() if rg and rg[0] <= s <= rg[1]]
            ok &= owners == [w]
        check(ok, "%s: ranges are contiguous, disjoint and match the fastest plan per size" % topo)
        check(winners[0] == labels[0], "%s: the LL packet all-pairs plan wins at 256 B (%s)" % (topo, winners[0]))
        if topo == "hgx-h100":
            check(winners[-1] == labels[3], "%s: NVLS wins at 1 GiB (%s)" % (topo, winners[-1]))
            lo = g["plans"][labels[3]][0]
            check(64 << 10 < lo <= 16 << 20, "%s: NVLS takes over between 64 KiB and 16 MiB (from %d B)" % (topo, lo))
        else:
            check(g["plans"][labels[3]] is None, "%s: NVLS never fastest (no NVLS on PCIe)" % topo)
    bad = subprocess.run([args.msccl_run, "--backend", "cpu", "--suggest-ranges", plans[0]],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(bad.returncode == 2 and "needs --backend sim" in bad.stderr, "--suggest-ranges without sim: usage error")
    # A missing file and a malformed one among several: each one that cannot be read is named (with
    # the parser's reason), the others still get ranges.
    broken = os.path.join(tmp, "broken.json")
    with open(broken, "w") as f:
        f.write("{")
    bad = subprocess.run([args.msccl_run, "--backend", "sim", "--suggest-ranges", plans[0], "/no/such/a.json",
                          broken] + plans[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(bad.returncode == 1 and "/no/such/a.json" in bad.stderr
          and "msccl-run: error: %s: invalid JSON" % broken in bad.stderr
          and "2 of %d plan file(s) could not be read" % (len(plans) + 2) in bad.stderr
          and all(os.path.basename(p) in bad.stdout for p in plans),
          "--suggest-ranges names every unreadable file and ranges the others (%s)" % bad.stderr.strip())
    bad = subprocess.run([args.msccl_run, plans[0], "--backend", "sim", "--topology", "no-such-box"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(bad.returncode == 1 and "unknown topology 'no-such-box'" in bad.stderr, "unknown topology: clear error")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mscclc", required=True)
    ap.add_argument("--msccl-run", required=True)
    ap.add_argument("--topology-dir", required=True, help="folder of alpha-beta.json")
    ap.add_argument("check", choices=["figures", "closed-form", "monotone", "suggest"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sim-checks-") as tmp:
        {"figures": figures, "closed-form": closed_form, "monotone": monotone, "suggest": suggest}[args.check](args, tmp)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
