//===- CommunicatorImpl.h - The interface a Communicator bootstrap implements (private) ---===//
//
// A Communicator (Communicator.h) is a thin front over one bootstrap:
//   * MpiCommunicator.cpp  MPI_COMM_WORLD, MPI-3 shared windows and RMA (launched by mpirun);
//   * TcpCommunicator.cpp  a unique id (rank 0's address) and a ZeroMQ rendezvous over TCP,
//                          POSIX shared memory (shm_open + mmap) on one machine.
// Both fill the node fields below (assignNodes) and implement the exchange and memory
// operations with the semantics documented in Communicator.h; the front only forwards.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Communicator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace msccl::runtime {

struct Communicator::Impl {
  virtual ~Impl() = default;
  int rank = 0, size = 1;
  std::vector<int> nodeOf; // per world rank
  std::vector<int> nodeRanks;
  int numNodes = 1;
  int ranksPerNode = 0;  // from MSCCL_RANKS_PER_NODE, 0 when unset
  std::string splitName; // how nodes were found when MSCCL_RANKS_PER_NODE is unset

  /// Every rank's `bytes` bytes, concatenated in rank order.
  virtual std::vector<uint8_t> allGather(const void *data, size_t bytes) = 0;
  virtual uint64_t allReduceSum(uint64_t v) = 0;
  virtual uint64_t allReduceMax(uint64_t v) = 0;
  virtual double allReduceMax(double v) = 0;
  virtual void barrier() = 0;
  virtual bool barrierUntil(double deadline) = 0;
  virtual bool allReduceMaxUntil(uint64_t &v, double deadline) = 0;
  [[noreturn]] virtual void abort(int code) = 0;
  virtual std::unique_ptr<NodeSharedMemory> allocateShared(size_t bytes) = 0;
};

struct NodeSharedMemory::Impl {
  virtual ~Impl() = default;
  uint8_t *base = nullptr;
  std::vector<uint64_t> sizes;
  std::vector<uint8_t *> peers; // node peers' segments, null off the node
  virtual void put(int rank, uint64_t offset, const void *src, uint64_t bytes) = 0;
  virtual void add(int rank, uint64_t offset, uint64_t value) = 0;
  virtual void flush(int rank) = 0;
  virtual void flushAll() = 0;
  virtual void progress() = 0;
};

/// Fill `impl`'s node fields from one colour per rank (ranks of equal colour form a node; nodes
/// are numbered by ascending colour).
void assignNodes(Communicator::Impl &impl, const std::vector<int> &colors);

/// MSCCL_RANKS_PER_NODE as a positive integer, 0 when unset; throws ExecutionError(Backend)
/// when set to anything else.
int ranksPerNodeFromEnv();

/// This machine: host name and kernel boot id (ranks with equal keys share memory).
std::string hostKey();

} // namespace msccl::runtime
