#!/usr/bin/env python3
"""Performance-model checks on stdlib plans (compiled with mscclc, simulated with msccl-run --backend sim).

  figures      every published figure in share/topologies/*.json "validation" (NCCL's and MSCCL++'s
               published per-size figures, each with its source): the stdlib plan it names, simulated
               at its size on that topology; asserted within 15% where the plan is what was measured
               (or both are bandwidth bound), else printed as "not asserted: why" with the model
               output and the error; --table FILE writes docs/performance-model.md's validation tables;
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


SHARE_TOPOLOGIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "share", "topologies")
METRICS = {"busbw_GBps": "GB/s busbw", "algbw_GBps": "GB/s algbw", "time_us": "us"}


def size_bytes(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def show(v):
    return "%g-%g" % tuple(v) if isinstance(v, list) else "%g" % v


def rel_error(got, want):
    """Relative error against a published value, or against the nearer end of a published range (0 inside)."""
    if isinstance(want, list):
        lo, hi = want
        return 0.0 if lo <= got <= hi else (got - lo) / lo if got < lo else (got - hi) / hi
    return (got - want) / want


def validation_rows(args, tmp):
    """Every published figure in share/topologies/*.json "validation", simulated with the stdlib plan it names.

    An entry: figure, system, source, metric (busbw_GBps / algbw_GBps / time_us), plan (stdlib name or
    null) and defines, compare (what is compared), points [size, value] or [size, value, reason-key] or
    {"size", "value", "reason", "defines"} (a value may be a [low, high] range); not_asserted: one reason
    for every point, or reasons by key; assert_within_of_peak f: points below f x the entry's largest
    published value take the reason "below_peak". Yields one dict per point, with the model output where
    there is a plan and a size it can run."""
    plans = {}
    topologies = []
    for fname in os.listdir(SHARE_TOPOLOGIES):
        if fname.endswith(".json"):
            with open(os.path.join(SHARE_TOPOLOGIES, fname)) as f:
                topologies.append((fname, json.load(f)))
    order = lambda t: (t[1].get("nodes", 0), t[1].get("gpus_per_node", 0), t[0])  # one node first
    for fname, topo in sorted(topologies, key=order):
        name = topo["name"]
        for e in topo.get("validation", []):
            if not (e.get("source") and e.get("figure") and e.get("system") and e.get("metric") in METRICS):
                check(False, "%s: validation entry '%s' names its figure, system, source and metric"
                      % (fname, e.get("figure")))
            na = e.get("not_asserted")
            peak = max(max(v) if isinstance(v, list) else v
                       for v in ((p["value"] if isinstance(p, dict) else p[1]) for p in e["points"]))
            for p in e["points"]:
                if isinstance(p, dict):
                    size, value, key, defs = p["size"], p["value"], p.get("reason"), p.get("defines", {})
                else:
                    size, value, key, defs = p[0], p[1], p[2] if len(p) > 2 else None, {}
                if key is None and "assert_within_of_peak" in e and value < e["assert_within_of_peak"] * peak:
                    key = "below_peak"
                why = na[key] if key and isinstance(na, dict) else na if isinstance(na, str) else None
                if key and why is None:
                    raise RuntimeError("%s: '%s' at %s: no not_asserted reason '%s'" % (fname, e["figure"], size, key))
                defines = dict(e.get("defines", {}), **defs)
                row = {"topology": name, "entry": e, "size": size, "value": value, "why": why,
                       "plan": e.get("plan"), "defines": defines, "got": None, "bound_by": ""}
                if row["plan"] and size and size_bytes(size) <= 1 << 32:  # plans address at most 4 GiB
                    k = (row["plan"], tuple(sorted(defines.items())))
                    if k not in plans:
                        plans[k] = compile_plan(args, tmp, row["plan"], **defines)
                    rows, _ = sim_rows(args, tmp, plans[k], name, "--size", size)
                    row["got"], row["bound_by"] = rows[0][e["metric"]], rows[0].get("bound_by", "")
                yield row


def plan_text(r):
    if not r["plan"]:
        return "none"
    return "`%s` %s" % (r["plan"], " ".join("%s=%s" % kv for kv in sorted(r["defines"].items())))


def bound_text(b):
    """'busiest rank 6 nvlink out (100% busy); critical path 9 ops: 100% transfer, 0% latency'
    -> 'nvlink out 100% busy, 0% latency'."""
    if not b or ";" not in b:
        return b
    busiest, path = b.split(";", 1)
    res = busiest.replace("busiest ", "").split(" ", 2)[-1].replace("(", "").replace(")", "")
    return "%s, %s" % (res, path.split(",")[-1].strip())


def by_entry(rows):
    entries = []
    for r in rows:
        if not entries or entries[-1][0] is not r["entry"]:
            entries.append((r["entry"], r["topology"], []))
        entries[-1][2].append(r)
    return entries


def reason_letters(rs):
    reasons = []
    for r in rs:
        if r["why"] and r["why"] not in reasons:
            reasons.append(r["why"])
    return reasons


def figures(args, tmp):
    rows = list(validation_rows(args, tmp))
    asserted = not_asserted = 0
    for e, topo, rs in by_entry(rows):
        unit = METRICS[e["metric"]]
        reasons = reason_letters(rs)
        print("== %s: %s (%s)\n   source: %s\n   compared: %s%s" % (
            topo, e["figure"], e["system"], e["source"], ", ".join(sorted({plan_text(r) for r in rs})),
            " -- " + e["compare"] if e.get("compare") else ""))
        for r in rs:
            line = "%s at %s: published %s %s; %s: %s" % (
                topo, r["size"] or "-", show(r["value"]), unit, plan_text(r),
                "model output %.4g %s (%+.1f%%; %s)" % (r["got"], unit, 100 * rel_error(r["got"], r["value"]),
                                                        bound_text(r["bound_by"]))
                if r["got"] is not None else "no model output")
            if r["why"]:
                not_asserted += 1
                print("n/a   %s; not asserted (%s)" % (line, "abcdefgh"[reasons.index(r["why"])]))
            else:
                asserted += 1
                ok = r["got"] is not None and abs(rel_error(r["got"], r["value"])) <= 0.15
                print(("ok    " if ok else "FAIL  ") + line + ", within 15%")
                if not ok:
                    FAILS.append("%s [%s]" % (line, e["figure"]))
        for i, w in enumerate(reasons):
            print("   (%s) not asserted: %s" % ("abcdefgh"[i], w))
    print("%d figures asserted within 15%%, %d printed as not asserted (all model output)" % (asserted, not_asserted))
    check(asserted > 0, "some figures are asserted")
    if args.table:
        write_table(rows, args.table)


def write_table(rows, path):
    """The validation tables of docs/performance-model.md: one per figure, a row per size (model output)."""
    out = []
    for e, topo, rs in by_entry(rows):
        unit = METRICS[e["metric"]]
        reasons = reason_letters(rs)
        plans = sorted({plan_text(r) for r in rs})
        out += ["**%s** (%s; `%s`). Source: %s. Plan: %s%s." % (
            e["figure"], e["system"], topo, e["source"].split("; ../shared")[0],
            plans[0] if len(plans) == 1 else "per row", ", " + e["compare"] if e.get("compare") else ""), ""]
        cols = ["size", "published (%s)" % unit] + (["plan"] if len(plans) > 1 else []) + \
            ["model output", "error", "model bound"]
        out += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for r in rs:
            got = "%.4g" % r["got"] if r["got"] is not None else "-"
            err = "%+.1f%%" % (100 * rel_error(r["got"], r["value"])) if r["got"] is not None else "-"
            err = err + ", not asserted (%s)" % "abcdefgh"[reasons.index(r["why"])] if r["why"] else err
            cells = [r["size"] or "-", show(r["value"])] + ([plan_text(r)] if len(plans) > 1 else []) + \
                [got, err, bound_text(r["bound_by"]) or "-"]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        for i, w in enumerate(reasons):
            out += ["(%s) Not asserted: %s." % ("abcdefgh"[i], w.rstrip(".")), ""]
    with open(path, "w") as f:
        f.write("\n".join(out))


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
    nvls_bound(args, tmp)


def nvls_bound(args, tmp):
    """With in-switch reduction an AllReduce's bound is S each way per rank's link (every element of
    a rank's input must leave it, its own block's too); the stdlib's NVLS shape moves (n+1)/n of S,
    so it reaches n/(n+1) of the bound, in place and (two switch channels) out of place alike."""
    n, S = 8, 1 << 30
    for topo_name in ("hgx-h100", "hgx-h200"):
        with open(os.path.join(SHARE_TOPOLOGIES, topo_name + ".json")) as f:
            t = json.load(f)
        B = t["intra_node"]["bandwidth_GBps"]["value"] * 1e9 * t["nvls"]["efficiency"]["value"]
        want = t["latency"]["launch_us"]["value"] + S / B * 1e6
        for inplace in ("true", "false"):
            plan = compile_plan(args, tmp, "allreduce/nvls", ranks=n, inplace=inplace)
            r = sim_rows(args, tmp, plan, topo_name, "--size", str(S))[0][0]
            check(abs(r["bound_us"] - want) <= 1e-6 * want,
                  "AllReduce bound on %s, n=%d, 1 GiB: %.3f us == launch + S/(B x nvls efficiency) = %.3f us"
                  % (topo_name, n, r["bound_us"], want))
            check(n / (n + 1) - 0.02 <= r["of_bound"] <= 1,
                  "allreduce/nvls inplace=%s on %s at 1 GiB reaches %.1f%% of the bound (n/(n+1) = %.1f%%, never above 100%%)"
                  % (inplace, topo_name, 100 * r["of_bound"], 100 * n / (n + 1)))


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
    ap.add_argument("--table", metavar="FILE", help="figures: also write the validation table (markdown) to FILE")
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
