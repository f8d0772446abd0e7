//===- MscclpplangStyle.cpp - The builtins and the plan of the mscclpplang style ----------===//
//
// chunk(...), rank(...), Check() and the ChunkRef / RankRef methods of Builtins.def: each
// converts its arguments (Buffer / ChannelType / DataFormat enums, ChunkRefs) and becomes one
// call of the legacy::Program builder (LegacyIR.h), whose LegacyError becomes a StyleError at
// the call. Defaults are MSCCLPPLang's (chan_type memory; port for flush; nvls for group ops).
// A ChunkRef is the StyleHandle {rank, buffer, index, size}, a RankRef {rank}.
// compile() runs the passes (LegacyPasses.h) into MSCCLPPLang's plan (a JSON tree) and converts
// that tree with plan::fromLegacyJson, the converter `plan-convert` and every plan reader use.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/legacy/MscclpplangStyle.h"

#include "msccl/legacy/LegacyPasses.h"
#include "msccl/plan/LegacyPlan.h"

namespace msccl::legacy {

using elab::ClassId;
using elab::EnumId;
using elab::MethodId;
using elab::StyleArgs;
using elab::StyleError;
using elab::StyleHandle;
using elab::Value;
using elab::ValueKind;

namespace {

// --- Handles ------------------------------------------------------------------------------

Value refValue(const Ref &r) {
  return elab::makeDsl(ClassId::ChunkRef, StyleHandle{{r.rank, int64_t(r.buffer), r.index, r.size}});
}
Value optRef(const std::optional<Ref> &r) { return r ? refValue(*r) : Value(); }
const StyleHandle *handleOf(const Value &v) {
  if (v.kind() != ValueKind::Object)
    return nullptr;
  return std::get_if<StyleHandle>(&v.as<elab::DslObj>().handle);
}
Ref refOf(const StyleHandle &h) { return Ref{int(h.w[0]), Buf(h.w[1]), h.w[2], h.w[3]}; }

// --- Arguments ----------------------------------------------------------------------------

std::optional<Buf> toBuf(const Value &v, const char *param, int arg) {
  if (v.isNone())
    return std::nullopt;
  if (v.kind() == ValueKind::Enum && v.enumId() == EnumId::BufferType)
    return static_cast<Buf>(v.enumMember());
  throw StyleError(std::string("`") + param + "` must be a buffer (Buffer.input, Buffer.output, Buffer.scratch), got " +
                       elab::typeName(v),
                   arg);
}

ChanType toChan(const Value &v, ChanType def, const char *param, int arg) {
  if (v.isNone())
    return def;
  if (v.kind() == ValueKind::Enum && v.enumId() == EnumId::ChannelType)
    return static_cast<ChanType>(v.enumMember());
  throw StyleError(std::string("`") + param + "` must be a ChannelType, got " + elab::typeName(v), arg);
}

Ref toRef(const Value &v, const char *param, int arg) {
  if (const StyleHandle *h = handleOf(v); h && v.as<elab::DslObj>().cls == ClassId::ChunkRef)
    return refOf(*h);
  throw StyleError(std::string("`") + param + "` must be a ChunkRef (from `chunk(...)`), got " +
                       (v.isNone() ? std::string("none (chunk(...) gives none where the slot holds no chunk)")
                                   : elab::typeName(v)),
                   arg);
}

int64_t toI64(const Value &v, const char *param, int arg) {
  if (!v.isInt())
    throw StyleError(std::string("`") + param + "` must be an int, got " + elab::typeName(v), arg);
  return v.asInt();
}
int toI(const Value &v, const char *param, int arg) { return static_cast<int>(toI64(v, param, arg)); }

/// The ints of a range, list or tuple argument.
std::vector<int64_t> toInts(const Value &l, const char *param, const char *what, int arg) { // tb_list
  std::vector<int64_t> out;
  if (l.kind() == ValueKind::Range) {
    auto &r = l.as<elab::RangeObj>();
    for (int64_t i = 0; i < r.length(); ++i)
      out.push_back(r.at(i));
  } else if (l.kind() == ValueKind::List || l.kind() == ValueKind::Tuple) {
    for (auto &x : l.as<elab::ListObj>().items) {
      if (!x.isInt())
        throw StyleError(std::string("`") + param + "` must hold ints, got " + elab::typeName(x), arg);
      out.push_back(x.asInt());
    }
  } else
    throw StyleError(std::string("`") + param + "` must be a list of " + what + ", got " + elab::typeName(l), arg);
  return out;
}

// --- The program ----------------------------------------------------------------------------

/// The options of an mscclpplang-style program (MSCCLPPProgram's arguments); its collective's
/// chunk_factor is MSCCLPPLang's (chunks per rank of an AllReduce, not per rank and peer).
ProgramOptions legacyOptions(const elab::StyleOptions &so) {
  const ir::ProgramOptions &po = so.program;
  ProgramOptions lo;
  lo.name = po.name.value_or("");
  const ir::Collective &c = po.collective;
  Collective &lc = lo.collective;
  if (c.name == "allreduce") lc.kind = CollKind::AllReduce;
  else if (c.name == "allgather") lc.kind = CollKind::AllGather;
  else if (c.name == "reducescatter") lc.kind = CollKind::ReduceScatter;
  else if (c.name == "alltoall") lc.kind = CollKind::AllToAll;
  else if (c.name == "sendrecv") lc.kind = CollKind::SendRecv;
  else throw StyleError("the mscclpplang style has no collective `" + c.name + "`");
  lc.numRanks = int(c.numRanks);
  lc.chunkFactor = c.chunkFactor;
  lc.inplace = c.inplace;
  lc.numRanksPerNode = int(c.numRanks);
  lc.numChunkGroups = lc.kind == CollKind::AllReduce ? c.numRanks : 1;
  lo.numRanks = po.numRanks < 0 ? int(c.numRanks) : int(po.numRanks);
  lo.instances = po.instances;
  lo.protocol = po.protocol;
  lo.instrFusion = po.instrFusion;
  // ReplicationPolicy members: interleaved 0, none 1, duplicated 2, packed 3.
  const int64_t policy = so.replicationPolicy;
  if (so.replicationPolicySet && policy == 1)
    throw StyleError("replication policy `none` is not one of MSCCLPPLang's");
  lo.replicationPolicy = !so.replicationPolicySet || policy == 2 ? Policy::Duplicated
                         : policy == 0                           ? Policy::Interleaved
                                                                 : Policy::Packed;
  lo.numThreadsPerBlock = po.numThreadsPerBlock;
  lo.useDoubleScratchBuffer = po.useDoubleScratchBuffer;
  lo.minMessageSize = po.minMessageSize;
  lo.maxMessageSize = po.maxMessageSize;
  return lo;
}

class LegacyStyleProgram final : public elab::StyleProgram {
public:
  explicit LegacyStyleProgram(ProgramOptions o) : program(std::move(o)) {}
  elab::StylePlan compile(bool nativeText) override {
    elab::StylePlan out;
    nlohmann::ordered_json tree;
    try {
      tree = compileLegacy(program);
    } catch (const LegacyError &e) {
      throw StyleError(e.what());
    }
    if (nativeText)
      out.nativeText = tree.dump(2) + "\n"; // json.dumps(indent=2), as ir.py writes it
    else
      out.plan = plan::fromLegacyJson(nlohmann::json(tree));
    return out;
  }
  Program program;
};

Program &programOf(elab::StyleProgram &p) { return static_cast<LegacyStyleProgram &>(p).program; }

// --- The builtins -----------------------------------------------------------------------------

Value chunkRefMethod(Program &p, MethodId id, const Ref &self, StyleArgs a) {
  auto I = [&](int i, const char *n) { return toI(a[i], n, i); };
  auto I64 = [&](int i, const char *n) { return toI64(a[i], n, i); };
  auto B = [&](int i) { return toBuf(a[i], "buffer", i); };
  auto CT = [&](int i, ChanType def) { return toChan(a[i], def, "chan_type", i); };
  switch (id) {
  case MethodId::ChunkRef_put:
    return refValue(p.put(self, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), CT(4, ChanType::Memory)));
  case MethodId::ChunkRef_put_packet: {
    bool packetSrc = false;
    if (!a[4].isNone()) {
      if (a[4].kind() != ValueKind::Enum || a[4].enumId() != EnumId::DataFormat)
        throw StyleError("`src_format` must be a DataFormat, got " + elab::typeName(a[4]), 4);
      packetSrc = a[4].enumMember() == 1;
    }
    return refValue(p.putPacket(self, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), packetSrc,
                                CT(5, ChanType::Memory), toBuf(a[6], "temp_buffer", 6), I64(7, "temp_buffer_index")));
  }
  case MethodId::ChunkRef_get:
    p.get(self, I(0, "src"), B(1), I64(2, "index"), I64(3, "recvtb"), CT(4, ChanType::Memory));
    return Value();
  case MethodId::ChunkRef_signal:
    p.signal(self, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), CT(4, ChanType::Memory));
    return Value();
  case MethodId::ChunkRef_flush:
    p.flush(self, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), CT(4, ChanType::Port));
    return Value();
  case MethodId::ChunkRef_wait:
    p.wait(self, I(0, "src"), B(1), I64(2, "index"), I64(3, "recvtb"), CT(4, ChanType::Memory));
    return Value();
  case MethodId::ChunkRef_copy:
    return optRef(p.copy(self, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), false));
  case MethodId::ChunkRef_copy_packet:
    return optRef(p.copy(self, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), true));
  case MethodId::ChunkRef_reduce:
    return refValue(p.reduce(self, toRef(a[0], "other_chunkref", 0), I64(1, "recvtb"),
                             toChan(a[2], ChanType::Memory, "channel_type", 2), false));
  case MethodId::ChunkRef_reduce_packet:
    return refValue(p.reduce(self, toRef(a[0], "other_chunkref", 0), I64(1, "recvtb"), ChanType::Memory, true));
  case MethodId::ChunkRef_group_load_reduce: {
    if (a[0].kind() != ValueKind::List && a[0].kind() != ValueKind::Tuple)
      throw StyleError("`other_chunkrefs` must be a list of ChunkRefs, got " + elab::typeName(a[0]), 0);
    std::vector<Ref> others;
    for (auto &x : a[0].as<elab::ListObj>().items)
      others.push_back(toRef(x, "other_chunkrefs", 0));
    return refValue(p.groupLoadReduce(self, others, I64(1, "recvtb"), CT(2, ChanType::Nvls)));
  }
  case MethodId::ChunkRef_group_store: {
    std::vector<int> dsts;
    const Value &l = a[0];
    if (l.kind() == ValueKind::Range) {
      auto &r = l.as<elab::RangeObj>();
      for (int64_t i = 0; i < r.length(); ++i)
        dsts.push_back(int(r.at(i)));
    } else if (l.kind() == ValueKind::List || l.kind() == ValueKind::Tuple) {
      for (auto &x : l.as<elab::ListObj>().items)
        dsts.push_back(toI(x, "dsts", 0));
    } else
      throw StyleError("`dsts` must be a list of ranks, got " + elab::typeName(l), 0);
    p.groupStore(self, dsts, I64(1, "index"), B(2), I64(3, "sendtb"), CT(4, ChanType::Nvls));
    return Value();
  }
  case MethodId::ChunkRef_split: {
    std::vector<Value> out;
    for (auto &r : p.split(self, I64(0, "num")))
      out.push_back(refValue(r));
    return elab::makeList(std::move(out));
  }
  case MethodId::ChunkRef_group:
    return refValue(p.group(self, toRef(a[0], "other", 0)));
  default: break; // methods of other classes never reach the style
  }
  throw StyleError("not a method of the mscclpplang style");
}

