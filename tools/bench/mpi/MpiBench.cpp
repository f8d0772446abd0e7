//===- MpiBench.cpp - msccl-bench-mpi: one-process-per-rank runtime vs OpenMPI -----------===//
//
// Prints figures (never a test). Two modes, both under mpirun:
//   mpirun -np 4 msccl-bench-mpi collectives
//     stdlib AllReduce (allpairs), AllGather (allpairs) and AllToAll (allpairs) compiled with
//     mscclc for the job's rank count, at 1 KiB, 1 MiB and 64 MiB (nccl-tests sizes, the same
//     bytes for every contender): time per call of runCollectiveDistributed (this runtime),
//     of MPI_Allreduce / MPI_Allgather / MPI_Alltoall on the same processes, and of the
//     single-process CPU executor (all ranks in rank 0's process, the others idle); ratios.
//   MSCCL_RANKS_PER_NODE=1 mpirun -np 2 msccl-bench-mpi proxy
//     the port proxy between two "nodes": stdlib sendrecv/pairs (port channels) at 1, 16 and
//     64 MiB, against a plain loop of MPI_Put + MPI_Win_flush of the same bytes.
// Options: --plans-dir DIR (default: a temporary directory; rank 0 runs mscclc there), -n ITERS.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Communicator.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/DistributedRun.h"
#include "msccl/runtime/Verify.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace msccl;
using namespace msccl::runtime;

namespace {

std::string compile(Communicator &comm, const std::string &algo, const std::string &defines, const std::string &dir) {
  std::string name = algo;
  for (char &c : name)
    if (c == '/')
      c = '_';
  std::string path = dir + "/" + name + "_" + std::to_string(comm.size()) + ".json";
  if (comm.rank() == 0) {
    std::string cmd = std::string(MSCCL_MSCCLC) + " stdlib:" + algo + " -D ranks=" + std::to_string(comm.size()) +
                      " " + defines + " -o " + path;
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "msccl-bench-mpi: %s failed\n", cmd.c_str());
      comm.abort(1);
    }
  }
  comm.barrier();
  return path;
}

