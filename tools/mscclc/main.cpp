//===- main.cpp - mscclc: .msccl -> MSCCL++ JSON execution plan -------------------------===//
// All logic lives in msccl/driver/Driver.h; this forwards argv and the process streams.
#include "msccl/driver/Driver.h"

#include <iostream>

int main(int argc, char **argv) {
  return msccl::driver::runMscclc(argc, argv, std::cin, llvm::outs(), llvm::errs());
}
