//===- IR.h - The compiler's program model: per rank, per threadblock op lists ----------===//
//
// The exact image of the Python DSL's internal state (spec dsl#appendix-e): one GpuIR per
// rank with its threadblocks, each holding an op list plus its tb-local channel and remote-buffer
// registrations; per GPU the channel declarations, remote-buffer table, switch channels and
// semaphores; per program the signal/wait counters. Dsl.h builds it; the passes
// (msccl/passes/*.h) transform it; the backend (msccl/backend/Lower.h) lowers it to plan::Plan.
//
// Units: chunk indices/sizes and switch offsets in chunks; pipeline `unit` in bytes. Channel ids
// inside ops, `bufferId` of remote chunks are tb-local positions; ids in tb tables are GPU-level.
//
// Mirrors: internal/{gpu,threadblock,operations,types}.py.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/Dsl.h"
#include "msccl/ir/PySet.h"
#include "msccl/plan/OpTable.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/SMLoc.h>

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace msccl::ir {

/// Op kinds are the plan's op codes (PlanEnums.def spellings).
using OpKind = plan::OpType;

/// (buffer kind, index, size) of the executing rank (operations.py LocalChunk).
struct LocalChunk {
  BufferType type = BufferType::Input;
  int64_t index = 0;
  int64_t size = 0;
  bool operator==(const LocalChunk &o) const { return type == o.type && index == o.index && size == o.size; }
  bool operator!=(const LocalChunk &o) const { return !(*this == o); }
};

/// A chunk of a peer's buffer, reached through the tb-local remote buffer `bufferId` (RemoteChunk).
struct RemoteChunk {
  BufferType type = BufferType::Input;
  int64_t index = 0;
  int64_t size = 0;
  uint32_t bufferId = 0;
  bool operator==(const RemoteChunk &o) const {
    return type == o.type && index == o.index && size == o.size && bufferId == o.bufferId;
  }
};

/// An op's chunk and channel lists: one element inline (most ops until fusion), so building,
/// decoding and dropping an op allocates nothing in the common case.
using LocalChunkList = llvm::SmallVector<LocalChunk, 1>;
using RemoteChunkList = llvm::SmallVector<RemoteChunk, 1>;
using ChannelIdList = llvm::SmallVector<uint32_t, 2>;

/// tbg_info {tb_id, tbg_size}.
struct TbgInfo {
  uint32_t tbId = 0;
  uint32_t tbgSize = 0;
  bool operator==(const TbgInfo &o) const { return tbId == o.tbId && tbgSize == o.tbgSize; }
  bool operator!=(const TbgInfo &o) const { return !(*this == o); }
};

/// Ids into SourceTable::ops of the ops fusion merged into one.
using SourceIdList = llvm::SmallVector<uint32_t, 0>;

/// One operation. Which fields matter depends on `kind`:
///  * data-sync ops (signal, wait, rlxsignal, rlxwait, flush, sem_acquire, sem_release): dataSync;
///    signal/wait/flush: syncChannelIds (a CPython-ordered set) + channelType; sem: ids.
///  * barrier: barrierId, numThreadblocks.
///  * copy family / get / put family / reductions: localSrc, localDst, localPktDst, remoteSrc,
///    remoteDst, channelIds (tb-local, kept but emitted only for get and port puts), channelType
///    (None for purely local reductions), reduceOp, tbg.
///    JSON src_buff = localSrc ++ remoteSrc; dst_buff = localDst ++ localPktDst ++ remoteDst.
///  * glre: switchBuffer, bufferOffset, switchSize, userChunk (dst_chunk), channelIds.
///  * gstore/gstorepkt: userChunk (src), switchBuffer, bufferOffset, switchSize, channelIds.
///  * glres: switchBuffer, switchSize, srcIndex, dstIndex, channelIds, reduceOp.
///  * pipeline: unit (bytes), numChunks, ops.
///  * every op: source (the .msccl call it comes from, kept by every pass: a nop inserted by sync
///    insertion or dependency analysis gets the source of the op that caused it), fusedSources
///    (after fusion: the sources of the ops merged into this one after the first).
/// The fields are listed once, in OpFields.def, which also generates the packed encoding and
/// resetOp(); verifyIR (IRVerifier.h) checks which fields an op of each kind may use.
struct Op {
  OpKind kind = OpKind::Nop;
#define OP_FIELD(Type, name, init, doc) Type name = init;
#include "msccl/ir/OpFields.def"
};

/// Resets every field of `op` to its default (kind Nop), keeping the capacity of its lists.
void resetOp(Op &op);

/// Whether every index, size, offset and unit that lowering reads from `op` (or from what fusion
/// may build out of it) is non-negative: local/remote chunks; for switch ops the buffer offset,
/// switch size, user chunk and src indices; for pipelines unit, num_chunks and the inner ops.
/// Replication maps a non-negative index i of size s >= 0 to i*n + k*s >= 0, so then lowering
/// cannot throw (backend::prepareStream relies on it).
bool hasNonNegativeValues(const Op &op);

/// A threadblock's ops in a compact byte encoding (varints; only the fields an op uses, as
/// generated from OpFields.def). The
/// elaborator appends here (Program::Impl::addOperation) instead of building a vector of Op,
/// which keeps a large program's IR at a few bytes per op until the passes of its rank run:
/// unpackOps() decodes them into ThreadBlockIR::ops. Decoding gives back every field exactly,
/// PySet tables slot by slot.
struct PackedOps {
  std::vector<uint8_t> bytes;
  uint32_t count = 0;          ///< Ops encoded.
  bool nonNegative = true;     ///< hasNonNegativeValues() of every encoded op.
  uint32_t lastSource = 0;     ///< Op::source of the last op that had one (its encoding is a delta).
  bool empty() const { return count == 0; }
};
/// Appends `op` to `packed` (the encoding OpFields.def generates).
void packOp(PackedOps &packed, const Op &op);
/// Decodes all ops of `packed`, appending them to `out`.
void decodeOps(const PackedOps &packed, std::vector<Op> &out);

/// Whether `k` carries a data_sync flag (check_data_sync_op plus the relaxed forms): the op
/// table's channel sync and semaphore ops (plan/OpTable.h).
using plan::isDataSyncOp;
/// JSON spelling of the op kind.
std::string_view opKindName(OpKind k);

/// A threadblock's registrations of one channel type: GPU-level ids in order of first use.
struct TbChannelList {
  ChannelType type = ChannelType::Memory;
  std::vector<uint32_t> ids;
};
/// A threadblock's remote buffers reached through one access channel type.
struct TbRemoteBufferList {
  ChannelType type = ChannelType::Memory;
  std::vector<uint32_t> ids;
};

struct ThreadBlockIR {
  uint32_t id = 0;
  /// The op list is `packed` (decoded) followed by `ops`; passes and lowering see only `ops`,
  /// after unpackOps() moved the packed ops there.
  std::vector<Op> ops;
  PackedOps packed;
  std::vector<TbChannelList> channels;          ///< One per type, in order of first use.
  std::vector<TbRemoteBufferList> remoteBuffers; ///< One per access type, in order of first use.

  /// Register GPU-level channel `gpuId` of `type`; returns its tb-local position (add_channel).
  uint32_t addChannel(ChannelType type, uint32_t gpuId);
  /// Register GPU-level remote buffer `gpuId` for `access`; returns its tb-local position.
  uint32_t addRemoteBuffer(ChannelType access, uint32_t gpuId);

  // Lookup tables GPU-level id -> tb-local position, per type (index: 0 memory, 1 port,
  // 2 switch). Hash maps, not vectors indexed by the GPU-level id: a threadblock uses a few of
  // its rank's channels, and a dense table per threadblock made a ring of n threadblocks (each
  // on its own channel) O(n^2) in memory (17 GB at n = 65536).
  llvm::DenseMap<uint32_t, uint32_t> channelLocal[3];
  llvm::DenseMap<uint32_t, uint32_t> remoteLocal[2];
};

struct SwitchChannelDecl {
  BufferType bufferType = BufferType::Input;
  std::vector<int64_t> ranks;
};

struct RemoteBufferIR {
  int64_t rank = 0;
  BufferType type = BufferType::Input;
  std::vector<ChannelType> accessChannelTypes; ///< Order of first use (deliberate; Python: set order).
};

struct GpuIR {
  uint32_t id = 0;
  int64_t inputChunks = 0, outputChunks = 0, scratchChunks = 0;
  std::vector<ThreadBlockIR> threadblocks;
  std::vector<ChannelType> channelTypeOrder;  ///< memory/port, order of first construction.
  std::vector<uint32_t> memoryConnectedTo;    ///< dst rank per memory channel id.
  std::vector<uint32_t> portConnectedTo;      ///< dst rank per port channel id.
  /// Per memory / port channel id: the source id (ProgramIR::sources) of its MemoryChannel(...) /
  /// PortChannel(...) call, 0 when unknown (diagnostics name the call of a crossed pairing).
  std::vector<uint32_t> memoryChannelSource, portChannelSource;
  std::vector<SwitchChannelDecl> switchChannels;
  std::vector<RemoteBufferIR> remoteBuffers;
  std::vector<int64_t> semaphores;            ///< init values.

  /// The threadblock `tb`, creating all missing ones 0..tb first.
  ThreadBlockIR &tb(uint32_t tb);
  /// Look up or add remote buffer (rank, type); adds `access` to its access types; returns the GPU id.
  uint32_t addRemoteBuffer(int64_t rank, BufferType type, ChannelType access);

  std::vector<int32_t> remoteLookup; ///< (rank*3 + type) -> id + 1; internal.
};

/// One frame of the elaborator's dynamic context around a DSL call: what the notes of its
/// errors name (`in for gpu = 3`, `in call to fn `f``, `in `with` pipeline`, `while evaluating
/// param`).
struct SourceContext {
  enum Kind : uint8_t { For, Call, With, Param };
  Kind kind = For;
  llvm::SMLoc loc;      ///< The `for` statement, the call, the `with` statement, the param use.
  std::string name;     ///< For: the loop variables ("gpu", "(a, b)"); Call: the fn; Param: the param.
  std::string value;    ///< For: their values ("3", "(1, 2)"), as print() writes them.
};

/// Where an op comes from, resolved: the .msccl call (its SMLoc, in the llvm::SourceMgr of the
/// compilation) and its context frames, innermost first.
struct OpSource {
  llvm::SMLoc loc;
  std::vector<SourceContext> frames;
};

/// The op locations (Op::source and Op::fusedSources are ids of records here; 0 = unknown).
/// One record per DSL call that added ops: its call site and the frames around it (loops with
/// their values, fn calls, `with`, params). Kept as a compact log, a few bytes per record: the
/// call's address as a delta to the previous one, the number of frames shared with the previous
/// record and only the new frames (a site id and the loop value); every 16th record is written
/// in full, so resolve() decodes at most 16 records.
class SourceTable {
public:
  SourceTable() = default;
  SourceTable(const SourceTable &o) { *this = o; }
  SourceTable(SourceTable &&) = default;
  SourceTable &operator=(const SourceTable &o);
  SourceTable &operator=(SourceTable &&) = default;
  /// A frame site (a `for` statement, call, `with`, param use); the elaborator adds each once.
  uint32_t addSite(SourceContext::Kind kind, llvm::SMLoc loc, std::string name);
  /// A new frame of a record: its site and, for a `for` frame, the loop value: an int (when
  /// `text` is null) or the printed values.
  struct NewFrame {
    uint32_t site = 0;
    int64_t value = 0;
    const std::string *text = nullptr;
  };
  /// Adds a record: the call at `loc`, the first `keep` frames of the previous record
  /// (outermost first), then `frames` (outer to inner). Returns its id (>= 1).
  uint32_t add(llvm::SMLoc loc, size_t keep, const std::vector<NewFrame> &frames);
  /// The record `id`; nullopt for 0 or an unknown id.
  std::optional<OpSource> resolve(uint32_t id) const;
  /// The call site of record `id` (cheaper than resolve); invalid for 0 or an unknown id.
  llvm::SMLoc loc(uint32_t id) const;
  /// Returns the spare capacity of the log (call once no more records come).
  void shrinkToFit();
  /// Number of records.
  uint32_t size() const { return count_; }
  /// Bytes held (for the benchmarks' accounting).
  size_t bytes() const { return blocks_.size() * kBlock + index_.capacity() * 4; }

private:
  struct Site {
    SourceContext::Kind kind;
    llvm::SMLoc loc;
    std::string name;
  };
  std::vector<Site> sites_;
  std::vector<std::string> texts_;     ///< Non-int loop values.
  /// The records, in blocks of kBlock bytes (appending never copies the log).
  static constexpr size_t kBlock = 1 << 16;
  std::vector<std::unique_ptr<uint8_t[]>> blocks_;
  size_t size_ = 0;                    ///< Bytes written.
  std::vector<uint8_t> record_;        ///< The record being written.
  std::vector<uint64_t> index_;        ///< Offset of records 1, 17, 33, ...
  uint8_t at(size_t offset) const { return blocks_[offset / kBlock][offset % kBlock]; }
  uint32_t count_ = 0;
  uintptr_t lastLoc_ = 0;
  std::vector<std::pair<uint32_t, uint64_t>> stack_; ///< Frames of the last record: site, encoded value.
};

/// Signal/wait counts of one (src rank, dst rank, channel type), with the last call of each kind.
struct SignalWaitCount {
  int64_t signals = 0;     ///< Signals src->dst.
  int64_t waits = 0;       ///< Waits by dst for src.
  uint32_t lastSignal = 0; ///< Source of the last signal (SourceTable::ops id; 0 = unknown).
  uint32_t lastWait = 0;   ///< Source of the last wait.
};

/// The whole program state.
struct ProgramIR {
  ProgramOptions options;              ///< numRanks resolved.
  std::vector<GpuIR> gpus;
  /// (src rank, dst rank, channel type) -> counts.
  std::map<std::tuple<int64_t, int64_t, ChannelType>, SignalWaitCount> signalWait;
  /// Op locations.
  SourceTable sources;
};

/// Decodes the packed ops of every threadblock of `gpu` into its `ops` (packed ones first).
void unpackOps(GpuIR &gpu);
/// unpackOps() on every GPU.
void unpackOps(ProgramIR &ir);
/// The op list of `tb` (packed ops decoded, then `ops`), without changing it.
std::vector<Op> allOps(const ThreadBlockIR &tb);

/// Text dump of the IR (`mscclc --emit=ir`, `--print-after=PASS`): one line per op, indented
/// per rank/tb/pipeline, chunk ranges as kind[index:index+size].
void printIR(std::ostream &os, const ProgramIR &ir);
/// The part of printIR of one rank (from its `rank N:` line).
void printGpuIR(std::ostream &os, const GpuIR &gpu);
std::string printGpuIR(const GpuIR &gpu);
std::string printIR(const ProgramIR &ir);
/// One op on one line (no trailing newline), e.g. "put src=[i[0:1]] dst=[rb0:o[1:2]] ch=memory[0]".
std::string printOp(const Op &op);

} // namespace msccl::ir
