//===- OpTable.h - What each plan op is: traits, channels, operand roles -----------------===//
//
// The queries over the op table in PlanEnums.def (one MSCCL_OP row per op). Everything the
// toolchain knows about an op kind without running it comes from here:
//   - traits (data/sync/sem/packet/proxy/switch/reduce/pipelined, ...): the compiler's fusion and
//     dependency predicates, the resolver's packet limits, the verifier's sync semantics;
//   - accepted channel types and the role of every src_buff/dst_buff entry (location, LL packets,
//     scratch-only, ignored, refused): the validator's shape checks (core/PlanValidate.cpp) and
//     the CUDA lowering's checks and packet addressing (cuda/OpShapes.cpp, Kernel.cu);
//   - the length rule of the handler (which entry sizes it relies on);
//   - the form of each local reduce, read from its roles (ReduceForm: remote or packet sources,
//     a local packet copy, sends): the op the compiler's fusion makes of a reduce and what it
//     merges, and how the MSCCLPPLang reader (LegacyPlan.cpp) reads an old reduce's operands.
// The four machines that execute ops expand their handler columns themselves (Cpu:
// cpu/CpuOps.cpp, Cuda: cuda/Kernel.cu, Verify: verify/PlanVerifyStep.cpp, Model:
// sim/Simulate.cpp); which entries an op reads and writes, as plain data or as LL packets, is
// entryAccess (and syncAccess for the compiler's sync inference). Every query is constexpr; all but reduceOfForm (a search of the table, host
// only) are usable in device code and compile to a table lookup.
//
// Mirrors: mscclpp src/core/include/execution_common.hpp (operation types) and the handlers of
// src/core/include/execution_kernel.hpp (which entries each op reads and writes).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <cstddef>
#include <cstdint>
#include <optional>

#if defined(__CUDACC__)
#define MSCCL_OPTABLE_HD __host__ __device__
#else
#define MSCCL_OPTABLE_HD
#endif