double timeMpi(CollectiveKind kind, uint64_t size, int n, unsigned iters) {
  // Same nccl-tests bytes: allreduce S per rank; allgather S total output; alltoall S per rank.
  uint64_t count = size / 4;
  std::vector<float> in(kind == CollectiveKind::AllGather ? count / n : count, 1.0f), out(count, 0.0f);
  auto once = [&] {
    switch (kind) {
    case CollectiveKind::AllReduce:
      MPI_Allreduce(in.data(), out.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case CollectiveKind::AllGather:
      MPI_Allgather(in.data(), int(count / n), MPI_FLOAT, out.data(), int(count / n), MPI_FLOAT, MPI_COMM_WORLD);
      break;
    default:
      MPI_Alltoall(in.data(), int(count / n), MPI_FLOAT, out.data(), int(count / n), MPI_FLOAT, MPI_COMM_WORLD);
      break;
    }
  };
  once();
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (unsigned i = 0; i < iters; ++i)
    once();
  double t = (MPI_Wtime() - t0) / iters, mx = 0;
  MPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return mx;
}

void collectives(Communicator &comm, const std::string &dir, unsigned iters) {
  struct Case {
    const char *label, *algo;
    CollectiveKind kind;
  } cases[] = {{"AllReduce", "allreduce/allpairs", CollectiveKind::AllReduce},
               {"AllGather", "allgather/allpairs", CollectiveKind::AllGather},
               {"AllToAll", "alltoall/allpairs", CollectiveKind::AllToAll}};
  const uint64_t sizes[] = {1ull << 10, 1ull << 20, 64ull << 20};
  registerCpuExecutor();
  auto cpu = makeCpuExecutor();
  if (comm.rank() == 0)
    std::printf("# msccl-bench-mpi collectives: %d processes, %s; time per call (us), max over ranks\n"
                "# %-9s %10s %12s %12s %12s %9s %9s\n",
                comm.size(), comm.describeNodes().c_str(), "coll", "bytes", "msccl-mpi", "OpenMPI", "1-process",
                "mpi/ours", "1p/ours");
  for (const Case &c : cases) {
    plan::Plan plan = plan::readPlanFile(compile(comm, c.algo, "-D inplace=false", dir));
    for (uint64_t size : sizes) {
      RunOptions ro;
      ro.size = size;
      ro.iterations = size >= (64ull << 20) ? std::max(1u, iters / 4) : iters;
      ro.warmup = 1;
      ro.check = false;
      RunReport ours = runCollectiveDistributed(comm, plan, ro);
      double mpi = timeMpi(c.kind, size, comm.size(), ro.iterations);
      double single = 0;
      if (comm.rank() == 0)
        single = runCollective(*cpu, plan, ro).secondsPerLaunch;
      comm.barrier();
      if (comm.rank() == 0)
        std::printf("  %-9s %10llu %12.1f %12.1f %12.1f %9.2f %9.2f\n", c.label, (unsigned long long)size,
                    ours.secondsPerLaunch * 1e6, mpi * 1e6, single * 1e6, mpi / ours.secondsPerLaunch,
                    single / ours.secondsPerLaunch);
      std::fflush(stdout);
    }
  }
}

void proxy(Communicator &comm, const std::string &dir, unsigned iters) {
  if (comm.size() != 2 || comm.numNodes() != 2) {
    if (comm.rank() == 0)
      std::fprintf(stderr, "msccl-bench-mpi proxy: run 2 processes on 2 nodes (MSCCL_RANKS_PER_NODE=1 mpirun -np 2)\n");
    return;
  }
  plan::Plan plan = plan::readPlanFile(compile(comm, "sendrecv/pairs", "-D inplace=false -D ranks_per_node=1", dir));
  if (comm.rank() == 0)
    std::printf("# msccl-bench-mpi proxy: 2 processes, %s; one direction each way at once\n"
                "# %10s %14s %14s %8s\n",
                comm.describeNodes().c_str(), "bytes", "proxy GB/s", "MPI_Put GB/s", "ratio");
  for (uint64_t size : {1ull << 20, 16ull << 20, 64ull << 20}) {
    RunOptions ro;
    ro.size = size;
    ro.iterations = iters;
    ro.warmup = 1;
    ro.check = false;
    RunReport ours = runCollectiveDistributed(comm, plan, ro);
    // Plain MPI_Put loop: each rank puts `size` bytes to the other and flushes, per iteration.
    std::unique_ptr<NodeSharedMemory> win = comm.allocateShared(size);
    std::vector<uint8_t> src(size, 1);
    int peer = 1 - comm.rank();
    win->put(peer, 0, src.data(), size);
    win->flush(peer);
    comm.barrier();
    double t0 = MPI_Wtime();
    for (unsigned i = 0; i < iters; ++i) {
      win->put(peer, 0, src.data(), size);
      win->flush(peer);
    }
    double t = (MPI_Wtime() - t0) / iters;
    t = comm.allReduceMax(t);
    comm.barrier();
    win.reset();
    double putBw = double(size) / t / 1e9;
    if (comm.rank() == 0)
      std::printf("  %10llu %14.3f %14.3f %8.2f\n", (unsigned long long)size, ours.algbw, putBw, ours.algbw / putBw);
    std::fflush(stdout);
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "collectives";
  std::string dir;
  unsigned iters = 8;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--plans-dir") == 0)
      dir = argv[i + 1];
    else if (std::strcmp(argv[i], "-n") == 0)
      iters = unsigned(std::atoi(argv[i + 1]));
  }
  try {
    auto comm = Communicator::initWorld(&argc, &argv);
    if (dir.empty()) {
      dir = "/tmp/msccl-bench-mpi." + std::to_string(comm->rank() == 0 ? 0 : 0);
      if (comm->rank() == 0)
        std::system(("mkdir -p " + dir).c_str());
    }
    if (mode == "collectives")
      collectives(*comm, dir, iters);
    else if (mode == "proxy")
      proxy(*comm, dir, iters);
    else if (comm->rank() == 0)
      std::fprintf(stderr, "usage: mpirun -np N msccl-bench-mpi collectives|proxy [--plans-dir DIR] [-n ITERS]\n");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "msccl-bench-mpi: %s\n", e.what());
    return 1;
  }
  return 0;
}
