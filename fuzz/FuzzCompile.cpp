//===- FuzzCompile.cpp - libFuzzer target: .msccl source -> plan ------------------------===//
//
// Feeds the input as a .msccl file (stdin, `-`) to the whole mscclc driver in-process:
// parse, check, elaborate, passes, JSON. Work is bounded by the driver's own limits, set low
// here (loop iterations, call depth, plan size), so that no input can run for long. Every
// outcome (a plan or diagnostics) is fine; a crash, a sanitizer report, a leak or an uncaught
// exception is a bug.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/driver/Driver.h"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char *>(data), size));
  std::string out, err;
  llvm::raw_string_ostream os(out), es(err);
  const char *argv[] = {"mscclc", "-", "--max-loop-iterations=20000", "--max-call-depth=40",
                        "--max-plan-size=200000", "--compact"};
  int rc = msccl::driver::runMscclc(int(sizeof argv / sizeof *argv), argv, in, os, es);
  os.flush();
  es.flush();
  // An error must say something; success must produce a plan.
  if (rc != 0 && err.empty())
    __builtin_trap();
  if (rc == 0 && out.empty())
    __builtin_trap();
  return 0;
}