class MscclpplangStyle final : public elab::Style {
public:
  std::string_view name() const override { return "mscclpplang"; }

  std::unique_ptr<elab::StyleProgram> begin(const elab::StyleOptions &o) const override {
    try {
      return std::make_unique<LegacyStyleProgram>(legacyOptions(o));
    } catch (const LegacyError &e) {
      throw StyleError(e.what());
    }
  }

  Value call(elab::StyleProgram &sp, elab::BuiltinFnId fn, StyleArgs a) const override {
    Program &p = programOf(sp);
    try {
      switch (fn) {
      case elab::BuiltinFnId::Fn_chunk: {
        int rank = toI(a[0], "rank", 0);
        auto b = toBuf(a[1], "buffer", 1);
        if (!b)
          throw StyleError("`buffer` of `chunk` must be a buffer, got none", 1);
        int64_t index = toI64(a[2], "index", 2);
        int64_t size = a.size() > 3 ? toI64(a[3], "size", 3) : 1;
        return optRef(p.chunk(rank, *b, index, size));
      }
      case elab::BuiltinFnId::Fn_rank: {
        int r = toI(a[0], "rank", 0);
        if (r < 0 || r >= p.numRanks())
          throw StyleError("rank " + std::to_string(r) + " is not a rank of the program (0.." +
                               std::to_string(p.numRanks() - 1) + ")",
                           0);
        return elab::makeDsl(ClassId::RankRef, StyleHandle{{r, 0, 0, 0}});
      }
      case elab::BuiltinFnId::Fn_Check: {
        std::vector<std::string> problems;
        if (!p.check(problems)) {
          std::string msg = "`Check()` failed: " + problems[0];
          if (problems.size() > 1)
            msg += " (and " + std::to_string(problems.size() - 1) + " more wrong chunks)";
          throw StyleError(msg);
        }
        return Value();
      }
      default: break; // other builtins never reach the style
      }
    } catch (const LegacyError &e) {
      throw StyleError(e.what());
    }
    throw StyleError("not a builtin of the mscclpplang style");
  }

