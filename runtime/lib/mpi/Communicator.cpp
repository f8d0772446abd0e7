//===- Communicator.cpp - MPI bootstrap, node split, exchange and shared segments ---------===//
//
// Consumes MPI_COMM_WORLD (MPI_Init_thread, FUNNELED) and MSCCL_RANKS_PER_NODE; produces the
// node communicator (MPI_Comm_split_type SHARED, or split by rank / k), collective helpers with
// deadlines (non-blocking MPI_Ibarrier / MPI_Iallreduce polled with MPI_Test), and
// NodeSharedMemory: MPI_Win_allocate_shared over the node communicator (node peers map each
// other's segments, MPI_Win_shared_query) plus MPI_Win_create of the same memory over the world
// communicator, locked once (MPI_Win_lock_all) for passive-target puts, accumulates and flushes.
// See Communicator.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Communicator.h"

#include "msccl/runtime/Executor.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace msccl::runtime {

double monotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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

struct Communicator::Impl {
  MPI_Comm world = MPI_COMM_WORLD;
  MPI_Comm node = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::vector<int> nodeOf;   // per world rank
  std::vector<int> nodeRanks;
  int numNodes = 1;
  int ranksPerNode = 0;      // from MSCCL_RANKS_PER_NODE, 0 when unset
};

struct NodeSharedMemory::Impl {
  Communicator::Impl *comm = nullptr;
  MPI_Win shared = MPI_WIN_NULL;
  MPI_Win rma = MPI_WIN_NULL;
  uint8_t *base = nullptr;
  std::vector<uint64_t> sizes;
  std::vector<uint8_t *> peers;
};

bool Communicator::launchedByMpi() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v))
      return true;
  return false;
}

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    if (impl_->node != MPI_COMM_NULL)
      MPI_Comm_free(&impl_->node);
    MPI_Finalize();
  }
}

std::unique_ptr<Communicator> Communicator::initWorld(int *argc, char ***argv) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  }
  auto impl = std::make_unique<Impl>();
  MPI_Comm_rank(MPI_COMM_WORLD, &impl->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &impl->size);
  MPI_Comm shm;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm), "MPI_Comm_split_type");
  int color = 0;
  if (const char *k = std::getenv("MSCCL_RANKS_PER_NODE"); k && *k) {
    char *end = nullptr;
    long v = std::strtol(k, &end, 10);
    if (*end != '\0' || v <= 0 || v > 1 << 20) {
      MPI_Comm_free(&shm);
      throw ExecutionError(ErrorKind::Backend,
                           "MSCCL_RANKS_PER_NODE='" + std::string(k) + "' is not a positive integer");
    }
    impl->ranksPerNode = int(v);
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
  std::vector<int> distinct = colors;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  impl->numNodes = int(distinct.size());
  impl->nodeOf.resize(size_t(impl->size));
  for (int r = 0; r < impl->size; ++r) {
    impl->nodeOf[size_t(r)] = int(std::lower_bound(distinct.begin(), distinct.end(), colors[size_t(r)]) - distinct.begin());
    if (colors[size_t(r)] == color)
      impl->nodeRanks.push_back(r);
  }
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->size; }
int Communicator::node() const { return impl_->nodeOf[size_t(impl_->rank)]; }
int Communicator::numNodes() const { return impl_->numNodes; }
int Communicator::nodeOf(int r) const { return impl_->nodeOf.at(size_t(r)); }
const std::vector<int> &Communicator::nodeRanks() const { return impl_->nodeRanks; }

std::string Communicator::describeNodes() const {
  std::vector<std::vector<int>> nodes(size_t(impl_->numNodes));
  for (int r = 0; r < impl_->size; ++r)
    nodes[size_t(impl_->nodeOf[size_t(r)])].push_back(r);
  std::string s = std::to_string(nodes.size()) + (nodes.size() == 1 ? " node:" : " nodes:");
  for (auto &n : nodes) {
    s += " {";
    for (size_t i = 0; i < n.size(); ++i)
      s += (i ? "," : "") + std::to_string(n[i]);
    s += "}";
  }
  s += impl_->ranksPerNode ? " (MSCCL_RANKS_PER_NODE=" + std::to_string(impl_->ranksPerNode) + ")"
                           : std::string(" (MPI shared-memory split)");
  return s;
}

std::vector<std::vector<uint8_t>> Communicator::allGather(const void *data, size_t bytes) {
  std::vector<uint8_t> all(bytes * size_t(impl_->size));
  check(MPI_Allgather(data, int(bytes), MPI_BYTE, all.data(), int(bytes), MPI_BYTE, impl_->world), "MPI_Allgather");
  std::vector<std::vector<uint8_t>> out(size_t(impl_->size));
  for (int r = 0; r < impl_->size; ++r)
    out[size_t(r)].assign(all.begin() + long(bytes) * r, all.begin() + long(bytes) * (r + 1));
  return out;
}

uint64_t Communicator::allReduceSum(uint64_t v) {
  uint64_t out = 0;
  check(MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, impl_->world), "MPI_Allreduce");
  return out;
}
uint64_t Communicator::allReduceMax(uint64_t v) {
  uint64_t out = 0;
  check(MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_MAX, impl_->world), "MPI_Allreduce");
  return out;
}
double Communicator::allReduceMax(double v) {
  double out = 0;
  check(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, impl_->world), "MPI_Allreduce");
  return out;
}
void Communicator::barrier() { check(MPI_Barrier(impl_->world), "MPI_Barrier"); }

