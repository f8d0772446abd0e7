//===- InterpLegacy.cpp - The calls of the mscclpplang style ------------------------------===//
//
// chunk(...), rank(...), Check() and the ChunkRef / RankRef methods of Builtins.def: each
// converts its arguments (Buffer / ChannelType / DataFormat enums, ChunkRefs) and becomes one
// call of the legacy::Program builder (msccl/legacy/LegacyIR.h), whose LegacyError becomes
// err_dsl at the call with the loop notes. Defaults are MSCCLPPLang's (chan_type memory; port
// for flush; nvls for group ops).
//
//===------------------------------------------------------------------------------------===//
#include "BuiltinIndex.h"
#include "Interp.h"

namespace msccl::elab {

using namespace msccl::ast;
using diag::DiagId;

legacy::Program &Interp::legacyProgram(SMLoc loc, const char *what) {
  if (!legacy_)
    failDsl(loc, std::string("`") + what + "` belongs to the mscclpplang style: declare the program with "
                                        "`style = \"mscclpplang\"`");
  return *legacy_;
}

namespace {

std::optional<legacy::Buf> toBuf(Interp &in, const Value &v, const char *param, SMLoc loc) {
  if (v.isNone())
    return std::nullopt;
  if (v.kind() == ValueKind::Enum && v.enumId() == EnumId::BufferType)
    return static_cast<legacy::Buf>(v.enumMember());
  in.fail(loc, DiagId::err_dsl, {std::string("`") + param + "` must be a buffer (Buffer.input, Buffer.output, Buffer.scratch), got " + typeName(v)});
}

legacy::ChanType toChan(Interp &in, const Value &v, legacy::ChanType def, const char *param, SMLoc loc) {
  if (v.isNone())
    return def;
  if (v.kind() == ValueKind::Enum && v.enumId() == EnumId::ChannelType)
    return static_cast<legacy::ChanType>(v.enumMember());
  in.fail(loc, DiagId::err_dsl, {std::string("`") + param + "` must be a ChannelType, got " + typeName(v)});
}

const legacy::Ref &toRef(Interp &in, const Value &v, const char *param, SMLoc loc) {
  if (v.kind() == ValueKind::Object)
    if (auto *r = std::get_if<legacy::Ref>(&v.as<DslObj>().handle))
      return *r;
  in.fail(loc, DiagId::err_dsl, {std::string("`") + param + "` must be a ChunkRef (from `chunk(...)`), got " +
                                     (v.isNone() ? std::string("none (chunk(...) gives none where the slot holds no chunk)")
                                                 : typeName(v))});
}

int toI(Interp &in, const Value &v, const char *param, SMLoc loc) {
  if (!v.isInt())
    in.fail(loc, DiagId::err_dsl, {std::string("`") + param + "` must be an int, got " + typeName(v)});
  return static_cast<int>(v.asInt());
}

Value refValue(const legacy::Ref &r) { return makeDsl(ClassId::ChunkRef, r); }
Value optRef(const std::optional<legacy::Ref> &r) { return r ? refValue(*r) : Value(); }

} // namespace

Value Interp::legacyBuiltin(int fn, const std::vector<Value> &a, const std::vector<SMLoc> &locs, SMLoc loc) {
  try {
    switch (static_cast<BuiltinFnId>(fn)) {
    case BuiltinFnId::Fn_chunk: {
      legacy::Program &p = legacyProgram(loc, "chunk");
      int rank = toI(*this, a[0], "rank", locs[0]);
      auto b = toBuf(*this, a[1], "buffer", locs[1]);
      if (!b)
        fail(locs[1], DiagId::err_dsl, {"`buffer` of `chunk` must be a buffer, got none"});
      if (!a[2].isInt())
        fail(locs[2], DiagId::err_dsl, {"`index` must be an int, got " + typeName(a[2])});
      int64_t size = 1;
      if (a.size() > 3) {
        if (!a[3].isInt())
          fail(locs[3], DiagId::err_dsl, {"`size` must be an int, got " + typeName(a[3])});
        size = a[3].asInt();
      }
      return optRef(p.chunk(rank, *b, a[2].asInt(), size));
    }
    case BuiltinFnId::Fn_rank: {
      legacy::Program &p = legacyProgram(loc, "rank");
      int r = toI(*this, a[0], "rank", locs[0]);
      if (r < 0 || r >= p.numRanks())
        fail(locs[0], DiagId::err_dsl, {"rank " + std::to_string(r) + " is not a rank of the program (0.." +
                                            std::to_string(p.numRanks() - 1) + ")"});
      return makeDsl(ClassId::RankRef, LegacyRank{r});
    }
    case BuiltinFnId::Fn_Check: {
      legacy::Program &p = legacyProgram(loc, "Check");
      std::vector<std::string> problems;
      if (!p.check(problems)) {
        std::string msg = "`Check()` failed: " + problems[0];
        if (problems.size() > 1)
          msg += " (and " + std::to_string(problems.size() - 1) + " more wrong chunks)";
        fail(loc, DiagId::err_dsl, {msg});
      }
      return Value();
    }
    default: break;
    }
  } catch (const legacy::LegacyError &e) {
    failDsl(loc, e.what());
  }
  fail(loc, DiagId::err_not_callable);
}

Value Interp::legacyMethod(MethodId id, const Value &self, ArgValues &a, const ArgLocs &locs, SMLoc loc) {
  using legacy::ChanType;
  legacy::Program &p = legacyProgram(loc, "ChunkRef");
  const auto &h = self.as<DslObj>().handle;
  auto I = [&](size_t i, const char *n) { return toI(*this, a[i], n, locs[i]); };
  auto I64 = [&](size_t i, const char *n) -> int64_t {
    if (!a[i].isInt())
      fail(locs[i], DiagId::err_dsl, {std::string("`") + n + "` must be an int, got " + typeName(a[i])});
    return a[i].asInt();
  };
  auto B = [&](size_t i) { return toBuf(*this, a[i], "buffer", locs[i]); };
  auto CT = [&](size_t i, ChanType def) { return toChan(*this, a[i], def, "chan_type", locs[i]); };
  try {
    if (id == MethodId::RankRef_barrier) {
      std::vector<int64_t> tbs;
      const Value &l = a[0];
      if (l.kind() == ValueKind::Range) {
        auto &r = l.as<RangeObj>();
        for (int64_t i = 0; i < r.length(); ++i)
          tbs.push_back(r.at(i));
      } else if (l.kind() == ValueKind::List || l.kind() == ValueKind::Tuple) {
        for (auto &x : l.as<ListObj>().items) {
          if (!x.isInt())
            fail(locs[0], DiagId::err_dsl, {"`tb_list` must hold ints, got " + typeName(x)});
          tbs.push_back(x.asInt());
        }
      } else
        fail(locs[0], DiagId::err_dsl, {"`tb_list` must be a list of ints, got " + typeName(l)});
      p.barrier(std::get<LegacyRank>(h).rank, tbs);
      return Value();
    }
    const legacy::Ref &self_ = std::get<legacy::Ref>(h);
    switch (id) {
    case MethodId::ChunkRef_put:
      return refValue(p.put(self_, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), CT(4, ChanType::Memory)));
    case MethodId::ChunkRef_put_packet: {
      bool packetSrc = false;
      if (!a[4].isNone()) {
        if (a[4].kind() != ValueKind::Enum || a[4].enumId() != EnumId::DataFormat)
          fail(locs[4], DiagId::err_dsl, {"`src_format` must be a DataFormat, got " + typeName(a[4])});
        packetSrc = a[4].enumMember() == 1;
      }
      return refValue(p.putPacket(self_, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), packetSrc,
                                  CT(5, ChanType::Memory), toBuf(*this, a[6], "temp_buffer", locs[6]),
                                  I64(7, "temp_buffer_index")));
    }
    case MethodId::ChunkRef_get:
      p.get(self_, I(0, "src"), B(1), I64(2, "index"), I64(3, "recvtb"), CT(4, ChanType::Memory));
      return Value();
    case MethodId::ChunkRef_signal:
      p.signal(self_, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), CT(4, ChanType::Memory));
      return Value();
    case MethodId::ChunkRef_flush:
      p.flush(self_, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), CT(4, ChanType::Port));
      return Value();
    case MethodId::ChunkRef_wait:
      p.wait(self_, I(0, "src"), B(1), I64(2, "index"), I64(3, "recvtb"), CT(4, ChanType::Memory));
      return Value();
    case MethodId::ChunkRef_copy:
      return optRef(p.copy(self_, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), false));
    case MethodId::ChunkRef_copy_packet:
      return optRef(p.copy(self_, I(0, "dst"), B(1), I64(2, "index"), I64(3, "sendtb"), true));
    case MethodId::ChunkRef_reduce:
      return refValue(p.reduce(self_, toRef(*this, a[0], "other_chunkref", locs[0]), I64(1, "recvtb"),
                               toChan(*this, a[2], ChanType::Memory, "channel_type", locs[2]), false));
    case MethodId::ChunkRef_reduce_packet:
      return refValue(p.reduce(self_, toRef(*this, a[0], "other_chunkref", locs[0]), I64(1, "recvtb"),
                               ChanType::Memory, true));
    case MethodId::ChunkRef_group_load_reduce: {
      if (a[0].kind() != ValueKind::List && a[0].kind() != ValueKind::Tuple)
        fail(locs[0], DiagId::err_dsl, {"`other_chunkrefs` must be a list of ChunkRefs, got " + typeName(a[0])});
      std::vector<legacy::Ref> others;
      for (auto &x : a[0].as<ListObj>().items)
        others.push_back(toRef(*this, x, "other_chunkrefs", locs[0]));
      return refValue(p.groupLoadReduce(self_, others, I64(1, "recvtb"), CT(2, ChanType::Nvls)));
    }
    case MethodId::ChunkRef_group_store: {
      std::vector<int> dsts;
      const Value &l = a[0];
      if (l.kind() == ValueKind::Range) {
        auto &r = l.as<RangeObj>();
        for (int64_t i = 0; i < r.length(); ++i)
          dsts.push_back(int(r.at(i)));
      } else if (l.kind() == ValueKind::List || l.kind() == ValueKind::Tuple) {
        for (auto &x : l.as<ListObj>().items)
          dsts.push_back(toI(*this, x, "dsts", locs[0]));
      } else
        fail(locs[0], DiagId::err_dsl, {"`dsts` must be a list of ranks, got " + typeName(l)});
      p.groupStore(self_, dsts, I64(1, "index"), B(2), I64(3, "sendtb"), CT(4, ChanType::Nvls));
      return Value();
    }
    case MethodId::ChunkRef_split: {
      std::vector<Value> out;
      for (auto &r : p.split(self_, I64(0, "num")))
        out.push_back(refValue(r));
      return makeList(std::move(out));
    }
    case MethodId::ChunkRef_group:
      return refValue(p.group(self_, toRef(*this, a[0], "other", locs[0])));
    default: break;
    }
  } catch (const legacy::LegacyError &e) {
    failDsl(loc, e.what());
  }
  fail(loc, DiagId::err_not_callable);
}

} // namespace msccl::elab
