//===- ApiProcessBench.cpp - libmsccl's per-call time with one process per rank ----------===//
//
// Prints figures (never a test). Under mpirun (MPI only hands out the unique id and times
// MPI's own collective):
//   mpirun -np 4 msccl-bench-api-process [--iterations N]
// per call of Executor::execute on a communicator from the unique-id bootstrap, as the NCCL shim
// and the Python module run plans (stdlib allreduce/allpairs and allgather/allpairs, out of place,
// CPU backend), at 1 KiB and 1 MiB, against MPI_Allreduce / MPI_Allgather of the same bytes in
// the same run; the time is the maximum over ranks of the mean per call.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/msccl.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace msccl;
using Clock = std::chrono::steady_clock;

namespace {
double maxOverRanks(double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}
} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1, iterations = 500;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
      iterations = std::max(1, std::atoi(argv[++i]));
  int rc = 0;
  try {
    UniqueId id;
    if (rank == 0)
      id = Communicator::getUniqueId();
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    auto comm = Communicator::initRank(id, uint32_t(n), uint32_t(rank));
    Executor ex(comm);
    if (rank == 0)
      std::printf("# msccl-bench-api-process: %d processes, unique-id bootstrap, CPU backend; us per call, max over "
                  "ranks (%d calls)\n# coll          bytes    msccl-api      MPI   MPI/msccl\n",
                  n, iterations);
    for (const char *algo : {"allreduce/allpairs", "allgather/allpairs"}) {
      CompileParams p;
      p.defines = {{"ranks", std::to_string(n)}, {"inplace", "false"}};
      PlanPtr plan = compile(std::string("stdlib:") + algo, p);
      const bool gather = std::strcmp(algo, "allgather/allpairs") == 0;
      for (size_t bytes : {size_t(1024), size_t(1) << 20}) {
        const size_t in = gather ? bytes / size_t(n) : bytes;
        std::vector<float> s(in / 4, 1.f), r(bytes / 4);
        auto call = [&] {
          ex.execute(rank, s.data(), r.data(), in, bytes, plan::DataType::Float32, plan::ReduceOp::Sum, plan);
        };
        auto mpi = [&] {
          if (gather)
            MPI_Allgather(s.data(), int(in / 4), MPI_FLOAT, r.data(), int(in / 4), MPI_FLOAT, MPI_COMM_WORLD);
          else
            MPI_Allreduce(s.data(), r.data(), int(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        };
        const int reps = bytes > 4096 ? std::max(1, iterations / 10) : iterations;
        double t[2];
        for (int k = 0; k < 2; ++k) {
          for (int i = 0; i < 20; ++i)
            k ? mpi() : call();
          MPI_Barrier(MPI_COMM_WORLD);
          auto t0 = Clock::now();
          for (int i = 0; i < reps; ++i)
            k ? mpi() : call();
          t[k] = maxOverRanks(std::chrono::duration<double>(Clock::now() - t0).count() / reps * 1e6);
        }
        if (rank == 0)
          std::printf("  %-10s %10zu %11.1f %8.1f %10.2f\n", gather ? "AllGather" : "AllReduce", bytes, t[0], t[1],
                      t[1] / t[0]);
      }
    }
  } catch (const Error &e) {
    std::fprintf(stderr, "msccl-bench-api-process: rank %d: %s\n", rank, e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
