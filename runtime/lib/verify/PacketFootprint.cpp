//===- PacketFootprint.cpp - Scratch used both as packets and as plain data -----------------===//
//
// Consumes the flattened plan (every op's resolved entries); produces a Plan finding for each
// rank whose scratch holds packets and plain data in overlapping bytes. An LL packet entry of
// scratch chunks [k, k + s) lies in the bytes of plain chunks [2k, 2k + 2s) (a packet carries its
// payload and a flag per word: twice the payload, plan#7.2), while the verifier's packet and
// plain views of scratch are separate: without this check a program that writes packets to
// scratch chunk 0 and plain data to chunk 1 verifies and then reads torn packets on a GPU (the
// executors deadlock on them). docs/language.md, "Packets (LL)": do not use nearby scratch chunks
// both ways. Reported at the plain op, the packet op as a note.
//
//===------------------------------------------------------------------------------------===//
#include "PlanVerifyInternal.h"

namespace msccl::verify::detail {
using namespace msccl::plan;

void Verifier::checkPacketFootprints() {
  struct Use {
    uint64_t lo, hi; // plain units of the rank's scratch
    bool packet;
    uint32_t op;
  };
  // Plans without packet ops (most) cost one pass over the op types, no entry resolution.
  bool anyPacket = false;
  for (const TbRun &tb : tbs_)
    for (const FlatOp &fo : tb.ops)
      anyPacket = anyPacket || isPacketOp(fo.op->type);
  if (!anyPacket)
    return;
  std::vector<std::vector<Use>> uses(n_);
  for (const TbRun &tb : tbs_)
    for (const FlatOp &fo : tb.ops) {
      const Op &op = *fo.op;
      const ChannelType ct = op.channelType.value_or(ChannelType::None);
      for (bool isSrc : {true, false}) {
        const auto &side = isSrc ? op.src : op.dst;
        for (size_t k = 0; k < side.size(); ++k) {
          Ent e;
          if (!resolveEntry(tb, op, side[k], e) || e.type != BufferType::Scratch || e.hi <= e.lo)
            continue;
          const bool packet = entryIsPacket(op.type, ct, isSrc, k);
          const Use u{packet ? 2 * e.lo : e.lo, packet ? 2 * e.hi : e.hi, packet, fo.id};
          if (e.sw && e.members) {
            for (uint32_t m : *e.members)
              if (m < n_)
                uses[m].push_back(u);
          } else if (e.rank < n_) {
            uses[e.rank].push_back(u);
          }
        }
      }
    }
  for (uint32_t r = 0; r < n_; ++r) {
    auto &v = uses[r];
    std::sort(v.begin(), v.end(), [](const Use &a, const Use &b) { return a.lo < b.lo; });
    // Sweep: the furthest-reaching packet and plain use so far; an overlap of the two kinds is
    // reported once per rank.
    const Use *packetReach = nullptr, *plainReach = nullptr;
    for (const Use &u : v) {
      const Use *other = u.packet ? plainReach : packetReach;
      if (other && other->hi > u.lo) {
        const Use &plainUse = u.packet ? *other : u, &packetUse = u.packet ? u : *other;
        auto chunks = [&](uint64_t lo, uint64_t hi) {
          return "[" + std::to_string(lo / U_) + ", " + std::to_string((hi + U_ - 1) / U_) + ")";
        };
        fail(FindingKind::Plan, opRefs_[plainUse.op].path,
             opText(plainUse.op, opPtr_[plainUse.op]) + " uses rank " + std::to_string(r) + "'s scratch chunks " +
                 chunks(plainUse.lo, plainUse.hi) + " as plain data, but the packets of " +
                 opText(packetUse.op, opPtr_[packetUse.op]) + " (scratch chunks " +
                 chunks(packetUse.lo / 2, packetUse.hi / 2) + ") lie in the bytes of plain chunks " +
                 chunks(packetUse.lo, packetUse.hi) +
                 ": a packet chunk k takes the bytes of plain chunks 2k and 2k+1; put the plain data at chunk " +
                 std::to_string((packetUse.hi + U_ - 1) / U_) + " or later, or in a Buffer of its own",
             {ref(plainUse.op, 0), ref(packetUse.op, 0)});
        break;
      }
      const Use *&reach = u.packet ? packetReach : plainReach;
      if (!reach || u.hi > reach->hi)
        reach = &u;
    }
  }
}

} // namespace msccl::verify::detail
