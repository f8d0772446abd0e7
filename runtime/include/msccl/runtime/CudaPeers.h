//===- CudaPeers.h - GPU memory of node peers, exchanged through a Communicator ----------===//
//
// The CUDA side of one process per GPU (built when both MPI and a CUDA toolkit are found):
// what a CUDA executor on a Communicator (Communicator.h) needs to give memory channels and
// switch channels real peer pointers, as MSCCL++ does with its bootstrap:
//   * CudaIpcPeers: every rank exports its device buffer (cudaIpcGetMemHandle), the handles are
//     all-gathered through the communicator, node peers open them (cudaIpcOpenMemHandle): a
//     memory channel then loads and stores the peer's buffer directly over NVLink/PCIe.
//   * CudaMulticast: the node's first rank creates a multicast object (cuMulticastCreate) and
//     exports it as a fabric handle (CU_MEM_HANDLE_TYPE_FABRIC: plain bytes, so they travel
//     through allGather; POSIX file descriptors would need a Unix socket), every node rank
//     imports it, adds its device, binds its own physical memory (cuMemCreate) and maps the
//     multicast address: a switch channel's multimem.ld_reduce / st go through NVSwitch.
//   * Port channels between nodes: the CUDA executor's process-per-rank sessions carry them
//     host-staged over TCP (runtime/lib/cuda/EthernetPort.h over EthernetTransport.h), not
//     through this file. GPUDirect RDMA would instead register device memory with the network
//     (ibv_reg_mr through nvidia-peermem or dma-buf; or UCX built with CUDA), removing both copies.
// Status: compile-only here (no GPU); the gpu-labelled test tests/mpi/cuda_peers_test.cpp runs
// the IPC exchange under mpirun where GPUs exist and skips elsewhere.
// Errors: ExecutionError(Backend) naming the CUDA call and its error string.
//
// Mirrors: mscclpp src/registered_memory.cc (IPC handles), src/nvls.cc (NvlsConnection).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Communicator.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace msccl::runtime {

/// Node peers' device buffers (see above). Collective over the communicator.
class CudaIpcPeers {
public:
  /// `local`: this rank's buffer (cudaMalloc'd, `bytes` long) on the current device.
  CudaIpcPeers(Communicator &comm, void *local, size_t bytes);
  ~CudaIpcPeers(); ///< Closes the opened handles.
  CudaIpcPeers(const CudaIpcPeers &) = delete;
  CudaIpcPeers &operator=(const CudaIpcPeers &) = delete;
  /// `rank`'s buffer mapped in this process (own buffer for this rank), null off the node.
  void *peer(int rank) const { return peers_.at(size_t(rank)); }
  size_t bytes(int rank) const { return bytes_.at(size_t(rank)); }

private:
  std::vector<void *> peers_;
  std::vector<size_t> bytes_;
  std::vector<bool> opened_;
};

/// A multicast object over the ranks of this node (see above). Collective over the
/// communicator (ranks of other nodes take part in the exchange only).
class CudaMulticast {
public:
  /// `bytes` per rank (rounded up to the multicast granularity).
  CudaMulticast(Communicator &comm, size_t bytes);
  ~CudaMulticast();
  CudaMulticast(const CudaMulticast &) = delete;
  CudaMulticast &operator=(const CudaMulticast &) = delete;
  uint64_t unicast() const { return unicast_; }     ///< This rank's bound memory (CUdeviceptr).
  uint64_t multicast() const { return multicast_; } ///< The multicast address (CUdeviceptr).
  size_t bytes() const { return bytes_; }

private:
  uint64_t unicast_ = 0, multicast_ = 0;
  uint64_t memHandle_ = 0, mcHandle_ = 0; // CUmemGenericAllocationHandle
  size_t bytes_ = 0;
  int device_ = 0;
};

} // namespace msccl::runtime
