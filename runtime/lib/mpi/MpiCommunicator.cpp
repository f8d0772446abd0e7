//===- MpiCommunicator.cpp - MPI bootstrap, node split, exchange and shared segments ------===//
//
// Consumes MPI_COMM_WORLD (MPI_Init_thread, FUNNELED) and MSCCL_RANKS_PER_NODE; produces the
// node communicator (MPI_Comm_split_type SHARED, or split by rank / k), collective helpers with
// deadlines (non-blocking MPI_Ibarrier / MPI_Iallreduce polled with MPI_Test), and
// NodeSharedMemory: MPI_Win_allocate_shared over the node communicator (node peers map each
// other's segments, MPI_Win_shared_query) plus MPI_Win_create of the same memory over the world
// communicator, locked once (MPI_Win_lock_all) for passive-target puts, accumulates and flushes.
// One of the two bootstraps behind Communicator (CommunicatorImpl.h). See Communicator.h.
//
//===------------------------------------------------------------------------------------===//
#include "CommunicatorImpl.h"

#include "msccl/runtime/Executor.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace msccl::runtime {

namespace {
void check(int rc, const char *what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw ExecutionError(ErrorKind::Backend, std::string(what) + " failed: " + std::string(msg, size_t(len)));
  }
}

/// Poll `req` until done or `deadline`; false on timeout (the request is then left pending).
bool waitUntil(MPI_Request &req, double deadline) {
  int done = 0;
  unsigned spins = 0;
  for (;;) {
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done)
      return true;
    if (monotonicSeconds() > deadline)
      return false;
    if (++spins > 100)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}
} // namespace

struct MpiComm final : Communicator::Impl {
  MPI_Comm world = MPI_COMM_WORLD;
  MPI_Comm node = MPI_COMM_NULL;
  bool finalizeOnDestroy = false; // only a built communicator finalises MPI (not a failed init)

  ~MpiComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalizeOnDestroy && !finalized) {
      if (node != MPI_COMM_NULL)
        MPI_Comm_free(&node);
      MPI_Finalize();
    }
  }
  std::vector<uint8_t> allGather(const void *data, size_t bytes) override;
  uint64_t allReduceSum(uint64_t v) override;
  uint64_t allReduceMax(uint64_t v) override;
  double allReduceMax(double v) override;
  void barrier() override;
  bool barrierUntil(double deadline) override;
  bool allReduceMaxUntil(uint64_t &v, double deadline) override;
  [[noreturn]] void abort(int code) override;
  std::unique_ptr<NodeSharedMemory> allocateShared(size_t bytes) override;
};

struct MpiShared final : NodeSharedMemory::Impl {
  MpiComm *comm = nullptr;
  MPI_Win shared = MPI_WIN_NULL;
  MPI_Win rma = MPI_WIN_NULL;

  ~MpiShared() override {
    MPI_Win_unlock_all(rma);
    MPI_Win_free(&rma);
    MPI_Win_free(&shared);
  }
  void put(int rank, uint64_t offset, const void *src, uint64_t bytes) override;
  void add(int rank, uint64_t offset, uint64_t value) override;
  void flush(int rank) override;
  void flushAll() override;
  void progress() override;
};

std::unique_ptr<Communicator> Communicator::initWorld(int *argc, char ***argv) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  }
  auto impl = std::make_unique<MpiComm>();
  impl->splitName = "MPI shared-memory split";
  MPI_Comm_rank(MPI_COMM_WORLD, &impl->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &impl->size);
  MPI_Comm shm;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm), "MPI_Comm_split_type");
  int color = 0;
  int v = 0;
  try {
    v = ranksPerNodeFromEnv();
  } catch (...) {
    MPI_Comm_free(&shm);
    throw;
  }
  if (v > 0) {
    impl->ranksPerNode = v;
    color = impl->rank / int(v);
    check(MPI_Comm_split(MPI_COMM_WORLD, color, impl->rank, &impl->node), "MPI_Comm_split");
    // Every rank of the node must share memory with this one.
    MPI_Group gNode, gShm;
    MPI_Comm_group(impl->node, &gNode);
    MPI_Comm_group(shm, &gShm);
    int nn = 0;
    MPI_Group_size(gNode, &nn);
    std::vector<int> in(static_cast<size_t>(nn)), out(static_cast<size_t>(nn));
    for (int i = 0; i < nn; ++i)
      in[size_t(i)] = i;
    MPI_Group_translate_ranks(gNode, nn, in.data(), gShm, out.data());
    int ok = std::all_of(out.begin(), out.end(), [](int x) { return x != MPI_UNDEFINED; }) ? 1 : 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Group_free(&gNode);
    MPI_Group_free(&gShm);
    MPI_Comm_free(&shm);
    if (!all) {
      MPI_Comm_free(&impl->node);
      throw ExecutionError(ErrorKind::Backend, "MSCCL_RANKS_PER_NODE=" + std::to_string(v) +
                                                   " groups ranks into a node that do not share memory");
    }
  } else {
    impl->node = shm;
    // Node index = smallest world rank of the node, renumbered below.
    int leader = impl->rank;
    MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, impl->node);
    color = leader;
  }
  std::vector<int> colors(size_t(impl->size));
  MPI_Allgather(&color, 1, MPI_INT, colors.data(), 1, MPI_INT, MPI_COMM_WORLD);
  assignNodes(*impl, colors);
  impl->finalizeOnDestroy = true;
  return Communicator::fromImpl(std::move(impl));
}