namespace msccl::plan {

/// Bit set of op traits (PlanEnums.def documents each).
using OpTraits = uint16_t;
namespace optrait {
constexpr OpTraits Data = 1u << 0, Sync = 1u << 1, Sem = 1u << 2, Signals = 1u << 3, Waits = 1u << 4,
                   Relaxed = 1u << 5, Flushes = 1u << 6, Packet = 1u << 7, Put = 1u << 8, Proxy = 1u << 9,
                   Switch = 1u << 10, Reduce = 1u << 11, Pipelined = 1u << 12;
} // namespace optrait

/// Bit set of channel types (bit = ChannelType value); 0 = the op takes any channel_type.
using ChannelMask = uint8_t;
namespace opchan {
constexpr ChannelMask ChAny = 0, ChMemory = 1u << unsigned(ChannelType::Memory),
                      ChPort = 1u << unsigned(ChannelType::Port), ChSwitch = 1u << unsigned(ChannelType::Switch);
} // namespace opchan

/// Role of one src_buff/dst_buff entry: a location (low two bits) and flags.
using EntryRole = uint8_t;
namespace oprole {
constexpr EntryRole A = 0, L = 1, R = 2, S = 3, LocMask = 3, ///< any, local, remote, switch
    Pkt = 1u << 2,     ///< addressed as LL packets (at 2 * offset)
    PortPkt = 1u << 3, ///< addressed as packets when the op's channel_type is port
    Scr = 1u << 4,     ///< must lie in a scratch buffer (the validator checks it)
    Ign = 1u << 5,     ///< the executors ignore the entry (no length requirement)
    Rej = 1u << 6;     ///< the CUDA lowering refuses the entry
/// `min` of an OpSide: one entry per entry of the other side (put family, get).
constexpr uint8_t PerOther = 0xff;
} // namespace oprole

/// The entries of one side (src_buff or dst_buff) of an op.
struct OpSide {
  uint8_t min = 0;            ///< Fewest entries (a count, or oprole::PerOther).
  EntryRole first = 0, second = 0, rest = 0;
  MSCCL_OPTABLE_HD constexpr EntryRole role(size_t k) const { return k == 0 ? first : k == 1 ? second : rest; }
  /// Fewest entries given the other side's count.
  MSCCL_OPTABLE_HD constexpr size_t minGiven(size_t other) const { return min == oprole::PerOther ? other : min; }
};

/// Which entry sizes the op's handler relies on (PlanEnums.def).
enum class OpLength : uint8_t { NoLength, BySrc0, PairsByDst, PairsBySrc };

/// One row of the op table, less the spellings (Plan.h) and the executors' handlers.
struct OpRow {
  OpTraits traits = 0;
  ChannelMask channels = 0;
  OpSide src, dst;
  OpLength length = OpLength::NoLength;
};

/// The row of op `t`.
MSCCL_OPTABLE_HD constexpr OpRow opRow(OpType t) {
  using namespace optrait;
  using namespace opchan;
  using namespace oprole;
#define MSCCL_OPTABLE_SIDE(Min, First, Second, Rest) OpSide{uint8_t(Min), EntryRole(First), EntryRole(Second), EntryRole(Rest)}
  switch (t) {
#define MSCCL_OP(Enum, Json, Shape, Executable, Channels, Traits, Src, Dst, Length, ...)                            \
  case OpType::Enum:                                                                                               \
    return OpRow{OpTraits(Traits), ChannelMask(Channels), MSCCL_OPTABLE_SIDE Src, MSCCL_OPTABLE_SIDE Dst,           \
                 OpLength::Length};
#include "msccl/plan/PlanEnums.def"
  }
#undef MSCCL_OPTABLE_SIDE
  return OpRow{};
}

/// Whether op `t` has any of the traits in `any`.
MSCCL_OPTABLE_HD constexpr bool opHas(OpType t, OpTraits any) { return (opRow(t).traits & any) != 0; }
/// Whether op `t` accepts channel type `ct` (ops with no channel requirement accept any).
MSCCL_OPTABLE_HD constexpr bool opAcceptsChannel(OpType t, ChannelType ct) {
  const ChannelMask m = opRow(t).channels;
  return m == opchan::ChAny || (m & (1u << unsigned(ct))) != 0;
}
/// Whether entry `k` of the src (`isSrc`) or dst side is addressed as LL packets, given the
/// op's channel type.
MSCCL_OPTABLE_HD constexpr bool entryIsPacket(OpType t, ChannelType ct, bool isSrc, size_t k) {
  const OpRow r = opRow(t);
  const EntryRole role = (isSrc ? r.src : r.dst).role(k);
  return (role & oprole::Pkt) || ((role & oprole::PortPkt) && ct == ChannelType::Port);
}

/// Whether entry `k` of the src (`isSrc`) or dst side of op `t`, when it is a local entry, is a
/// data access for the compiler's sync inference (passes/Dependency.cpp; the Python DSL's
/// local_data_access(sync_purpose=True)): local entries not addressed as packets, except that a
/// packet reduce counts its packet sources and not its accumulator (src_buff[0]). The op's reads
/// are src entries, its writes dst entries. Unlike the Python DSL, which gives its switch ops no
/// local accesses, the local dst of an unfused switch reduce (glre) and the local src of a switch
/// store (gstore) count: a threadblock that reduces a chunk and then multicasts it, or
/// load-reduces a chunk and then puts it to a peer, gets the barrier its threads need between
/// the two (the Python DSL's plans never have either pair: fusion makes them a glres).
MSCCL_OPTABLE_HD constexpr bool syncAccess(OpType t, bool isSrc, size_t k) {
  const OpRow r = opRow(t);
  if (!(r.traits & optrait::Data)) return false;
  const EntryRole role = (isSrc ? r.src : r.dst).role(k);
  if ((role & oprole::LocMask) != oprole::L && (role & oprole::LocMask) != oprole::A) return false;
  const bool packet = (role & oprole::Pkt) != 0;
  const bool packetReduce = (r.traits & optrait::Reduce) && (r.traits & optrait::Packet);
  return isSrc && packetReduce ? packet : !packet;
}

/// How op `t` touches entry `k` of its src side (`isSrc`: it reads the entry) or its dst side
/// (it writes it), read from the entry's role: not at all (Ign, or not a data op), as plain
/// data, or as LL packets (Pkt). PortPkt entries count as plain here: they are packets only in
/// the staging of a port transfer, which the executor does, not in the entry's memory. The
/// effects query of the CPU executor's race checker; the static verifier and the model read
/// the same roles through OpRow.
enum class EntryAccess : uint8_t { None, Plain, Packets };
MSCCL_OPTABLE_HD constexpr EntryAccess entryAccess(OpType t, bool isSrc, size_t k) {
  const OpRow r = opRow(t);
  if (!(r.traits & optrait::Data))
    return EntryAccess::None;
  const EntryRole role = (isSrc ? r.src : r.dst).role(k);
  if (role & oprole::Ign)
    return EntryAccess::None;
  return (role & oprole::Pkt) ? EntryAccess::Packets : EntryAccess::Plain;
}

/// Whether op type `t` reads and/or writes LL packets (cpkt, upkt, ppkt, rppkt, *pkt, gstorepkt).
MSCCL_OPTABLE_HD constexpr bool isPacketOp(OpType t) { return opHas(t, optrait::Packet); }
/// Whether `t` honours pipeline windows (docs/spec/plan-format.md, plan#8.6).
MSCCL_OPTABLE_HD constexpr bool honoursPipeline(OpType t) { return opHas(t, optrait::Pipelined); }
/// Channel signal/wait/flush (signal, wait, flush, rlxsignal, rlxwait).
MSCCL_OPTABLE_HD constexpr bool isChannelSyncOp(OpType t) { return opHas(t, optrait::Sync); }
/// Ops that order data through a channel or semaphore (channel sync and sem_acquire/release).
MSCCL_OPTABLE_HD constexpr bool isDataSyncOp(OpType t) { return opHas(t, optrait::Sync | optrait::Sem); }
/// NVLS switch-channel ops (glres, glre, gstore, gstorepkt).
MSCCL_OPTABLE_HD constexpr bool isSwitchOp(OpType t) { return opHas(t, optrait::Switch); }
/// The put family (put, ppkt, rppkt, pws, pwsf): one remote dst entry (and port channel) per peer.
MSCCL_OPTABLE_HD constexpr bool isPutFamily(OpType t) { return opHas(t, optrait::Put); }
/// The local reduce family (re, repkt, recpkt, res, respkt, recspkt, rre, rres): reduces into
/// src_buff[0]'s accumulator (switch reduces excluded).
MSCCL_OPTABLE_HD constexpr bool isReduceFamily(OpType t) {
  return opHas(t, optrait::Reduce) && !opHas(t, optrait::Switch);
}
/// The packet reduces (repkt, recpkt, respkt, recspkt).
MSCCL_OPTABLE_HD constexpr bool isPacketReduce(OpType t) { return isReduceFamily(t) && isPacketOp(t); }
/// Port transfers carried by the host proxy (put, pws, pwsf, ppkt) when channel_type is port.
MSCCL_OPTABLE_HD constexpr bool isProxyOp(OpType t) { return opHas(t, optrait::Proxy); }

/// What a local reduce op (isReduceFamily) does besides summing its sources into dst_buff[0],
/// read from its row: `remote`, its sources after src_buff[0] are peers' (src_buff[1] remote:
/// rre, rres); `packet`, they are LL packets (the Packet trait: repkt, recpkt, respkt,
/// recspkt); `copy`, it also writes the result as local packets (dst_buff[1] local packets:
/// recpkt, recspkt); `send`, it writes the result to peers (dst_buff[2..] remote: res, respkt,
/// recspkt, rres). The compiler's fusion turns a reduce into the op of another form (a reduce
/// followed by a put of its result sends it) and the MSCCLPPLang reader reads an old reduce's
/// operands by its form.
struct ReduceForm {
  bool remote = false, packet = false, copy = false, send = false;
  MSCCL_OPTABLE_HD constexpr bool operator==(const ReduceForm &o) const {
    return remote == o.remote && packet == o.packet && copy == o.copy && send == o.send;
  }
};
/// The form of op `t` (meaningful for the local reduce family).
MSCCL_OPTABLE_HD constexpr ReduceForm reduceForm(OpType t) {
  const OpRow r = opRow(t);
  return ReduceForm{(r.src.second & oprole::LocMask) == oprole::R, (r.traits & optrait::Packet) != 0,
                    (r.dst.second & (oprole::LocMask | oprole::Pkt)) == (oprole::L | oprole::Pkt),
                    (r.dst.rest & oprole::LocMask) == oprole::R};
}
/// The local reduce op of form `f`, or nullopt where the table has none (no packet reduce reads
/// peers' packets; no plain reduce writes packets). No two reduces share a form (OpTableTest).
constexpr std::optional<OpType> reduceOfForm(ReduceForm f) {
  for (unsigned i = 0; i < kNumOpTypes; ++i)
    if (isReduceFamily(OpType(i)) && reduceForm(OpType(i)) == f)
      return OpType(i);
  return std::nullopt;
}

} // namespace msccl::plan
