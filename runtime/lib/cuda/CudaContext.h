//===- CudaContext.h - Device state of one (plan, sizes, placement) ----------------------===//
//
// buildContext consumes the lowered ranks (Lowering.h), the resolved plan (channel pairing)
// and a rank -> GPU placement; it produces a Context holding, per rank, the scratch buffer,
// semaphores (initialised once to their init_value), barrier counters, channel counters, the
// port FIFO and the device copies of the ops and entries, and per GPU the stream, the
// threadblock table and the abort record. Counters persist across the launches of the context
// (every plan leaves them balanced); an abandoned launch discards the context.
// bindBuffers then points the context at one execute call's user buffers: peer base tables,
// switch member tables and DevRankContexts are rewritten (small host-to-device copies).
//
// Mirrors: mscclpp src/core/executor/executor.cc (setupConnections, setupChannels,
// setupRegisteredMemories, setupDeviceSemaphores, setupDeviceExecutionPlan).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "DeviceApi.h"
#include "PortProxy.h"
#include "StagingPool.h"

#include "msccl/cuda/Lowering.h"
#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Resolve.h"

#include <memory>
#include <string>
#include <vector>

namespace msccl::cuda::detail {

/// Device or host-mapped allocations freed with the context.
class Allocations {
public:
  explicit Allocations(DeviceApi &api) : api_(api) {}
  ~Allocations();
  void *device(int dev, size_t bytes);      ///< zero-filled device memory on `dev`
  void *hostMapped(size_t bytes);           ///< zero-filled pinned, mapped, portable host memory
  void *shareable(int dev, size_t bytes);   ///< DeviceApi::allocateShareable
  /// Another process's shareable memory mapped for `dev` (DeviceApi::importMemory); closed first.
  void *imported(int dev, const std::vector<uint8_t> &handle, size_t bytes);
  void *shareableHostMapped(size_t bytes); ///< DeviceApi::allocateShareableHostMapped
  /// Another process's shareable host-mapped memory, for this process's host threads.
  void *importedHostMapped(const std::vector<uint8_t> &handle, size_t bytes);
  template <class T> T *deviceArray(int dev, size_t n) { return static_cast<T *>(device(dev, n ? n * sizeof(T) : sizeof(T))); }

private:
  enum class Kind { Device, HostMapped, Shareable, Imported, SharedHost };
  struct Block { int dev; void *ptr; Kind kind; size_t bytes; };
  DeviceApi &api_;
  std::vector<Block> blocks_;
  void *keep(int dev, void *ptr, Kind kind, size_t bytes); ///< records `ptr` for release; returns it
};

struct RankState {
  int device = 0;
  /// Run by this process. A rank of another process (process-per-rank contexts) has only what
  /// this one's kernels reach: scratch, memoryInbound, input and output, imported.
  bool local = true;
  LoweredRank lowered;
  char *scratch = nullptr;
  // Device arrays.
  DevOp *ops = nullptr;
  DevEntry *entries = nullptr;
  char **remoteBases = nullptr;
  uint64_t *remoteScratchHalf = nullptr;
  uint8_t *remoteTypes = nullptr;
  DevMemoryChannel *memoryChannels = nullptr;
  DevPortChannel *portChannels = nullptr;
  DevSwitchChannel *switchChannels = nullptr;
  int32_t *semaphores = nullptr;
  uint64_t *barrierCounters = nullptr;
  uint64_t *memoryInbound = nullptr, *memoryExpected = nullptr, *sink = nullptr;
  uint64_t *portInbound = nullptr; ///< host-mapped
  uint64_t *portExpected = nullptr;
  DevFifo fifo;
  // Host views.
  std::vector<uint32_t> remoteOwner;       ///< by remote buffer id
  std::vector<plan::BufferType> remoteType;
  // Buffers of the current call (device pointers on this rank's GPU, possibly staged).
  char *input = nullptr, *output = nullptr;
};

struct GpuState {
  int device = 0;
  DeviceStream stream = nullptr;
  DeviceEvent done = nullptr;
  std::vector<uint32_t> ranks;
  DevThreadblock *threadblocks = nullptr;
  unsigned numBlocks = 0;
  DevRankContext *rankContexts = nullptr; ///< one per rank of `ranks`, in that order
  DevAbort *abort = nullptr;
  bool cooperative = false; ///< launched with cudaLaunchCooperativeKernel (device supports it)
};

struct Context {
  explicit Context(DeviceApi &a)
      : api(a), memory(a), staging([&a](int dev, size_t n) { return a.allocate(dev, n); },
                                   [&a](int dev, void *p) { a.release(dev, p); }) {}
  DeviceApi &api;

