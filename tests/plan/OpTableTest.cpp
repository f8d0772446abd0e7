// The op table (PlanEnums.def rows, plan/OpTable.h queries): its traits agree with the ops'
// JSON spellings and shapes, its operand roles give the packet addressing every executor uses
// and one form per local reduce (what fusion and the MSCCLPPLang reader rely on), and the
// queries are constant expressions.
#include "msccl/plan/OpTable.h"

#include <catch2/catch.hpp>

#include <string>

using namespace msccl::plan;

namespace {

std::string nameOf(OpType t) { return std::string(opName(t)); }

OpType opAt(unsigned i) { return static_cast<OpType>(i); }

} // namespace

// The queries are usable where a constant is needed (the kernel relies on it).
static_assert(isPacketOp(OpType::PutPackets) && !isPacketOp(OpType::Put));
static_assert(honoursPipeline(OpType::Copy) && !honoursPipeline(OpType::CopyPackets));
static_assert(opRow(OpType::Get).dst.min == oprole::PerOther);

TEST_CASE("op table traits agree with spellings and shapes", "[optable]") {
  for (unsigned i = 0; i < kNumOpTypes; ++i) {
    const OpType t = opAt(i);
    const std::string n = nameOf(t);
    const OpShape shape = opShape(t);
    INFO("op " << n);
    CHECK(isPacketOp(t) == (n.find("pkt") != std::string::npos));
    CHECK(isSwitchOp(t) == (n.rfind("gl", 0) == 0 || n.rfind("gs", 0) == 0));
    CHECK(opHas(t, optrait::Data) == (shape == OpShape::Data || shape == OpShape::GroupLoadReduce));
    CHECK(isChannelSyncOp(t) == (shape == OpShape::Sync));
    CHECK(opHas(t, optrait::Sem) == (shape == OpShape::Sem));
    CHECK(opHas(t, optrait::Relaxed) == (n.rfind("rlx", 0) == 0));
    // Packet ops run whole regions; only plain data ops honour pipeline windows.
    if (honoursPipeline(t))
      CHECK((opHas(t, optrait::Data) && !isPacketOp(t)));
    // Every data op names at least one entry on each side; no other op has entries.
    const OpRow row = opRow(t);
    if (opHas(t, optrait::Data)) {
      CHECK(row.src.minGiven(1) >= 1);
      CHECK(row.dst.minGiven(1) >= 1);
      CHECK(row.length != OpLength::NoLength);
    } else {
      CHECK(row.src.min == 0);
      CHECK(row.dst.min == 0);
    }
    // Only signals, waits and flushes are channel sync ops; they accept every channel kind.
    if (isChannelSyncOp(t)) {
      CHECK(opAcceptsChannel(t, ChannelType::Memory));
      CHECK(opAcceptsChannel(t, ChannelType::Port));
      CHECK(opAcceptsChannel(t, ChannelType::Switch));
    }
    // The put family writes remote entries; switch ops use switch channels only.
    if (isPutFamily(t))
      CHECK((row.dst.first & oprole::LocMask) == oprole::R);
    if (isSwitchOp(t)) {
      CHECK(opAcceptsChannel(t, ChannelType::Switch));
      CHECK_FALSE(opAcceptsChannel(t, ChannelType::Memory));
    }
  }
}

TEST_CASE("op table families", "[optable]") {
  CHECK(isPutFamily(OpType::Put));
  CHECK(isPutFamily(OpType::ReadPutPackets));
  CHECK_FALSE(isPutFamily(OpType::Get));
  CHECK(isReduceFamily(OpType::ReadReduceSend));
  CHECK(isReduceFamily(OpType::ReduceCopySendPackets));
  CHECK_FALSE(isReduceFamily(OpType::MultiLoadReduceStore)); // a switch reduce
  CHECK(isPacketReduce(OpType::ReducePackets));
  CHECK_FALSE(isPacketReduce(OpType::MultiStorePackets));
  CHECK(isDataSyncOp(OpType::SemAcquire));
  CHECK(isDataSyncOp(OpType::RelaxedWait));
  CHECK_FALSE(isDataSyncOp(OpType::Barrier));
  CHECK(isProxyOp(OpType::PutPackets));
  CHECK_FALSE(isProxyOp(OpType::ReadPutPackets));
  CHECK(opHas(OpType::PutWithSignalAndFlush, optrait::Signals | optrait::Flushes));
  CHECK_FALSE(opHas(OpType::SemRelease, optrait::Signals)); // signals a channel's peer only
}

