//===- Plan.h - The in-memory MSCCL++ execution plan ------------------------------------===//
//
// One in-memory model of an MSCCL++ JSON execution plan, shared by the compiler backend (which
// builds it and writes it with PlanJson.h) and the runtime (which reads it and runs it). The
// model is a faithful image of the JSON: reading a plan and writing it back gives the same JSON
// value, so fields whose *presence* matters (for example `channel_ids` on a memory `put`, which
// the DSL omits) are std::optional.
//
// Units: every `index`/`size` is in chunks; the executor turns chunks into bytes from the
// message size (see docs/spec/plan-format.md#plan-3). Ids in ops (channel ids, buffer ids,
// switch channel ids) are threadblock-local; ids in threadblock tables are gpu-level.
//
// Mirrors: mscclpp src/core/include/execution_plan.hpp and the JSON written by
// python/mscclpp/language/program.py (to_json).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace msccl::plan {

/// Op codes, in the reference executor's OperationType order (PlanEnums.def).
enum class OpType : uint8_t {
#define MSCCL_OP(Enum, Json, Shape, Executable, ...) Enum,
#include "msccl/plan/PlanEnums.def"
};

/// The JSON fields an op carries (PlanEnums.def documents each shape).
enum class OpShape : uint8_t { Nop, Sync, Sem, Barrier, Data, Pipeline, GroupLoadReduce };

enum class BufferType : uint8_t {
#define MSCCL_BUFFER_TYPE(Enum, Json, Value) Enum = Value,
#include "msccl/plan/PlanEnums.def"
};

enum class ChannelType : uint8_t {
#define MSCCL_CHANNEL_TYPE(Enum, Json) Enum,
#include "msccl/plan/PlanEnums.def"
};

enum class ReduceOp : uint8_t {
#define MSCCL_REDUCE_OP(Enum, Json) Enum,
#include "msccl/plan/PlanEnums.def"
};

enum class DataType : uint8_t {
#define MSCCL_DATA_TYPE(Enum, Name, Bytes) Enum,
#include "msccl/plan/PlanEnums.def"
};

constexpr unsigned kNumOpTypes = 0
#define MSCCL_OP(Enum, Json, Shape, Executable, ...) +1
#include "msccl/plan/PlanEnums.def"
    ;

// --- Spellings (all generated from PlanEnums.def) -------------------------------------------
/// JSON spelling of an op code, e.g. "rres".
std::string_view opName(OpType t);
/// The op's JSON shape.
OpShape opShape(OpType t);
/// Whether the MSCCL++ executor accepts the op (false only for `glre`).
bool opIsExecutable(OpType t);
/// JSON spelling -> op code; nullopt for unknown names.
std::optional<OpType> parseOpName(std::string_view s);

std::string_view bufferTypeName(BufferType t);          // "i" "o" "s"
std::optional<BufferType> parseBufferType(std::string_view s);
std::string_view channelTypeName(ChannelType t);        // "none" "memory" "port" "switch"
std::optional<ChannelType> parseChannelType(std::string_view s);
std::string_view reduceOpName(ReduceOp r);              // "sum" "min" "max"
std::optional<ReduceOp> parseReduceOp(std::string_view s);
std::string_view dataTypeName(DataType d);              // "float16" ... "uint8"
std::optional<DataType> parseDataType(std::string_view s);
/// Size of one element of `d` in bytes.
unsigned dataTypeBytes(DataType d);

// --- Model ----------------------------------------------------------------------------------

/// One entry of an op's `src_buff` / `dst_buff` (or a `glre` `dst_chunk`).
///  Local:  {"type": "i|o|s", "index", "size"} (+ "rank" when the emitter wrote one, e.g. gstore)
///  Remote: {"buffer_id": tb-local remote buffer index, "index", "size"}
///  Switch: {"switch_channel_id": tb-local switch channel index, "index", "size"}
struct BufferRef {
  enum class Loc : uint8_t { Local, Remote, Switch };
  Loc loc = Loc::Local;
  BufferType type = BufferType::Input; ///< Local only.
  uint32_t id = 0;                     ///< buffer_id (Remote) or switch_channel_id (Switch).
  uint64_t index = 0;                  ///< Chunks.
  uint64_t size = 0;                   ///< Chunks.
  std::optional<uint32_t> rank;        ///< Extra key the emitter writes on some local chunks; ignored by executors.
  /// Symbolic plans only (Plan::variableSizes): `index_expr` / `size_expr`, the entry's offset and
  /// length in *elements* as an affine expression over the count matrix (plan#10.8,
  /// grammar in msccl/plan/Symbolic.h). `index`/`size` then stay the entry's block range. Empty: none.
  std::string indexExpr, sizeExpr;

  static BufferRef local(BufferType t, uint64_t index, uint64_t size) { return {Loc::Local, t, 0, index, size, {}, {}, {}}; }
  static BufferRef remote(uint32_t bufferId, uint64_t index, uint64_t size) { return {Loc::Remote, BufferType::Input, bufferId, index, size, {}, {}, {}}; }
  static BufferRef switchRef(uint32_t switchChannelId, uint64_t index, uint64_t size) { return {Loc::Switch, BufferType::Input, switchChannelId, index, size, {}, {}, {}}; }
  bool operator==(const BufferRef &o) const;
  bool operator!=(const BufferRef &o) const { return !(*this == o); }
};

/// `tbg_info`: this op is member `tbId` of a threadblock group of `tbgSize` threadblocks.
struct TbgInfo {
  uint32_t tbId = 0;
  uint32_t tbgSize = 1;
  bool operator==(const TbgInfo &o) const { return tbId == o.tbId && tbgSize == o.tbgSize; }
};