std::vector<uint8_t> MpiComm::allGather(const void *data, size_t bytes) {
  std::vector<uint8_t> all(bytes * size_t(size));
  check(MPI_Allgather(data, int(bytes), MPI_BYTE, all.data(), int(bytes), MPI_BYTE, world), "MPI_Allgather");
  return all;
}

uint64_t MpiComm::allReduceSum(uint64_t v) {
  uint64_t out = 0;
  check(MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, world), "MPI_Allreduce");
  return out;
}
uint64_t MpiComm::allReduceMax(uint64_t v) {
  uint64_t out = 0;
  check(MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_MAX, world), "MPI_Allreduce");
  return out;
}
double MpiComm::allReduceMax(double v) {
  double out = 0;
  check(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, world), "MPI_Allreduce");
  return out;
}
void MpiComm::barrier() { check(MPI_Barrier(world), "MPI_Barrier"); }

bool MpiComm::barrierUntil(double deadline) {
  MPI_Request req;
  check(MPI_Ibarrier(world, &req), "MPI_Ibarrier");
  return waitUntil(req, deadline);
}

bool MpiComm::allReduceMaxUntil(uint64_t &v, double deadline) {
  static uint64_t in, out; // must outlive a request abandoned on timeout (the job aborts then)
  in = v;
  MPI_Request req;
  check(MPI_Iallreduce(&in, &out, 1, MPI_UINT64_T, MPI_MAX, world, &req), "MPI_Iallreduce");
  if (!waitUntil(req, deadline))
    return false;
  v = out;
  return true;
}

void MpiComm::abort(int code) {
  MPI_Abort(world, code);
  std::_Exit(code);
}

std::unique_ptr<NodeSharedMemory> MpiComm::allocateShared(size_t bytes) {
  auto m = std::make_unique<MpiShared>();
  m->comm = this;
  size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void *base = nullptr;
  int rc = MPI_Win_allocate_shared(MPI_Aint(rounded), 1, info, node, &base, &m->shared);
  MPI_Info_free(&info);
  check(rc, "MPI_Win_allocate_shared");
  m->base = static_cast<uint8_t *>(base);
  std::memset(m->base, 0, rounded);
  uint64_t mine = rounded;
  m->sizes.resize(size_t(size));
  check(MPI_Allgather(&mine, 1, MPI_UINT64_T, m->sizes.data(), 1, MPI_UINT64_T, world), "MPI_Allgather");
  m->peers.assign(size_t(size), nullptr);
  MPI_Group gNode, gWorld;
  MPI_Comm_group(node, &gNode);
  MPI_Comm_group(world, &gWorld);
  for (size_t i = 0; i < nodeRanks.size(); ++i) {
    int w = nodeRanks[i], local = 0;
    MPI_Group_translate_ranks(gWorld, 1, &w, gNode, &local);
    MPI_Aint sz = 0;
    int disp = 0;
    void *p = nullptr;
    check(MPI_Win_shared_query(m->shared, local, &sz, &disp, &p), "MPI_Win_shared_query");
    m->peers[size_t(w)] = static_cast<uint8_t *>(p);
  }
  MPI_Group_free(&gNode);
  MPI_Group_free(&gWorld);
  check(MPI_Win_create(m->base, MPI_Aint(rounded), 1, MPI_INFO_NULL, world, &m->rma), "MPI_Win_create");
  check(MPI_Win_lock_all(MPI_MODE_NOCHECK, m->rma), "MPI_Win_lock_all");
  MPI_Barrier(world); // every segment is zeroed before anyone writes to it
  return std::make_unique<NodeSharedMemory>(std::move(m));
}

void MpiShared::put(int rank, uint64_t offset, const void *src, uint64_t bytes) {
  // MPI counts are int: split very large puts.
  const uint64_t maxPiece = 1ull << 30;
  const uint8_t *s = static_cast<const uint8_t *>(src);
  while (bytes > 0) {
    uint64_t n = std::min(bytes, maxPiece);
    check(MPI_Put(s, int(n), MPI_BYTE, rank, MPI_Aint(offset), int(n), MPI_BYTE, rma), "MPI_Put");
    s += n;
    offset += n;
    bytes -= n;
  }
}

void MpiShared::add(int rank, uint64_t offset, uint64_t value) {
  check(MPI_Accumulate(&value, 1, MPI_UINT64_T, rank, MPI_Aint(offset), 1, MPI_UINT64_T, MPI_SUM, rma),
        "MPI_Accumulate");
  // The origin buffer must stay valid until local completion.
  check(MPI_Win_flush_local(rank, rma), "MPI_Win_flush_local");
}

void MpiShared::flush(int rank) { check(MPI_Win_flush(rank, rma), "MPI_Win_flush"); }
void MpiShared::flushAll() { check(MPI_Win_flush_all(rma), "MPI_Win_flush_all"); }

void MpiShared::progress() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm->world, &flag, MPI_STATUS_IGNORE);
}

} // namespace msccl::runtime
