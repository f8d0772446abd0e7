//===- DevicePlan.h - Compact plan structs shared by the host and the CUDA kernel -------===//
//
// The CUDA executor runs a plan by interpreting these structs on the device: one kernel launch
// runs every threadblock of every rank placed on a GPU, and each block walks its own op list.
// The host builds them (Lowering.h) from the plan model (msccl/plan/Plan.h) once per message
// size; the kernel only reads them. Every struct is trivially copyable, has a fixed layout
// (checked by static_asserts below) and contains no pointers, so a host vector can be copied
// to the GPU as is.
//
// What lowering has already done, so that the device does no lookups:
//   * chunk indices -> byte offsets and lengths (spec plan#3.3), tbg split applied (plan#8.7);
//   * tb-local channel ids, remote buffer ids and switch channel ids -> gpu-level ids (plan#5);
//   * pipelines flattened: a Pipeline op is followed by its `nInner` inner ops (plan#8.6).
// What stays for run time: buffer base pointers (DevRankContext), the scratch half `SO` and the
// packet flag `F` of the launch (plan#7.3, plan#7.4). The half of a peer's or switch member's scratch is
// that owner's own SO (lowering gives it per remote buffer and per member: ranks may have
// different scratch sizes).
//
// Op codes are msccl::plan::OpType values (PlanEnums.def order = the reference's device order).
// Mirrors: mscclpp src/core/include/execution_common.hpp (DeviceExecutionPlan, Operation).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define MSCCL_HD __host__ __device__
#else
#define MSCCL_HD
#endif

