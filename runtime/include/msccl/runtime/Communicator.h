//===- Communicator.h - Ranks in processes: bootstrap, nodes, exchange, shared memory -----===//
//
// One process per rank, launched by mpirun/srun (OpenMPI), as MSCCL++ runs for real. A
// Communicator is this process's view of the job:
//   * rank() / size(): MPI_COMM_WORLD's;
//   * nodes: which ranks share a node (and therefore memory). By default MPI's shared-memory
//     split (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)); the environment variable
//     MSCCL_RANKS_PER_NODE=k overrides it (ranks r with equal r / k form a node), so a
//     multi-node run fits on one machine for tests. Such a node must still lie inside one
//     shared-memory domain (checked; an error otherwise);
//   * exchange: allGather of arbitrary bytes (what ranks must learn about each other: buffer
//     addresses, CUDA IPC and multicast handles, channel/semaphore state), allReduce of counts
//     and times, barriers that give up after a deadline;
//   * memory: NodeSharedMemory, one segment per rank that every rank of its node maps (MPI-3
//     shared windows, the host analogue of CUDA IPC), also exposed to every rank of the job for
//     one-sided put / atomic add / flush (MPI-3 RMA, passive target), which is what port-channel
//     proxies use to reach other nodes.
// All functions are collective over the job unless they say otherwise; all throw
// ExecutionError(Backend) on an MPI failure. Only the thread that created the Communicator
// calls MPI (MPI_THREAD_FUNNELED).
//
// Mirrors: mscclpp include/mscclpp/core.hpp (Bootstrap, TcpBootstrap, Communicator,
// RegisteredMemory), whose bootstrap we take from MPI instead.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace msccl::runtime {

class NodeSharedMemory;

class Communicator {
public:
  /// True when this process was started by an MPI launcher (OpenMPI's OMPI_COMM_WORLD_SIZE,
  /// PMI/PMIx variables of srun and others). Does not initialise MPI.
  static bool launchedByMpi();

  /// Initialise MPI (once per process) and build the world communicator and its node split.
  /// Throws ExecutionError(Backend) without MPI support, on MPI errors, on a bad
  /// MSCCL_RANKS_PER_NODE (not a positive integer, or grouping ranks that share no memory).
  static std::unique_ptr<Communicator> initWorld(int *argc, char ***argv);

  ~Communicator(); ///< Finalises MPI.
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  int rank() const;
  int size() const;
  int node() const;                          ///< This rank's node index (0..numNodes()-1).
  int numNodes() const;
  int nodeOf(int rank) const;                ///< Node index of any rank.
  bool sameNode(int a, int b) const { return nodeOf(a) == nodeOf(b); }
  const std::vector<int> &nodeRanks() const; ///< World ranks of this node, ascending.
  std::string describeNodes() const;         ///< "2 nodes: {0,1} {2,3} (MSCCL_RANKS_PER_NODE=2)"

  /// Every rank's `bytes` bytes, indexed by rank (each rank gives the same count).
  std::vector<std::vector<uint8_t>> allGather(const void *data, size_t bytes);
  uint64_t allReduceSum(uint64_t v);
  uint64_t allReduceMax(uint64_t v);
  double allReduceMax(double v);
  void barrier();
  /// A barrier that gives up at `deadline` (seconds of steady clock, as monotonicSeconds()):
  /// returns false when some rank did not arrive in time (then only abort() is left).
  bool barrierUntil(double deadline);
  /// Max-reduce of `v` (in place) that gives up at `deadline`: false on timeout, `v` unchanged.
  /// After a timeout the communicator is only good for abort() (the request stays pending).
  bool allReduceMaxUntil(uint64_t &v, double deadline);
  /// Give up the whole job with `code` (MPI_Abort): every process exits, none stays behind.
  [[noreturn]] void abort(int code);

  /// Allocate `bytes` (64-byte aligned, zeroed) of memory mapped by every rank of this node and
  /// open for one-sided access by every rank. Collective; each rank may ask for its own size.
  std::unique_ptr<NodeSharedMemory> allocateShared(size_t bytes);

  struct Impl;
  Impl &impl() { return *impl_; }

private:
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One segment per rank (see Communicator::allocateShared). Node peers' segments are directly
/// addressable; every rank's segment is reachable through put/add/flush. Freed collectively by
/// the destructor (every rank must destroy its object).
class NodeSharedMemory {
public:
  ~NodeSharedMemory();
  uint8_t *local() const;                 ///< This rank's segment.
  uint64_t size(int rank) const;          ///< Bytes of `rank`'s segment.
  uint8_t *peer(int rank) const;          ///< `rank`'s segment mapped here, or null off the node.
  /// Start copying `bytes` bytes from local memory `src` to byte `offset` of `rank`'s segment
  /// (MPI_Put). Complete only after flush(rank).
  void put(int rank, uint64_t offset, const void *src, uint64_t bytes);
  /// Atomically add `value` to the 64-bit word at byte `offset` of `rank`'s segment
  /// (MPI_Accumulate, MPI_SUM). Ordered after earlier puts to that rank only by a flush.
  void add(int rank, uint64_t offset, uint64_t value);
  void flush(int rank);                   ///< Complete every put/add to `rank` (MPI_Win_flush).
  void flushAll();
  /// Let MPI progress incoming one-sided traffic (targets need it on some transports).
  void progress();

  struct Impl;
  explicit NodeSharedMemory(std::unique_ptr<Impl> impl);

private:
  std::unique_ptr<Impl> impl_;
};

/// Seconds of std::chrono::steady_clock (the clock of deadlines above).
double monotonicSeconds();

} // namespace msccl::runtime
