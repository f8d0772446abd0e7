// Compiles a stdlib AllReduce in-process with the installed compiler library and runs the plan on
// the installed CPU executor, verifying every output element.
// Usage: consumer OUT_PLAN.json
#include "msccl/driver/Driver.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Verify.h"

#include <iostream>
#include <sstream>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer OUT_PLAN.json\n";
    return 2;
  }
  std::cout << "consumer: stdlib at " << MSCCL_STDLIB_DIR << "\n";
  const char *args[] = {"mscclc", "stdlib:allreduce/ring", "-D", "ranks=4", "-o", argv[1]};
  std::istringstream none;
  if (int rc = msccl::driver::runMscclc(6, args, none, llvm::outs(), llvm::errs()))
    return rc;
  msccl::plan::Plan plan = msccl::plan::readPlanFile(argv[1]);
  auto executor = msccl::runtime::makeCpuExecutor();
  msccl::runtime::RunOptions options;
  options.size = 1 << 20;
  msccl::runtime::RunReport report = msccl::runtime::runCollective(*executor, plan, options);
  std::cout << "consumer: " << plan.collective << " over " << plan.gpus.size() << " ranks, "
            << report.verify.elements << " elements checked, " << report.verify.wrong << " wrong\n";
  return report.verify.checked && report.verify.wrong == 0 && report.verify.elements > 0 ? 0 : 1;
}
