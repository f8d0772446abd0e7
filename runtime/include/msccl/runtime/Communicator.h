//===- Communicator.h - Ranks in processes: bootstrap, nodes, exchange, shared memory -----===//
//
// One process per rank, as MSCCL++ runs for real. A Communicator is this process's view of the
// job, built by one of two bootstraps with the same behaviour behind this interface:
//   * MPI (initWorld): launched by mpirun/srun (OpenMPI); rank() / size() are MPI_COMM_WORLD's,
//     exchange is MPI collectives, memory is MPI-3 shared windows and RMA (described below);
//   * unique id (createUniqueId / initFromUniqueId / initFromEnvironment), as NCCL's
//     ncclGetUniqueId + ncclCommInitRank and torchrun do, with no MPI: a 128-byte id carries
//     rank 0's TCP address; the ranks meet there over ZeroMQ (rank 0 binds a ROUTER socket,
//     the others connect DEALER sockets) and every exchange below goes through rank 0. Memory
//     is POSIX shared memory (shm_open + mmap), every rank mapping every segment, with put /
//     add / flush done as memcpy / atomic add / fence. One machine only: ranks on different
//     hosts are refused with an error at init (use the MPI bootstrap across hosts);
//     MSCCL_RANKS_PER_NODE=k still splits the machine into emulated nodes. Needs the library
//     built with ZeroMQ (haveUniqueIdBootstrap()); otherwise these functions throw.
// What follows describes the MPI bootstrap; the unique-id one gives the same answers:
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
// Mirrors: mscclpp include/mscclpp/core.hpp (Bootstrap, TcpBootstrap with UniqueId,
// Communicator, RegisteredMemory) and nccl.h (ncclUniqueId, ncclCommInitRank).
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

/// The unique id of a job to bootstrap without MPI: 128 opaque bytes (as ncclUniqueId),
/// copied by the application from the rank that made it to every other rank.
struct UniqueId {
  char bytes[128];
};

/// Options of the unique-id bootstrap.
struct BootstrapOptions {
  /// Seconds every rank waits at init for all `size` ranks to arrive, and that rank 0 waits
  /// for the others in each exchange without a deadline of its own; then ExecutionError(Backend)
  /// naming the missing ranks. 0: MSCCL_BOOTSTRAP_TIMEOUT or 120.
  double timeoutSeconds = 0;
};

class Communicator {
public:
  /// Whether this library was built with the unique-id bootstrap (ZeroMQ found at build time).
  static bool haveUniqueIdBootstrap();

  /// Make a unique id (any process, typically rank 0, before initFromUniqueId): binds a TCP
  /// port on MSCCL_BOOTSTRAP_ADDR (an IPv4 address or host name; default 127.0.0.1), which
  /// this process keeps until its initFromUniqueId as rank 0 takes it over. The rank 0 that
  /// uses the id must be this process. Throws ExecutionError(Backend) without ZeroMQ support
  /// or when the address cannot be bound.
  static UniqueId createUniqueId();

  /// Join the job of `id` as `rank` of `size` (0 <= rank < size; every rank calls it with the
  /// same id and size). Collective over the job: returns once all `size` ranks arrived.
  /// Throws ExecutionError(Backend): not an id made by createUniqueId, rank/size out of range
  /// or different across ranks, two processes claiming one rank, ranks on different hosts,
  /// ranks missing after `options.timeoutSeconds`, a bad MSCCL_RANKS_PER_NODE, no ZeroMQ.
  static std::unique_ptr<Communicator> initFromUniqueId(const UniqueId &id, int rank, int size,
                                                        const BootstrapOptions &options = {});

  /// Join as torchrun and other launchers describe the job: RANK, WORLD_SIZE, MASTER_ADDR and
  /// the port MSCCL_BOOTSTRAP_PORT, else MASTER_PORT + 1 (MASTER_PORT itself is the launcher's
  /// own store). Rank 0 binds that address; the others connect to it. Throws
  /// ExecutionError(Backend) when a variable is missing or malformed, and as initFromUniqueId.
  static std::unique_ptr<Communicator> initFromEnvironment(const BootstrapOptions &options = {});

  /// True when this process was started by an MPI launcher (OpenMPI's OMPI_COMM_WORLD_SIZE,
  /// PMI/PMIx variables of srun and others). Does not initialise MPI.
  static bool launchedByMpi();

  /// Initialise MPI (once per process) and build the world communicator and its node split.
  /// Throws ExecutionError(Backend) without MPI support, on MPI errors, on a bad
  /// MSCCL_RANKS_PER_NODE (not a positive integer, or grouping ranks that share no memory).
  static std::unique_ptr<Communicator> initWorld(int *argc, char ***argv);

  ~Communicator(); ///< Finalises MPI (MPI bootstrap); closes the sockets (unique id).
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

  /// Why this communicator's runs stopped ("" while they may run): set on every rank, the same
  /// everywhere, when a launch timed out (DistributedRun.cpp), so later runs over it refuse at
  /// once instead of timing out one by one. Another communicator in the same process is not
  /// affected (the state belongs to the job, not the process).
  const std::string &stopped() const { return stopped_; }
  void setStopped(std::string why) { stopped_ = std::move(why); }

  /// Allocate `bytes` (64-byte aligned, zeroed) of memory mapped by every rank of this node and
  /// open for one-sided access by every rank. Collective; each rank may ask for its own size.
  std::unique_ptr<NodeSharedMemory> allocateShared(size_t bytes);

  /// The bootstrap behind this communicator (CommunicatorImpl.h, private to the runtime).
  struct Impl;
  Impl &impl() { return *impl_; }
  /// Wrap a bootstrap's implementation (used by the bootstraps themselves).
  static std::unique_ptr<Communicator> fromImpl(std::unique_ptr<Impl> impl);

private:
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string stopped_;
};

/// One segment per rank (see Communicator::allocateShared). Node peers' segments are directly
/// addressable; every rank's segment is reachable through put/add/flush. Freed collectively by
/// the destructor (every rank must destroy its object). The names below are the MPI
/// bootstrap's; the unique-id bootstrap does the same with memcpy, atomic add and fences.
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
