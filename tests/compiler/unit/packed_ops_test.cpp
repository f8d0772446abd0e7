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
void checkSame(const Op &a, const Op &b);

// One comparison per field type; PySets by table slots and size (iteration order).
template <class T> void checkField(const char *name, const T &a, const T &b) {
  INFO("field " << name);
  CHECK(a == b);
}
void checkField(const char *name, const PySet &a, const PySet &b) {
  INFO("field " << name);
  CHECK(a.rawSlots() == b.rawSlots());
  CHECK(a.size() == b.size());
}
void checkField(const char *name, const std::vector<Op> &a, const std::vector<Op> &b) {
  INFO("field " << name);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) checkSame(a[i], b[i]);
}

/// Every field of `a` and `b` (the list of OpFields.def, recursively for pipelines).
void checkSame(const Op &a, const Op &b) {
  CHECK(a.kind == b.kind);
#define OP_FIELD(Type, name, init, doc) checkField(#name, a.name, b.name);
#include "msccl/ir/OpFields.def"
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
  op.source = 77777;
  op.fusedSources = {1, 0, UINT32_MAX};
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

TEST_CASE("resetOp gives back a default op; a sync op packs in a few bytes", "[packed]") {
  Op op;
  op.kind = OpKind::Pipeline;
  op.source = 5;
  op.fusedSources = {6};
  op.syncChannelIds = PySet::fromList({1, 2});
  op.localSrc = {LocalChunk{BufferType::Scratch, 1, 1}};
  op.tbg = TbgInfo{1, 2};
  op.userChunk = Chunk{1, BufferType::Output, 2, 3};
  op.unit = 9;
  op.ops.resize(2);
  resetOp(op);
  checkSame(op, Op{});

  for (uint32_t channel : {0u, 7u, 300u}) {
    Op sync;
    sync.kind = OpKind::Signal;
    sync.syncChannelIds = PySet::single(channel);
    sync.channelType = ChannelType::Memory;
    sync.dataSync = SyncType::Both;
    sync.source = 1000;
    PackedOps p;
    packOp(p, sync);
    // kind, presence bits, channel type, set (tag + key), data sync, source (2 bytes)
    CHECK(p.bytes.size() <= 9);
    checkSame(sync, roundTrip(sync));
  }
}