  Value method(elab::StyleProgram &sp, MethodId id, const Value &self, StyleArgs a) const override {
    Program &p = programOf(sp);
    const StyleHandle &h = *handleOf(self);
    try {
      if (id == MethodId::RankRef_barrier) {
        p.barrier(int(h.w[0]), toInts(a[0], "tb_list", "ints", 0));
        return Value();
      }
      return chunkRefMethod(p, id, refOf(h), a);
    } catch (const LegacyError &e) {
      throw StyleError(e.what());
    }
  }

  Value attr(elab::AttrId a, const Value &self) const override {
    const Ref r = refOf(*handleOf(self));
    switch (a) {
    case elab::AttrId::ChunkRef_rank: return Value::integer(r.rank);
    case elab::AttrId::ChunkRef_buffer: return Value::enumMember(EnumId::BufferType, static_cast<int64_t>(r.buffer));
    case elab::AttrId::ChunkRef_index: return Value::integer(r.index);
    case elab::AttrId::ChunkRef_size: return Value::integer(r.size);
    default: break; // attributes of other classes never reach the style
    }
    throw StyleError("not an attribute of the mscclpplang style");
  }
};

} // namespace

const elab::Style &mscclpplangStyle() {
  static const MscclpplangStyle style;
  return style;
}

} // namespace msccl::legacy
