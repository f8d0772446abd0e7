// The CUDA lowering and AllToAllV (plans with variable_sizes): a symbolic plan is refused with the
// count-matrix message (it never reaches the device); the concrete plan of a CountsResolver lowers
// like any plan.
#include "msccl/cuda/Lowering.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Counts.h"
#include "msccl/runtime/Executor.h"

#include <catch2/catch.hpp>

using namespace msccl;

TEST_CASE("cuda lowering refuses a symbolic AllToAllV plan and lowers a resolved one", "[lowering][alltoallv]") {
  plan::Plan p = plan::readPlanFile(std::string(MSCCL_ALLTOALLV_PLANS_DIR) + "/staged_3.json");
  REQUIRE(p.variableSizes);
  try {
    cuda::lowerForDevice(p, 4096, 4096);
    FAIL("a symbolic plan was lowered");
  } catch (const runtime::ExecutionError &e) {
    CHECK(e.kind() == runtime::ErrorKind::InvalidSize);
    CHECK(std::string(e.what()).find("runs with a count matrix") != std::string::npos);
  }
  runtime::CountsResolver res(p);
  runtime::CountMatrix m = runtime::makeCounts("uniform", 3, 8); // 32-byte blocks of float32
  const plan::Plan &c = res.resolve(m, plan::DataType::Float32);
  std::vector<cuda::LoweredRank> ranks = cuda::lowerForDevice(c, res.sizes().inputBytes, res.sizes().outputBytes);
  CHECK(ranks.size() == 3);
}
