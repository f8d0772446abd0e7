//===- Plan.cpp - Spellings and equality of the plan model ------------------------------===//
//
// Every spelling is generated from PlanEnums.def.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/Plan.h"

#include <array>

namespace msccl::plan {

namespace {

struct OpInfo {
  std::string_view name;
  OpShape shape;
  bool executable;
};

constexpr std::array<OpInfo, kNumOpTypes> kOpInfo = {{
#define MSCCL_OP(Enum, Json, Shape, Executable, ...) {Json, OpShape::Shape, Executable},
#include "msccl/plan/PlanEnums.def"
}};

template <typename E, size_t N>
std::optional<E> lookup(const std::array<std::string_view, N> &names, std::string_view s) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == s)
      return static_cast<E>(i);
  return std::nullopt;
}

constexpr std::array<std::string_view, 3> kBufferTypeNames = {
#define MSCCL_BUFFER_TYPE(Enum, Json, Value) Json,
#include "msccl/plan/PlanEnums.def"
};
constexpr std::array<std::string_view, 4> kChannelTypeNames = {
#define MSCCL_CHANNEL_TYPE(Enum, Json) Json,
#include "msccl/plan/PlanEnums.def"
};
constexpr std::array<std::string_view, 3> kReduceOpNames = {
#define MSCCL_REDUCE_OP(Enum, Json) Json,
#include "msccl/plan/PlanEnums.def"
};
constexpr std::array<std::string_view, 6> kDataTypeNames = {
#define MSCCL_DATA_TYPE(Enum, Name, Bytes) Name,
#include "msccl/plan/PlanEnums.def"
};
constexpr std::array<unsigned, 6> kDataTypeBytes = {
#define MSCCL_DATA_TYPE(Enum, Name, Bytes) Bytes,
#include "msccl/plan/PlanEnums.def"
};

// The buffer-type enum values are the reference's (0, 1, 2) and dense, so the name table is
// indexed by value; check that the .def keeps it so.
#define MSCCL_BUFFER_TYPE(Enum, Json, Value)                                                       \
  static_assert(static_cast<unsigned>(BufferType::Enum) < kBufferTypeNames.size());
#include "msccl/plan/PlanEnums.def"

} // namespace

std::string_view opName(OpType t) { return kOpInfo[static_cast<size_t>(t)].name; }
OpShape opShape(OpType t) { return kOpInfo[static_cast<size_t>(t)].shape; }
bool opIsExecutable(OpType t) { return kOpInfo[static_cast<size_t>(t)].executable; }
std::optional<OpType> parseOpName(std::string_view s) {
  for (size_t i = 0; i < kOpInfo.size(); ++i)
    if (kOpInfo[i].name == s)
      return static_cast<OpType>(i);
  return std::nullopt;
}

std::string_view bufferTypeName(BufferType t) { return kBufferTypeNames[static_cast<size_t>(t)]; }
std::optional<BufferType> parseBufferType(std::string_view s) { return lookup<BufferType>(kBufferTypeNames, s); }
std::string_view channelTypeName(ChannelType t) { return kChannelTypeNames[static_cast<size_t>(t)]; }
std::optional<ChannelType> parseChannelType(std::string_view s) { return lookup<ChannelType>(kChannelTypeNames, s); }
std::string_view reduceOpName(ReduceOp r) { return kReduceOpNames[static_cast<size_t>(r)]; }
std::optional<ReduceOp> parseReduceOp(std::string_view s) { return lookup<ReduceOp>(kReduceOpNames, s); }
std::string_view dataTypeName(DataType d) { return kDataTypeNames[static_cast<size_t>(d)]; }
std::optional<DataType> parseDataType(std::string_view s) { return lookup<DataType>(kDataTypeNames, s); }
unsigned dataTypeBytes(DataType d) { return kDataTypeBytes[static_cast<size_t>(d)]; }

bool BufferRef::operator==(const BufferRef &o) const {
  if (loc != o.loc || index != o.index || size != o.size || rank != o.rank || indexExpr != o.indexExpr ||
      sizeExpr != o.sizeExpr)
    return false;
  return loc == Loc::Local ? type == o.type : id == o.id;
}

bool Op::operator==(const Op &o) const {
  if (type != o.type)
    return false;
  switch (opShape(type)) {
  case OpShape::Nop:
    return true;
  case OpShape::Sync:
    return channelIds == o.channelIds && channelType == o.channelType;
  case OpShape::Sem:
    return semaphoreIds == o.semaphoreIds;
  case OpShape::Barrier:
    return barrierId == o.barrierId && numThreadblocks == o.numThreadblocks;
  case OpShape::Data:
    return src == o.src && dst == o.dst && channelIds == o.channelIds && channelType == o.channelType &&
           reduceOp == o.reduceOp && tbg == o.tbg;
  case OpShape::Pipeline:
    return iterContext.unitSize == o.iterContext.unitSize && iterContext.numChunks == o.iterContext.numChunks &&
           ops == o.ops;
  case OpShape::GroupLoadReduce:
    return glreBufferType == o.glreBufferType && glreBufferOffset == o.glreBufferOffset && glreSize == o.glreSize &&
           glreDstChunk == o.glreDstChunk && channelIds == o.channelIds && channelType == o.channelType &&
           reduceOp == o.reduceOp;
  }
  return false;
}

bool Threadblock::operator==(const Threadblock &o) const {
  return id == o.id && ops == o.ops && channels == o.channels && remoteBufferRefs == o.remoteBufferRefs;
}

bool ChannelDecl::operator==(const ChannelDecl &o) const {
  if (channelType != o.channelType)
    return false;
  if (channelType == ChannelType::Switch)
    return bufferType == o.bufferType && rankGroups == o.rankGroups;
  return connectedTo == o.connectedTo;
}

bool Gpu::operator==(const Gpu &o) const {
  return id == o.id && inputChunks == o.inputChunks && outputChunks == o.outputChunks &&
         scratchChunks == o.scratchChunks && threadblocks == o.threadblocks && channels == o.channels &&
         remoteBuffers == o.remoteBuffers && semaphores == o.semaphores;
}

bool Plan::operator==(const Plan &o) const {
  return name == o.name && collective == o.collective && protocol == o.protocol && inplace == o.inplace &&
         reuseResources == o.reuseResources && gpus == o.gpus && numThreadsPerBlock == o.numThreadsPerBlock &&
         useDoubleScratchBuffer == o.useDoubleScratchBuffer && bufferAlignment == o.bufferAlignment &&
         minMessageSize == o.minMessageSize && maxMessageSize == o.maxMessageSize &&
         variableSizes == o.variableSizes;
}

} // namespace msccl::plan
