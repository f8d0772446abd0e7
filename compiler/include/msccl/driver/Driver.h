//===- Driver.h - The mscclc command line as a library call -----------------------------===//
//
// runMscclc is all of `mscclc`: it parses the command line (llvm::cl), loads the input (a file,
// `-` for stdin, or `stdlib:NAME` for stdlib/NAME.msccl), runs parse -> check -> elaborate ->
// passes -> emit, and writes the result to `-o FILE` or `out`. Diagnostics go to `err`.
// Tests call it in-process; tools/mscclc/main.cpp only forwards argv and the std streams.
//
// Exit codes: 0 success; 1 any error (bad options, missing input, compile errors, unwritable
// output, failed --verify-diagnostics).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <llvm/Support/raw_ostream.h>

#include <istream>

namespace msccl::driver {

/// Runs mscclc with `argv[0..argc)` (argv[0] is the program name). `in` is read for input `-`.
int runMscclc(int argc, const char *const *argv, std::istream &in, llvm::raw_ostream &out, llvm::raw_ostream &err);

} // namespace msccl::driver