/// `iter_context` of a pipeline: body runs on `unitSize`-byte windows over `numChunks` chunks.
struct IterContext {
  uint64_t unitSize = 0; ///< Bytes.
  uint64_t numChunks = 0;
};

/// One operation of a threadblock. Which fields are meaningful depends on opShape(type).
struct Op {
  OpType type = OpType::Nop;

  // Data shape.
  std::vector<BufferRef> src;                  ///< src_buff
  std::vector<BufferRef> dst;                  ///< dst_buff
  std::optional<std::vector<uint32_t>> channelIds; ///< channel_ids (tb-local), when present
  std::optional<ChannelType> channelType;      ///< channel_type, when present
  std::optional<ReduceOp> reduceOp;            ///< reduce_op, when present
  std::optional<TbgInfo> tbg;                  ///< tbg_info, when present

  // Sem shape.
  std::vector<uint32_t> semaphoreIds;          ///< semaphore_ids (gpu-level semaphore indices)

  // Barrier shape.
  uint32_t barrierId = 0;
  uint32_t numThreadblocks = 0;

  // Pipeline shape.
  IterContext iterContext;
  std::vector<Op> ops;                         ///< Inner ops (no nested pipelines).

  // GroupLoadReduce (`glre`) shape; also uses channelIds, channelType, reduceOp.
  BufferType glreBufferType = BufferType::Input;
  uint64_t glreBufferOffset = 0;               ///< Chunks.
  uint64_t glreSize = 0;                       ///< Chunks.
  BufferRef glreDstChunk;                      ///< Local, with rank.

  bool operator==(const Op &o) const;
  bool operator!=(const Op &o) const { return !(*this == o); }
};

/// A threadblock's selection of gpu-level channels of one type: tb-local channel p of
/// `channelType` is gpu-level channel `channelIds[p]` (concatenated over entries of that type).
struct TbChannels {
  ChannelType channelType = ChannelType::Memory;
  std::vector<uint32_t> channelIds;
  bool operator==(const TbChannels &o) const { return channelType == o.channelType && channelIds == o.channelIds; }
};

/// A threadblock's selection of gpu-level remote buffers accessed through one channel type.
struct RemoteBufferRefs {
  ChannelType accessChannelType = ChannelType::Memory;
  std::vector<uint32_t> remoteBufferIds;
  bool operator==(const RemoteBufferRefs &o) const { return accessChannelType == o.accessChannelType && remoteBufferIds == o.remoteBufferIds; }
};

struct Threadblock {
  uint32_t id = 0;
  std::vector<Op> ops;
  std::vector<TbChannels> channels;
  std::vector<RemoteBufferRefs> remoteBufferRefs;
  bool operator==(const Threadblock &o) const;
};

/// Switch channel rank group: `size` is what the emitter writes (number of ranks).
struct RankGroup {
  uint32_t size = 0;
  std::vector<uint32_t> ranks;
  bool operator==(const RankGroup &o) const { return size == o.size && ranks == o.ranks; }
};

/// A gpu-level channel declaration.
///  memory/port: {"channel_type", "connected_to": [peer rank per channel]}
///  switch:      {"channel_type": "switch", "buffer_type", "rank_groups": [...]} (one channel per group)
struct ChannelDecl {
  ChannelType channelType = ChannelType::Memory;
  std::vector<uint32_t> connectedTo;      ///< memory/port
  BufferType bufferType = BufferType::Input; ///< switch
  std::vector<RankGroup> rankGroups;      ///< switch
  bool operator==(const ChannelDecl &o) const;
};

/// "this gpu accesses buffer `type` of rank `rank` through these channel types".
struct RemoteBuffer {
  uint32_t rank = 0;
  BufferType type = BufferType::Input;
  std::vector<ChannelType> accessChannelTypes;
  bool operator==(const RemoteBuffer &o) const { return rank == o.rank && type == o.type && accessChannelTypes == o.accessChannelTypes; }
};

struct Semaphore {
  int32_t initValue = 0;
  bool operator==(const Semaphore &o) const { return initValue == o.initValue; }
};

struct Gpu {
  uint32_t id = 0;
  uint64_t inputChunks = 0, outputChunks = 0, scratchChunks = 0;
  std::vector<Threadblock> threadblocks;
  std::vector<ChannelDecl> channels;
  std::vector<RemoteBuffer> remoteBuffers;
  std::vector<Semaphore> semaphores;
  bool operator==(const Gpu &o) const;
};

/// `variable_sizes`: the plan's buffer entries are sized at run time by a count matrix
/// (AllToAllV, plan#10.8). Absent in fixed-size plans.
struct VariableSizes {
  std::string counts = "matrix"; ///< What the caller passes: the full n x n matrix counts[r][p] (elements).
  uint64_t blockBound = 0;       ///< B: elements per scratch slot, the upper bound of every count; 0 = none.
  bool operator==(const VariableSizes &o) const { return counts == o.counts && blockBound == o.blockBound; }
};

/// The whole plan. Defaults are those of the reference loader.
struct Plan {
  std::optional<std::string> name;        ///< null when the DSL program had no name
  std::string collective;                 ///< "allreduce", "allgather", ..., "test", "custom"
  std::string protocol = "Simple";        ///< "Simple" or "LL"
  bool inplace = false;
  bool reuseResources = false;
  std::vector<Gpu> gpus;
  uint32_t numThreadsPerBlock = 1024;
  bool useDoubleScratchBuffer = false;
  uint64_t bufferAlignment = 16;          ///< Bytes.
  uint64_t minMessageSize = 0;            ///< Bytes.
  uint64_t maxMessageSize = UINT64_MAX;   ///< Bytes.
  std::optional<VariableSizes> variableSizes; ///< Symbolic (run-time) sizes; nullopt for fixed-size plans.
  bool operator==(const Plan &o) const;
};

} // namespace msccl::plan
