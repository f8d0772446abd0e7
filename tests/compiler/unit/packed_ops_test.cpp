// PackedOps (ir/IR.h): the elaborator's compact op store must give back every op exactly, so
// that the passes and the plan do not depend on whether ops were ever packed.
#include "TestUtil.h"
#include "TraceReplay.h"

#include "msccl/backend/Lower.h"
#include "msccl/ir/IR.h"
#include "msccl/plan/PlanJson.h"

#include <catch2/catch.hpp>

#include <filesystem>

namespace fs = std::filesystem;
using namespace msccl;
using namespace msccl::ir;

namespace {
/// Every field of `a` and `b` (recursively for pipelines), PySets by iteration order and size.
void checkSame(const Op &a, const Op &b) {
  CHECK(a.kind == b.kind);
  CHECK(a.dataSync == b.dataSync);
  CHECK(a.channelType == b.channelType);
  CHECK(a.reduceOp == b.reduceOp);
  CHECK(a.tbg == b.tbg);
  CHECK(a.syncChannelIds.rawSlots() == b.syncChannelIds.rawSlots());
  CHECK(a.syncChannelIds.size() == b.syncChannelIds.size());
  CHECK(a.channelIds == b.channelIds);
  CHECK(a.ids == b.ids);
  CHECK(a.barrierId == b.barrierId);
  CHECK(a.numThreadblocks == b.numThreadblocks);
  CHECK(a.localSrc == b.localSrc);
  CHECK(a.localDst == b.localDst);
  CHECK(a.localPktDst == b.localPktDst);
  CHECK(a.remoteSrc == b.remoteSrc);
  CHECK(a.remoteDst == b.remoteDst);
  CHECK(a.switchBuffer == b.switchBuffer);
  CHECK(a.bufferOffset == b.bufferOffset);
  CHECK(a.switchSize == b.switchSize);
  CHECK(a.userChunk == b.userChunk);
  CHECK(a.srcIndex == b.srcIndex);
  CHECK(a.dstIndex == b.dstIndex);
  CHECK(a.unit == b.unit);
  CHECK(a.numChunks == b.numChunks);
  REQUIRE(a.ops.size() == b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) checkSame(a.ops[i], b.ops[i]);
}

Op roundTrip(const Op &op) {
  PackedOps p;
  packOp(p, op);
  std::vector<Op> out;
  decodeOps(p, out);
  REQUIRE(out.size() == 1);
  return out[0];
}
} // namespace

TEST_CASE("every field survives packing, negative and large values included", "[packed]") {
  Op op;
  op.kind = OpKind::MultiLoadReduceStore;
  op.dataSync = SyncType::Both;
  op.channelType = ChannelType::Switch;
  op.reduceOp = ReduceOperationType::Max;
  op.tbg = TbgInfo{3, 7};
  op.syncChannelIds = PySet::fromList({9, 1, 17, 300, 4, 5});
  op.channelIds = {0, 70000, 5};
  op.ids = {2, 1};
  op.barrierId = 12;
  op.numThreadblocks = 4;
  op.localSrc = {LocalChunk{BufferType::Scratch, -5, 3}, LocalChunk{BufferType::Output, INT64_MAX, INT64_MIN}};
  op.localDst = {LocalChunk{BufferType::Input, 1, 2}};
  op.localPktDst = {LocalChunk{BufferType::Scratch, 128, 0}};
  op.remoteSrc = {RemoteChunk{BufferType::Output, 3, 1, 9}};
  op.remoteDst = {RemoteChunk{BufferType::Input, -1, 2, UINT32_MAX}};
  op.switchBuffer = BufferType::Output;
  op.bufferOffset = -7;
  op.switchSize = 1 << 20;
  op.userChunk = Chunk{5, BufferType::Scratch, 6, 7};
  op.srcIndex = {1, -2};
  op.dstIndex = {3};
  checkSame(op, roundTrip(op));
  CHECK(!hasNonNegativeValues(op));

  Op pipe;
  pipe.kind = OpKind::Pipeline;
  pipe.unit = 4096;
  pipe.numChunks = 3;
  pipe.ops = {op, Op{}};
  checkSame(pipe, roundTrip(pipe));

  Op plain; // all defaults, and a set that was materialized but left empty
  checkSame(plain, roundTrip(plain));
  plain.syncChannelIds.merge(PySet::single(3));
  checkSame(plain, roundTrip(plain));
  plain.syncChannelIds = PySet::unionOf(PySet::single(9), PySet::single(1)); // 8 slots, 2 keys
  checkSame(plain, roundTrip(plain));
  plain.syncChannelIds = PySet::fromRaw({-1, 9, -1, -1, -1, -1, -1, -1}, 1); // one key, not single()'s slot
  checkSame(plain, roundTrip(plain));
}

TEST_CASE("packed and unpacked op lists print and lower alike", "[packed]") {
  size_t packedOps = 0;
  for (const char *dir : {MSCCL_DSL_TRACE_DIR, MSCCL_DSL_DATA_DIR "/quirks"})
    for (auto &e : fs::directory_iterator(dir)) {
      std::string path = e.path().string();
      if (path.size() <= 11 || path.substr(path.size() - 11) != ".trace.json") continue;
      INFO("trace " << path);
      auto prog = test::replayTrace(test::readJsonFile(path));
      ProgramIR packed = prog->ir();
      ProgramIR unpacked = packed;
      unpackOps(unpacked);
      for (size_t g = 0; g < packed.gpus.size(); ++g)
        for (size_t t = 0; t < packed.gpus[g].threadblocks.size(); ++t) {
          auto &ptb = packed.gpus[g].threadblocks[t];
          auto &utb = unpacked.gpus[g].threadblocks[t];
          CHECK(utb.packed.empty());
          REQUIRE(utb.ops.size() == ptb.packed.count + ptb.ops.size());
          auto ops = allOps(ptb);
          for (size_t i = 0; i < ops.size(); ++i) checkSame(ops[i], utb.ops[i]);
          packedOps += ptb.packed.count;
        }
      CHECK(printIR(packed) == printIR(unpacked));
      CHECK(backend::lowerToPlan(packed).gpus == backend::lowerToPlan(unpacked).gpus);
    }
  CHECK(packedOps > 1000); // the elaborator packs what it adds
}

TEST_CASE("packSyncOp writes the bytes packOp writes for the same sync op", "[packed]") {
  for (uint32_t channel : {0u, 1u, 7u, 8u, 9u, 127u, 128u, 300u, 70000u})
    for (auto kind : {OpKind::Signal, OpKind::Wait, OpKind::RelaxedSignal, OpKind::Flush})
      for (auto ct : {ChannelType::Memory, ChannelType::Port, ChannelType::None})
        for (auto ds : {SyncType::None, SyncType::Before, SyncType::After, SyncType::Both}) {
          Op op;
          op.kind = kind;
          op.syncChannelIds = PySet::single(channel);
          op.channelType = ct;
          op.dataSync = ds;
          PackedOps viaOp, direct;
          packOp(viaOp, op);
          packSyncOp(direct, kind, ct, ds, channel);
          CHECK(direct.bytes == viaOp.bytes);
          CHECK(direct.count == 1);
          CHECK(direct.nonNegative);
        }
}
