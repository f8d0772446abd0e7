//===- Driver.h - msccl-run: run and verify execution plans ------------------------------===//
//
// Consumes msccl-run's command line; loads one plan (or, with --plans DIR, every plan of a
// folder and picks per size the plan whose collective, rank count and size range fit), runs it
// on a backend over a sweep of message sizes, verifies every output element, and prints an
// nccl-tests style table (size, count, type, redop, time, algbw, busbw, #wrong, plan) to `out`;
// errors and deadlock reports go to `err`. Returns the process exit status: 0 when every row
// ran and was right; 1 on any wrong result, deadlock, misuse or plan/size error; 2 on bad
// usage. Never calls exit() (except llvm::cl's --help), so tests call it in-process.
//
// Usage: msccl-run PLAN.json [--backend cpu|cuda|sim [--topology T]] [-b MIN -e MAX -f FACTOR | --size S]
//          [-d float16|bfloat16|float32|int32|uint32|uint8] [-o sum|min|max]
//          [--in-place|--out-of-place] [-n ITERS -w WARMUP] [--check|--no-check]
//          [--packet LL16|LL8] [--jsonl FILE] [--plans DIR [--collective C] [--nranks N]]
//        msccl-run --backend sim [--topology T] --suggest-ranges PLAN.json... [-b -e -f]
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <iosfwd>

namespace msccl::run {

/// Run msccl-run with `argv[0..argc)` (argv[0] is the program name).
int runDriver(int argc, const char *const *argv, std::ostream &out, std::ostream &err);

} // namespace msccl::run
