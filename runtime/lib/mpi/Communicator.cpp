//===- Communicator.cpp - The bootstrap-neutral front of a Communicator -------------------===//
//
// Consumes a Communicator::Impl built by one bootstrap (MPI: MpiCommunicator.cpp; unique id
// over TCP: TcpCommunicator.cpp) and forwards every operation to it; owns what both share:
// the node numbering from colours, MSCCL_RANKS_PER_NODE, describeNodes, the steady clock, the
// host key.
// See Communicator.h and CommunicatorImpl.h.
//
//===------------------------------------------------------------------------------------===//
#include "CommunicatorImpl.h"

#include "msccl/runtime/Executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>

#include <unistd.h>

namespace msccl::runtime {

double monotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void assignNodes(Communicator::Impl &impl, const std::vector<int> &colors) {
  std::vector<int> distinct = colors;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  impl.numNodes = int(distinct.size());
  impl.nodeOf.assign(size_t(impl.size), 0);
  impl.nodeRanks.clear();
  const int mine = colors[size_t(impl.rank)];
  for (int r = 0; r < impl.size; ++r) {
    impl.nodeOf[size_t(r)] = int(std::lower_bound(distinct.begin(), distinct.end(), colors[size_t(r)]) - distinct.begin());
    if (colors[size_t(r)] == mine)
      impl.nodeRanks.push_back(r);
  }
}

int ranksPerNodeFromEnv() {
  const char *k = std::getenv("MSCCL_RANKS_PER_NODE");
  if (!k || !*k)
    return 0;
  char *end = nullptr;
  long v = std::strtol(k, &end, 10);
  if (*end != '\0' || v <= 0 || v > 1 << 20)
    throw ExecutionError(ErrorKind::Backend, "MSCCL_RANKS_PER_NODE='" + std::string(k) + "' is not a positive integer");
  return int(v);
}

std::string hostKey() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  return std::string(name) + "/" + boot;
}

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

std::unique_ptr<Communicator> Communicator::fromImpl(std::unique_ptr<Impl> impl) {
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
                           : " (" + impl_->splitName + ")";
  return s;
}

std::vector<std::vector<uint8_t>> Communicator::allGather(const void *data, size_t bytes) {
  std::vector<uint8_t> all = impl_->allGather(data, bytes);
  std::vector<std::vector<uint8_t>> out(size_t(impl_->size));
  for (int r = 0; r < impl_->size; ++r)
    out[size_t(r)].assign(all.begin() + long(bytes) * r, all.begin() + long(bytes) * (r + 1));
  return out;
}

uint64_t Communicator::allReduceSum(uint64_t v) { return impl_->allReduceSum(v); }
uint64_t Communicator::allReduceMax(uint64_t v) { return impl_->allReduceMax(v); }
double Communicator::allReduceMax(double v) { return impl_->allReduceMax(v); }
void Communicator::barrier() { impl_->barrier(); }
bool Communicator::barrierUntil(double deadline) { return impl_->barrierUntil(deadline); }
bool Communicator::allReduceMaxUntil(uint64_t &v, double deadline) { return impl_->allReduceMaxUntil(v, deadline); }
void Communicator::abort(int code) {
  impl_->abort(code);
  std::_Exit(code); // not reached: every bootstrap ends the process
}
std::unique_ptr<NodeSharedMemory> Communicator::allocateShared(size_t bytes) { return impl_->allocateShared(bytes); }

NodeSharedMemory::NodeSharedMemory(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NodeSharedMemory::~NodeSharedMemory() = default;

uint8_t *NodeSharedMemory::local() const { return impl_->base; }
uint64_t NodeSharedMemory::size(int rank) const { return impl_->sizes.at(size_t(rank)); }
uint8_t *NodeSharedMemory::peer(int rank) const { return impl_->peers.at(size_t(rank)); }
void NodeSharedMemory::put(int rank, uint64_t offset, const void *src, uint64_t bytes) {
  impl_->put(rank, offset, src, bytes);
}
void NodeSharedMemory::add(int rank, uint64_t offset, uint64_t value) { impl_->add(rank, offset, value); }
void NodeSharedMemory::flush(int rank) { impl_->flush(rank); }
void NodeSharedMemory::flushAll() { impl_->flushAll(); }
void NodeSharedMemory::progress() { impl_->progress(); }

// Here, not in the MPI bootstrap: it reads the environment only (callers without MPI ask it).
bool Communicator::launchedByMpi() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v))
      return true;
  return false;
}

} // namespace msccl::runtime