  // Key.
  const plan::Plan *plan = nullptr;
  uint64_t inputBytes = 0, outputBytes = 0;
  plan::ReduceOp reduceOp = plan::ReduceOp::Sum;
  bool oneRankPerGpu = false;

  runtime::ResolvedPlan resolved;
  std::vector<RankState> ranks;
  std::vector<GpuState> gpus;
  std::vector<ProxyRank> proxyRanks;
  PortProxy proxy;
  bool usesPort = false;
  uint32_t flag = 0; ///< F of the last launch
  uint64_t opsPerLaunch = 0;
  bool abandoned = false; ///< a launch timed out: counters and FIFOs are not balanced
  Allocations memory;
  StagingPool staging; ///< user buffers staged on their rank's GPU

  /// Teardown drains first: the streams (kernels end; their waits are bounded), then the port
  /// proxy (requests the kernels pushed), then the proxy thread stops and memory is freed.
  ~Context();
};

/// Builds the context (see the file comment). `rankDevice[r]` is rank r's GPU. Throws
/// runtime::ExecutionError: Unsupported when the threadblocks of a GPU cannot be co-resident,
/// Backend on CUDA errors.
/// Process-per-rank (`local` given, by rank): only the local ranks get device state, their
/// scratch and inbound memory-channel counters in shareable memory, their inbound port-channel
/// counters in shareable host-mapped memory; the channels are not wired yet: the caller imports
/// the other ranks' scratch, memoryInbound, portInbound (host view), input and output into their
/// RankStates, then calls wireChannels and (with port channels) setupPortProxy.
std::unique_ptr<Context> buildContext(DeviceApi &api, const plan::Plan &plan, std::vector<LoweredRank> lowered,
                                      const std::vector<int> &rankDevice, const std::vector<bool> *local = nullptr);

/// Points every local rank's memory channels at the paired peer channel's inbound counter (and
/// port channels at their own counters). buildContext does it for single-process contexts.
void wireChannels(Context &ctx);
/// The port proxy's table: an entry per local rank (its FIFO, a proxy stream, the flag targets:
/// each port channel's paired peer inbound counter, a host view). Before bindBuffers, which
/// starts the proxy. buildContext does it for single-process contexts.
void setupPortProxy(Context &ctx);

/// Points the context at one call's buffers (`input[r]`, `output[r]` on rank r's GPU). The
/// port proxy is quiesced (its thread joined) while its tables are rewritten, then restarted;
/// the caller has drained it (drainPortProxy) after the previous launches.
void bindBuffers(Context &ctx, const std::vector<char *> &input, const std::vector<char *> &output);

/// The launch of GPU `g` of the context with flag F = ctx.flag (the caller advances the flag:
/// once per launch of every GPU, never 0) and per-wait timeout `timeoutNs` (0 = forever).
DevLaunch launchRecord(const Context &ctx, const GpuState &g, runtime::PacketType packet, plan::DataType type,
                       uint64_t timeoutNs);
/// ctx.flag + 1, skipping 0 (zeroed scratch must never match a flag).
void advanceFlag(Context &ctx);

/// After the streams of the context have finished: one line per GPU whose launch was
/// abandoned because a device-side wait timed out ("rank R tb T op K (name): a wait did not
/// complete within S s"); empty when none was.
/// `via`: read the abort records through that stream (a non-blocking one of the context's)
/// instead of a plain copy, which may wait for every blocking stream of the device.
std::vector<std::string> abandonedWaits(Context &ctx, double timeoutSeconds, DeviceStream via = nullptr);

/// After the kernels of the context have finished: waits until the port proxy has completed
/// every request they pushed (each rank's FIFO head) and its copies have landed, so that the
/// call's results are in place and the proxy's tables may be rewritten. `timeoutSeconds` <= 0
/// waits forever. Throws ExecutionError(Deadlock) on timeout, Backend on CUDA errors.
void drainPortProxy(Context &ctx, double timeoutSeconds);

} // namespace msccl::cuda::detail