TEST_CASE("op table packet roles", "[optable]") {
  // ppkt reads plain data over memory channels and packetised data over port channels.
  CHECK_FALSE(entryIsPacket(OpType::PutPackets, ChannelType::Memory, true, 0));
  CHECK(entryIsPacket(OpType::PutPackets, ChannelType::Port, true, 0));
  CHECK(entryIsPacket(OpType::PutPackets, ChannelType::Memory, false, 3));
  // Packet reduces: src[0] is the plain accumulator, the other sources are packets.
  CHECK_FALSE(entryIsPacket(OpType::ReduceSendPackets, ChannelType::Memory, true, 0));
  CHECK(entryIsPacket(OpType::ReduceSendPackets, ChannelType::Memory, true, 5));
  // Packet reduces write the accumulator copy dst[0] as plain data; recpkt's dst[1] and
  // respkt's/recspkt's dst[1..] as packets; repkt's extra entries are ignored (as by MSCCL++).
  CHECK(entryAccess(OpType::ReducePackets, false, 0) == EntryAccess::Plain);
  CHECK(entryAccess(OpType::ReducePackets, false, 1) == EntryAccess::None);
  CHECK(entryAccess(OpType::ReduceCopyPackets, false, 1) == EntryAccess::Packets);
  CHECK(entryAccess(OpType::ReduceSendPackets, false, 3) == EntryAccess::Packets);
  CHECK(entryAccess(OpType::ReduceCopySendPackets, false, 0) == EntryAccess::Plain);
  CHECK(entryAccess(OpType::Copy, false, 0) == EntryAccess::Plain);
  // Of the entries an op touches, those the kernel's packet handler reads or writes as packets
  // (entryAccess) are exactly those the lowering bounds-checks as packets (entryIsPacket), for
  // every data op over memory channels. (Entries the op ignores may keep their packet role: the
  // lowering then checks them as packets, the larger footprint, and nothing touches them.)
  for (unsigned i = 0; i < kNumOpTypes; ++i) {
    const OpType t = opAt(i);
    if (!opHas(t, optrait::Data))
      continue;
    for (bool isSrc : {true, false})
      for (size_t k = 0; k < 6; ++k) {
        INFO(nameOf(t) << (isSrc ? " src" : " dst") << " entry " << k);
        if (entryAccess(t, isSrc, k) == EntryAccess::None)
          continue;
        CHECK((entryAccess(t, isSrc, k) == EntryAccess::Packets) == entryIsPacket(t, ChannelType::Memory, isSrc, k));
      }
  }
}

TEST_CASE("each local reduce has its own form, read from its roles", "[optable]") {
  unsigned reduces = 0;
  for (unsigned i = 0; i < kNumOpTypes; ++i) {
    const OpType t = opAt(i);
    if (!isReduceFamily(t))
      continue;
    ++reduces;
    INFO("op " << nameOf(t));
    CHECK(reduceOfForm(reduceForm(t)) == t); // no other reduce has its form
    CHECK(reduceForm(t).packet == isPacketReduce(t));
  }
  CHECK(reduces == 8);
  // What fusion and the MSCCLPPLang reader rely on.
  CHECK(reduceOfForm(ReduceForm{}) == OpType::Reduce);
  CHECK(reduceOfForm(ReduceForm{false, false, false, true}) == OpType::ReduceSend);
  CHECK(reduceOfForm(ReduceForm{true, false, false, false}) == OpType::ReadReduce);
  CHECK(reduceOfForm(ReduceForm{true, false, false, true}) == OpType::ReadReduceSend);
  CHECK(reduceOfForm(ReduceForm{false, true, false, false}) == OpType::ReducePackets);
  CHECK(reduceOfForm(ReduceForm{false, true, false, true}) == OpType::ReduceSendPackets);
  CHECK(reduceOfForm(ReduceForm{false, true, true, false}) == OpType::ReduceCopyPackets);
  CHECK(reduceOfForm(ReduceForm{false, true, true, true}) == OpType::ReduceCopySendPackets);
  CHECK_FALSE(reduceOfForm(ReduceForm{true, true, false, false})); // no reduce of peers' packets
  CHECK_FALSE(reduceOfForm(ReduceForm{false, false, true, false})); // no plain reduce writes packets
}