bool Communicator::barrierUntil(double deadline) {
  MPI_Request req;
  check(MPI_Ibarrier(impl_->world, &req), "MPI_Ibarrier");
  return waitUntil(req, deadline);
}

bool Communicator::allReduceMaxUntil(uint64_t &v, double deadline) {
  static uint64_t in, out; // must outlive a request abandoned on timeout (the job aborts then)
  in = v;
  MPI_Request req;
  check(MPI_Iallreduce(&in, &out, 1, MPI_UINT64_T, MPI_MAX, impl_->world, &req), "MPI_Iallreduce");
  if (!waitUntil(req, deadline))
    return false;
  v = out;
  return true;
}

void Communicator::abort(int code) {
  MPI_Abort(impl_->world, code);
  std::_Exit(code);
}

std::unique_ptr<NodeSharedMemory> Communicator::allocateShared(size_t bytes) {
  auto m = std::make_unique<NodeSharedMemory::Impl>();
  m->comm = impl_.get();
  size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void *base = nullptr;
  int rc = MPI_Win_allocate_shared(MPI_Aint(rounded), 1, info, impl_->node, &base, &m->shared);
  MPI_Info_free(&info);
  check(rc, "MPI_Win_allocate_shared");
  m->base = static_cast<uint8_t *>(base);
  std::memset(m->base, 0, rounded);
  uint64_t mine = rounded;
  m->sizes.resize(size_t(impl_->size));
  check(MPI_Allgather(&mine, 1, MPI_UINT64_T, m->sizes.data(), 1, MPI_UINT64_T, impl_->world), "MPI_Allgather");
  m->peers.assign(size_t(impl_->size), nullptr);
  MPI_Group gNode, gWorld;
  MPI_Comm_group(impl_->node, &gNode);
  MPI_Comm_group(impl_->world, &gWorld);
  for (size_t i = 0; i < impl_->nodeRanks.size(); ++i) {
    int w = impl_->nodeRanks[i], local = 0;
    MPI_Group_translate_ranks(gWorld, 1, &w, gNode, &local);
    MPI_Aint sz = 0;
    int disp = 0;
    void *p = nullptr;
    check(MPI_Win_shared_query(m->shared, local, &sz, &disp, &p), "MPI_Win_shared_query");
    m->peers[size_t(w)] = static_cast<uint8_t *>(p);
  }
  MPI_Group_free(&gNode);
  MPI_Group_free(&gWorld);
  check(MPI_Win_create(m->base, MPI_Aint(rounded), 1, MPI_INFO_NULL, impl_->world, &m->rma), "MPI_Win_create");
  check(MPI_Win_lock_all(MPI_MODE_NOCHECK, m->rma), "MPI_Win_lock_all");
  MPI_Barrier(impl_->world); // every segment is zeroed before anyone writes to it
  return std::make_unique<NodeSharedMemory>(std::move(m));
}

NodeSharedMemory::NodeSharedMemory(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NodeSharedMemory::~NodeSharedMemory() {
  MPI_Win_unlock_all(impl_->rma);
  MPI_Win_free(&impl_->rma);
  MPI_Win_free(&impl_->shared);
}

uint8_t *NodeSharedMemory::local() const { return impl_->base; }
uint64_t NodeSharedMemory::size(int rank) const { return impl_->sizes.at(size_t(rank)); }
uint8_t *NodeSharedMemory::peer(int rank) const { return impl_->peers.at(size_t(rank)); }

void NodeSharedMemory::put(int rank, uint64_t offset, const void *src, uint64_t bytes) {
  // MPI counts are int: split very large puts.
  const uint64_t maxPiece = 1ull << 30;
  const uint8_t *s = static_cast<const uint8_t *>(src);
  while (bytes > 0) {
    uint64_t n = std::min(bytes, maxPiece);
    check(MPI_Put(s, int(n), MPI_BYTE, rank, MPI_Aint(offset), int(n), MPI_BYTE, impl_->rma), "MPI_Put");
    s += n;
    offset += n;
    bytes -= n;
  }
}

void NodeSharedMemory::add(int rank, uint64_t offset, uint64_t value) {
  check(MPI_Accumulate(&value, 1, MPI_UINT64_T, rank, MPI_Aint(offset), 1, MPI_UINT64_T, MPI_SUM, impl_->rma),
        "MPI_Accumulate");
  // The origin buffer must stay valid until local completion.
  check(MPI_Win_flush_local(rank, impl_->rma), "MPI_Win_flush_local");
}

void NodeSharedMemory::flush(int rank) { check(MPI_Win_flush(rank, impl_->rma), "MPI_Win_flush"); }
void NodeSharedMemory::flushAll() { check(MPI_Win_flush_all(impl_->rma), "MPI_Win_flush_all"); }

void NodeSharedMemory::progress() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, impl_->comm->world, &flag, MPI_STATUS_IGNORE);
}

} // namespace msccl::runtime
