#!/usr/bin/env python3
"""One stdlib test case: compile a stdlib algorithm with mscclc and run/verify it with msccl-run.

Run mode (default): compiles `stdlib:ALGO` with the given -D params into a plan, reads the plan's
chunk counts to pick message sizes the plan accepts (multiples of buffer_alignment * chunks),
and runs msccl-run on the CPU executor over a three-size sweep with result checking and the
happens-before race checker (--race-check). Fails
(exit 1) when compiling fails or msccl-run reports an error, a data race or a wrong result.

Refusal mode (--expect-error TEXT): compiles with the given params and passes only when mscclc
exits non-zero and its diagnostics contain TEXT (the algorithm's own error()/assert message).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mscclc", required=True)
    ap.add_argument("--msccl-run", dest="run", required=True)
    ap.add_argument("--algo", required=True, help="stdlib name, e.g. allreduce/ring")
    ap.add_argument("-D", dest="defines", action="append", default=[], help="param=value for mscclc")
    ap.add_argument("--expect-error", default=None)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--mode", choices=["in-place", "out-of-place"], default="in-place")
    ap.add_argument("--chunk-bytes", type=int, default=16,
                    help="bytes per plan chunk of the smallest size (a multiple of the buffer alignment)")
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3, help="number of sizes in the sweep")
    ap.add_argument("--target", choices=["mscclpp", "msccl"], default="mscclpp",
                    help="mscclc/msccl-run --target (msccl: no MSCCL++ per-threadblock limits)")
    ap.add_argument("--backend", default="cpu", help="msccl-run backend (races are checked on cpu only)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="stdlib-") as tmp:
        plan_path = os.path.join(tmp, args.algo.replace("/", "_") + ".json")
        cmd = [args.mscclc, "stdlib:" + args.algo, "-o", plan_path, "--target=" + args.target]
        for d in args.defines:
            cmd += ["-D", d]
        print("+ " + " ".join(cmd), flush=True)
        comp = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sys.stdout.write(comp.stdout)
        sys.stdout.write(comp.stderr)

        if args.expect_error is not None:
            if comp.returncode == 0:
                print("FAIL: mscclc accepted a shape the algorithm must refuse")
                return 1
            if args.expect_error not in comp.stderr + comp.stdout:
                print("FAIL: mscclc refused, but without the message %r" % args.expect_error)
                return 1
            print("ok: refused with %r" % args.expect_error)
            return 0

        if comp.returncode != 0:
            print("FAIL: mscclc exited with %d" % comp.returncode)
            return 1
        with open(plan_path) as f:
            plan = json.load(f)
        gpu = plan["gpus"][0]
        align = int(plan.get("buffer_alignment", 16))
        chunk_bytes = max(align, args.chunk_bytes // align * align)
        # msccl-run's size is chunk bytes x max(input_chunks, output_chunks) (runtime messageSizesFor).
        base = chunk_bytes * max(gpu["input_chunks"], gpu["output_chunks"])
        top = base * args.factor ** (args.steps - 1)
        cmd = [args.run, plan_path, "--backend", args.backend, "-b", str(base), "-e", str(top), "-f", str(args.factor),
               "-d", args.dtype, "--" + args.mode, "-n", "2", "-w", "1", "--check", "--target=" + args.target]
        if args.backend == "cpu":
            cmd.append("--race-check")
        print("+ " + " ".join(cmd), flush=True)
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sys.stdout.write(run.stdout)
        if run.returncode != 0:
            print("FAIL: msccl-run exited with %d" % run.returncode)
            return 1
        rows = [l for l in run.stdout.splitlines() if l.strip() and not l.startswith("#")
                and not l.startswith("msccl-run: warning:")]
        if len(rows) != args.steps or any("skipped" in l for l in rows):
            print("FAIL: expected %d verified sizes, got:\n%s" % (args.steps, "\n".join(rows)))
            return 1
        return 0


if __name__ == "__main__":
    sys.exit(main())
