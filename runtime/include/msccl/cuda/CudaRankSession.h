//===- CudaRankSession.h - The CUDA executor with one process per rank ------------------===//
//
// Consumes a Communicator (one process per rank: MPI, unique id or torchrun's environment), a
// plan whose rank count is the world size, and the RunOptions of runCollective (Verify.h);
// runs this process's rank of the plan with the CUDA executor's device code, on a GPU or on the
// host implementation of the device layer (DeviceApi.h), as a runtime::RankSession
// (DistributedRun.h):
//   * the rank's device: CudaRankOptions::placement, by default its index among the node's
//     ranks modulo the visible devices (more ranks than GPUs on a node: several processes share a GPU,
//     the process-per-rank form of virtual ranks; the host implementation has one device);
//   * what other ranks' kernels reach (the rank's input and output, its scratch, its memory
//     channels' inbound counters) is shareable memory (DeviceApi::allocateShareable: cudaMalloc
//     exported as CUDA IPC handles; host: POSIX shared memory objects); the handles go round the
//     communicator once, when the session opens, and every rank maps what its own kernels reach
//     (memory-channel peers, remote buffers, switch-channel members) by cudaIpcOpenMemHandle or
//     shm_open;
//   * memory channels load, store and signal through those mappings, switch channels are
//     emulated with per-member loads and stores over them (as in one process); port channels go
//     through this process's proxy thread (PortProxy.h), which copies into the peers' mapped
//     buffers (cudaMemcpyAsync over CUDA IPC) and adds to their inbound counters, host-mapped
//     shared memory objects the peers export as a fourth handle (cudaHostRegister on CUDA);
//   * each execute copies the caller's input into the rank's input buffer (the user's buffer is
//     not registered: the session's own buffers are the ones its peers mapped), and launches
//     are separated by a barrier of the communicator (a launch starts only when every rank
//     finished the previous one, as the one-process executor orders GPUs by events), at which
//     the ranks also agree on the outcome (a device-side wait that timed out on any rank fails
//     the execute on every rank, ErrorKind::Deadlock with that rank's threadblock and op).
// Ranks of other nodes (another host, or MSCCL_RANKS_PER_NODE) are never mapped: a memory or
// switch channel to one is refused as InvalidPlan when the session opens; port channels to
// them go host-staged over TCP (EthernetPort.h, runtime::EthernetTransport: the proxy copies a
// put's bytes into a message, the peer's receiving thread copies them into its buffer, then
// applies the signals that follow), or are refused as Unsupported by a build without ZeroMQ
// (the NCCL shim then forwards the call to NCCL).
//
// Registry (runtime::registerCudaRankBackends, DistributedRun.h): "cuda", "cuda-gpus" and
// "cuda-virtual" on GPUs; "cuda-host" and "cuda-host-gpus" on the host implementation.
//
// Mirrors: mscclpp src/executor/executor.cc (one process per GPU: registered memory exchanged
// through the bootstrap, CUDA IPC connections within a node).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/cuda/CudaExecutor.h"
#include "msccl/runtime/DistributedRun.h"

#include <memory>

namespace msccl::cuda {

struct CudaRankOptions {
  DeviceKind device = DeviceKind::Cuda;
  /// The GPU of this rank, with i its index among its node's ranks and G the visible devices:
  /// Auto i mod G, VirtualRanks 0, OneRankPerGpu i (refused, Unsupported, when i >= G).
  Placement placement = Placement::Auto;
  /// Host implementation: threads per threadblock (MSCCL_HOST_THREADS_PER_BLOCK overrides).
  unsigned hostThreadsPerBlock = 8;
};

class CudaRankSession final : public runtime::RankSession {
public:
  /// Collective. Uses options.size, dataType, reduceOp, inPlace, packetType, planValidated;
  /// dist.timeoutSeconds bounds every device-side wait (MSCCL_CUDA_TIMEOUT overrides it) and
  /// every barrier. Throws ExecutionError: InvalidPlan (rank count != world size, a lowering
  /// error, a memory or switch peer on another node), InvalidSize, Unsupported (a port peer on
  /// another node without ZeroMQ; no usable GPU; threadblocks that cannot be co-resident),
  /// Backend (CUDA, shared memory or socket errors).
  CudaRankSession(runtime::Communicator &comm, const plan::Plan &plan, const runtime::RunOptions &options,
                  const runtime::DistributedOptions &dist, const CudaRankOptions &cuda);
  ~CudaRankSession() override; ///< Collective: a barrier, then the mappings and memory are freed.
  const runtime::RunReport &start() const override;
  double execute(const std::function<void(uint8_t *input)> &fill, unsigned warmup, unsigned iterations) override;
  const uint8_t *output() const override;
  /// Waits for the caller's stream, copies `send` in (cudaMemcpyDefault: device or host memory),
  /// one launch, copies the output to `recv`; returns when `recv` holds the result. No round of
  /// the communicator: the plans' handshakes order peers' launches (as DistributedSession's
  /// executeNext); a timed-out or aborted launch throws on this rank and stops the communicator.
  void call(const void *send, size_t sendBytes, void *recv, size_t recvBytes, void *stream) override;
  /// Marks every wait of the launch in progress as given up (the kernel ends; the call throws
  /// Misuse) and refuses later calls.
  void abort() override;
  /// Throws what the last stream-ordered launch ended with once it has run and failed (a
  /// device-side wait timed out, or an abort), without waiting (RankSession::poll).
  void poll() override;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace msccl::cuda