namespace msccl::cuda {

// --- Limits of the device structs (checked by lowering; see docs/cuda.md) -------------------
constexpr unsigned kMaxIdsPerOp = 16;          ///< channel_ids or semaphore_ids of one op
constexpr unsigned kMaxEntriesPerSide = 16;    ///< src_buff / dst_buff entries of one op
constexpr unsigned kMaxBarriers = 16;          ///< barrier_id < 16 (per rank)
constexpr unsigned kMaxSemaphores = 256;       ///< semaphores per rank
constexpr unsigned kMaxSwitchMembers = 16;     ///< ranks in one switch channel group
constexpr unsigned kMaxThreadsPerBlock = 1024; ///< the kernel's launch bound
constexpr unsigned kMaxOpsPerThreadblock = 65535;

/// Where a buffer entry's base pointer comes from.
enum class DevBase : uint8_t {
  Input = 0,   ///< this rank's input (send) buffer
  Output = 1,  ///< this rank's output (receive) buffer
  Scratch = 2, ///< this rank's scratch + SO
  Remote = 3,  ///< gpu-level remote buffer `id` (a peer's buffer; + the owner's SO if scratch)
  Switch = 4,  ///< gpu-level switch channel `id` (every member's buffer; + its SO if scratch)
};

/// One resolved src/dst entry. Offsets are payload bytes: packet handlers address the packet
/// region at 2*offset (spec plan#7.2).
struct DevEntry {
  uint64_t offset = 0;   ///< bytes from the buffer base
  uint64_t length = 0;   ///< bytes
  uint8_t base = 0;      ///< DevBase
  uint8_t bufferType = 0;///< resolved msccl::plan::BufferType of the target buffer (i/o/s)
  uint16_t id = 0;       ///< gpu-level remote buffer id (Remote) or switch channel id (Switch)
  uint32_t reserved = 0;
};
static_assert(sizeof(DevEntry) == 24, "DevEntry layout");

/// One op. `ids` holds gpu-level channel ids (sync ops, port data ops) or semaphore ids.
struct DevOp {
  uint8_t type = 0;        ///< msccl::plan::OpType
  uint8_t channelType = 0; ///< msccl::plan::ChannelType (None when absent)
  uint8_t reduceOp = 0;    ///< msccl::plan::ReduceOp (Sum when absent)
  uint8_t nSrc = 0;
  uint8_t nDst = 0;
  uint8_t nIds = 0;
  uint16_t nInner = 0;     ///< Pipeline: number of inner ops that follow
  uint32_t entryBegin = 0; ///< entries[entryBegin .. +nSrc) are src, then nDst dst entries
  uint32_t nIterations = 0;///< Pipeline: ceil(numChunks * chunkBytes / unitSize)
  uint64_t unitSize = 0;   ///< Pipeline: window bytes
  uint16_t barrierId = 0;  ///< Barrier
  uint16_t numThreadblocks = 0; ///< Barrier
  uint16_t ids[kMaxIdsPerOp] = {};
  uint8_t reserved[4] = {};
};
static_assert(sizeof(DevOp) == 64, "DevOp layout");

/// One threadblock of one rank: ops[opBegin .. opBegin+nOps) of that rank's op array.
struct DevThreadblock {
  uint32_t opBegin = 0;
  uint32_t nOps = 0;
  uint32_t rankSlot = 0; ///< index of the DevRankContext (set by the executor)
  uint32_t tbId = 0;     ///< the plan's threadblock id (for diagnostics)
  /// entries[entryBegin .. +nEntries) hold every entry of this threadblock's ops (the kernel
  /// copies them, with the ops, into shared memory when they fit).
  uint32_t entryBegin = 0;
  uint32_t nEntries = 0;
};
static_assert(sizeof(DevThreadblock) == 24, "DevThreadblock layout");

/// LL packet width (a run-time choice; spec plan#7.1).
enum class PacketType : uint8_t { LL16 = 0, LL8 = 1 };

// --- Run-time structs (pointers; built by the executor, never by lowering) ------------------

/// A memory channel end: signal adds to the peer's inbound counter of the paired channel, wait
/// claims the next expected value with an atomic fetch-add on `expected` (several threadblocks
/// may wait on one gpu-level channel, as in the reference plans; MSCCL++ incExpectedInbound)
/// and spins on our own inbound counter until it reaches that value.
struct DevMemoryChannel {
  uint64_t *outbound = nullptr; ///< the paired peer channel's inbound counter (device memory)
  uint64_t *inbound = nullptr;  ///< ours
  uint64_t *expected = nullptr; ///< ours (atomic: every waiting thread of every block adds 1)
};

/// A port channel end: requests go to the rank's FIFO; the proxy increments the peer's inbound
/// counter (host-mapped memory) after the data it covers has landed.
struct DevPortChannel {
  uint64_t *inbound = nullptr;  ///< host-mapped, written by the proxy
  uint64_t *expected = nullptr; ///< device memory (atomic, as DevMemoryChannel::expected)
};

/// A switch channel: the buffer (of `bufferType`) of every member of the group. Without
/// multicast the kernel emulates multimem loads/stores with peer loads/stores over `bases`.
struct DevSwitchChannel {
  char *bases[kMaxSwitchMembers] = {};
  uint64_t scratchHalf[kMaxSwitchMembers] = {}; ///< member's SO on even-flag launches (scratch)
  uint32_t nMembers = 0;
  uint32_t bufferType = 0; ///< msccl::plan::BufferType
};

/// A device-to-host request of a port channel (32 bytes, written by one thread).
struct DevProxyRequest {
  uint64_t srcOffset = 0; ///< bytes from the local buffer base (SO included for scratch)
  uint64_t dstOffset = 0; ///< bytes from the remote buffer base (SO included for scratch)
  uint64_t size = 0;      ///< bytes; 0 for flag/sync only
  uint32_t meta = 0;      ///< see proxyMeta()
  uint32_t seq = 0;       ///< request number + 1, written last (release)
};
static_assert(sizeof(DevProxyRequest) == 32, "DevProxyRequest layout");

enum ProxyKind : uint32_t { kProxyData = 1, kProxyFlag = 2, kProxySync = 4 };
/// meta = kind (3 bits) | local buffer type << 4 (2 bits) | channel << 8 (10 bits) |
///        remote buffer << 18 (14 bits).
MSCCL_HD inline uint32_t proxyMeta(uint32_t kind, uint32_t localBuffer, uint32_t channel, uint32_t remoteBuffer) {
  return (kind & 7u) | ((localBuffer & 3u) << 4) | ((channel & 1023u) << 8) | ((remoteBuffer & 16383u) << 18);
}
MSCCL_HD inline uint32_t proxyMetaKind(uint32_t m) { return m & 7u; }
MSCCL_HD inline uint32_t proxyMetaLocalBuffer(uint32_t m) { return (m >> 4) & 3u; }
MSCCL_HD inline uint32_t proxyMetaChannel(uint32_t m) { return (m >> 8) & 1023u; }
MSCCL_HD inline uint32_t proxyMetaRemoteBuffer(uint32_t m) { return (m >> 18) & 16383u; }
constexpr unsigned kMaxPortChannels = 1024;
constexpr unsigned kMaxRemoteBuffers = 16384;

/// The FIFO of one rank: slots in host-mapped memory, `head` in device memory (device-side
/// reservation), `completed` in host-mapped memory (proxy-side progress).
struct DevFifo {
  DevProxyRequest *slots = nullptr;
  uint64_t *head = nullptr;
  uint64_t *completed = nullptr;
  uint32_t capacity = 0;
};

/// Why a launch stopped early (host-mapped; the first failing thread writes it).
struct DevAbort {
  uint32_t aborted = 0; ///< non-zero once any wait timed out; every later wait gives up
  uint32_t rank = 0;
  uint32_t tbId = 0;
  uint32_t opIndex = 0;
  uint32_t opType = 0;
  uint32_t reserved = 0;
};

/// Everything one rank's blocks need at run time.
struct DevRankContext {
  const DevOp *ops = nullptr;
  const DevEntry *entries = nullptr;
  char *input = nullptr;
  char *output = nullptr;
  char *scratch = nullptr;
  uint64_t scratchHalf = 0;          ///< SO on even-flag launches (use_double_scratch_buffer)
  uint64_t reuseSlotBytes = 0;       ///< reuse_resources slot SC: scratch windows wrap (0 = off)
  char *const *remoteBases = nullptr;///< by gpu-level remote buffer id (peer's buffer base)
  const uint64_t *remoteScratchHalf = nullptr; ///< by remote buffer id: the owner's SO on even
                                               ///< launches (0 unless a scratch buffer)
  const uint8_t *remoteTypes = nullptr; ///< BufferType of each remote buffer
  const DevMemoryChannel *memoryChannels = nullptr;
  const DevPortChannel *portChannels = nullptr;
  const DevSwitchChannel *switchChannels = nullptr;
  int32_t *semaphores = nullptr;
  uint64_t *barrierCounters = nullptr; ///< kMaxBarriers counters, monotonic across launches
  DevFifo fifo;
  uint32_t rank = 0;
  uint32_t numRemoteBuffers = 0; ///< entries of remoteBases / remoteScratchHalf / remoteTypes
};

/// Kernel arguments of one launch.
struct DevLaunch {
  const DevThreadblock *threadblocks = nullptr;
  const DevRankContext *ranks = nullptr;
  DevAbort *abort = nullptr;
  uint64_t timeoutNs = 0;   ///< per wait; 0 = wait forever
  uint32_t flag = 0;        ///< F of this launch (>= 1)
  uint8_t packetType = 0;   ///< PacketType
  uint8_t dataType = 0;     ///< msccl::plan::DataType
  uint16_t reserved = 0;
};

/// The bytes [off, off+len) an entry at [offset, offset+length) touches in the pipeline window
/// that starts `delta` bytes into it, `unit` bytes wide (spec plan#8.6; clamped per entry,
/// plan#11.14). With reuse_resources (`reuseSlot` = SC != 0) the window of a scratch entry wraps
/// inside the slot: off = offset + delta mod SC (plan#3.6, as the CPU executor). len = 0 when the
/// window starts past the entry. Used by the kernel and by lowering's bounds checks.
MSCCL_HD inline void pipelineWindowBytes(uint64_t offset, uint64_t length, bool scratch, uint64_t delta, uint64_t unit,
                                         uint64_t reuseSlot, uint64_t &off, uint64_t &len) {
  if (delta >= length) {
    off = offset;
    len = 0;
    return;
  }
  len = length - delta < unit ? length - delta : unit;
  off = offset + (scratch && reuseSlot ? delta % reuseSlot : delta);
}

} // namespace msccl::cuda
