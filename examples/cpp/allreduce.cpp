// A customized communicator in ~80 lines: compile two AllReduce algorithms of the stdlib for this
// job's world size (through the on-disk cache), register them for disjoint size ranges, then for
// each message size select a plan, run it on this rank's buffers and check the sums.
// Run with one process per rank:  mpirun -np 4 ./msccl_allreduce_example
#include <msccl/msccl.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  try {
    auto comm = msccl::Communicator::mpi(&argc, &argv);
    const int rank = comm->rank();
    const uint32_t n = comm->worldSize();

    // 1. Compile (a cache hit from the second run on; MSCCL_CACHE_DIR says where).
    msccl::CompileParams params;
    params.defines = {{"ranks", std::to_string(n)}, {"inplace", "false"}};
    msccl::PlanRegistry registry;
    msccl::PlanInfo small;
    small.name = "allpairs-small";
    small.maxBytes = 64 * 1024;
    small.tags = {"latency"};
    registry.add(msccl::compile("stdlib:allreduce/allpairs", params), small);
    msccl::PlanInfo large;
    large.name = "ring-large";
    large.minBytes = 64 * 1024 + 1;
    registry.add(msccl::compile("stdlib:allreduce/ring", params), large);

    // 2. and 3. Select and execute per message size.
    msccl::Executor executor(comm);
    int failures = 0;
    for (size_t bytes : {size_t(4096), size_t(1) << 20}) {
      msccl::SelectRequest request = comm->request("allreduce", bytes, /*inPlace=*/false);
      const msccl::RegisteredPlan &chosen = registry.selectOrThrow(request);
      if (rank == 0)
        std::printf("%s", registry.explainText(request).c_str());
      const size_t count = bytes / sizeof(float);
      std::vector<float> send(count), recv(count, -1.0f);
      for (size_t i = 0; i < count; ++i)
        send[i] = float(rank + 1) + float(i % 5);
      executor.execute(rank, send.data(), recv.data(), bytes, bytes, msccl::plan::DataType::Float32,
                       msccl::plan::ReduceOp::Sum, chosen.plan);
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i)
        wrong += recv[i] != float(n * (n + 1) / 2) + float(n) * float(i % 5);
      std::printf("rank %d: %zu bytes with %s: %s\n", rank, bytes, chosen.info.name.c_str(),
                  wrong ? "WRONG" : "ok");
      failures += wrong != 0;
    }
    return failures ? 1 : 0;
  } catch (const msccl::Error &e) {
    std::fprintf(stderr, "error (%s): %s\n", msccl::errorCodeName(e.code()), e.what());
    return 1;
  }
}
