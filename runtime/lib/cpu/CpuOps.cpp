//===- CpuOps.cpp - Semantics of every plan op on the simulated machine -------------------===//
//
// Consumes one lowered op of one threadblock plus the machine state; performs the op (or as
// much of it as possible) and says whether it completed, progressed or is blocked. Guarantees:
// every byte accessed is bounds-checked against its buffer (ExecutionError(Misuse) otherwise);
// a blocked op records what it waits for in TbState::blocked and changes nothing else.
// Safe to call from one thread per threadblock at once (the MPI executor): counters and
// semaphores are atomics (signal: release, or relaxed for rlxsignal; wait: acquire, or relaxed
// for rlxwait), LL packets are stored and loaded as whole 8-byte words (data + flag), barriers
// take Machine::barrierMutex, reduction scratch is per thread. With a PortTransport, port puts,
// signals and flushes are handed to it instead of storing into the peer's memory.
// Semantics: spec plan#8, with the intended meaning for the reference defects of plan#11
// (docs/runtime.md).
//
// Mirrors: mscclpp src/core/include/execution_kernel.hpp, include/mscclpp/packet_device.hpp.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/cpu/Machine.h"
#include "RaceCheck.h"

#include "msccl/runtime/Elements.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstring>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace msccl::runtime::cpu {
using namespace msccl::plan;

std::string opWhere(const TbState &tb, const LoweredOp &op) {
  return "rank " + std::to_string(tb.rank) + " tb " + std::to_string(tb.tb->id) + " op " +
         std::to_string(tb.pc) + " (" + std::string(opName(op.type)) + ") at " + op.path;
}

namespace {

thread_local std::vector<uint8_t> tlsReduceTmp; ///< Reduction scratch of this thread.

uint64_t loadWord(const uint8_t *p) {
  uint64_t v;
  if ((reinterpret_cast<uintptr_t>(p) & 7) == 0)
    return __atomic_load_n(reinterpret_cast<const uint64_t *>(p), __ATOMIC_RELAXED);
  std::memcpy(&v, p, 8);
  return v;
}
void storeWord(uint8_t *p, uint64_t v) {
  if ((reinterpret_cast<uintptr_t>(p) & 7) == 0)
    __atomic_store_n(reinterpret_cast<uint64_t *>(p), v, __ATOMIC_RELAXED);
  else
    std::memcpy(p, &v, 8);
}
uint64_t packWord(const uint8_t *data4, uint32_t flag) {
  uint8_t w[8];
  std::memcpy(w, data4, 4);
  std::memcpy(w + 4, &flag, 4);
  uint64_t v;
  std::memcpy(&v, w, 8);
  return v;
}

const char *bufferWord(BufferType t) {
  switch (t) {
  case BufferType::Input: return "input";
  case BufferType::Output: return "output";
  case BufferType::Scratch: return "scratch";
  }
  return "?";
}

struct Ctx {
  Machine &m;
  TbState &tb;
  const LoweredOp &op;

  [[noreturn]] void misuse(const std::string &msg) const {
    throw ExecutionError(ErrorKind::Misuse, opWhere(tb, op) + ": " + msg);
  }

  /// The window of entry `e` for the current pipeline iteration (whole range outside pipelines
  /// and for ops that do not honour windows).
  ByteRange window(const LoweredEntry &e) const {
    if (!op.inPipeline || !tb.inPipe || !honoursPipeline(op.type))
      return e.bytes;
    ByteRange w = pipelineWindow(e.bytes.length, tb.pipeIter, tb.unitSize);
    uint64_t delta = w.offset;
    const ChunkLayout &layout = m.lowered->gpus[tb.rank].layout;
    if (e.where.type == BufferType::Scratch && layout.reuseSlotBytes != 0)
      delta %= layout.reuseSlotBytes; // reuse-scratch slots wrap (plan#3.6)
    return {e.bytes.offset + delta, w.length};
  }

  /// Plain bytes [offset, offset+length) of buffer `type` of `rank`.
  enum Acc : uint8_t { NoAcc, Read, Write };
  /// Accesses of this op go through its port proxy lane (race checker).
  bool byProxy() const {
    return op.channelType == ChannelType::Port && isProxyOp(op.type);
  }

  /// Bounds-check bytes [offset, offset+length) of buffer `type` of `rank`; returns the offset
  /// from the start of that buffer's allocation (scratch: plus the launch's half).
  uint64_t checkedOffset(uint32_t rank, BufferType type, uint64_t offset, uint64_t length, const char *what) const {
    const RankState &rs = m.ranks[rank];
    uint64_t size = 0;
    switch (type) {
    case BufferType::Input: size = rs.inputBytes; break;
    case BufferType::Output: size = rs.outputBytes; break;
    case BufferType::Scratch: size = rs.scratchHalf; break;
    }
    if (offset > size || length > size - offset)
      misuse(std::string(what) + ": bytes [" + std::to_string(offset) + ", " + std::to_string(offset + length) +
             ") are outside rank " + std::to_string(rank) + "'s " + bufferWord(type) + " buffer (" +
             std::to_string(size) + " bytes)");
    return type == BufferType::Scratch ? rs.scratchOffset + offset : offset;
  }

  uint8_t *plain(uint32_t rank, BufferType type, uint64_t offset, uint64_t length, const char *what,
                 Acc acc = NoAcc) const {
    RankState &rs = m.ranks[rank];
    if (!rs.mapped)
      misuse(std::string(what) + ": rank " + std::to_string(rank) + "'s " + bufferWord(type) +
             " buffer is not mapped in rank " + std::to_string(tb.rank) +
             "'s process (rank " + std::to_string(rank) +
             " is on another node; memory and switch channels reach only ranks of the same node, use a port channel)");
    uint8_t *base = nullptr;
    switch (type) {
    case BufferType::Input: base = rs.input; break;
    case BufferType::Output: base = rs.output; break;
    case BufferType::Scratch: base = rs.scratch; break;
    }
    offset = checkedOffset(rank, type, offset, length, what);
    uint8_t *at = base ? base + offset : nullptr; // no pointer arithmetic on an empty buffer (offset 0)
    if (acc != NoAcc && m.race)
      m.race->access(tb, op, byProxy(), acc == Write, at, length, rank, type,
                     type == BufferType::Scratch ? offset - rs.scratchOffset : offset);
    return at;
  }

  /// Packet-format region of payload range [offset, offset+length): bytes [2*offset, 2*(offset+length)).
  uint8_t *packets(uint32_t rank, BufferType type, uint64_t offset, uint64_t length, const char *what) const {
    return plain(rank, type, 2 * offset, 2 * length, what);
  }

  /// "src_buff[j]" / "dst_buff[j]" for error messages, built on the stack: every op execution
  /// names its entries, and a std::string each (a heap allocation and its free) was a few
  /// percent of a small message's run.
  struct EntryName {
    char text[48]; // a side of at most 16 characters, "[", 20 digits, "]"
    const char *c_str() const { return text; }
    operator const char *() const { return text; }
  };
  static EntryName entryName(const char *side, size_t j) {
    EntryName n{};
    const size_t len = std::min<size_t>(std::strlen(side), 16);
    std::memcpy(n.text, side, len);
    n.text[len] = '[';
    char *end = std::to_chars(n.text + len + 1, n.text + sizeof n.text - 2, j).ptr; // 20 digits fit
    end[0] = ']';
    end[1] = 0;
    return n;
  }

  uint32_t ownerOf(const LoweredEntry &e) const { return e.where.kind == Location::Kind::Remote ? e.where.rank : tb.rank; }

  const std::vector<uint32_t> &members(const LoweredEntry &e) const {
    return m.resolved->gpus[tb.rank].switchChannels[e.where.switchChannel].ranks;
  }

  /// Plain bytes of entry `e` (window `w`); a dst_buff entry is written, a src_buff one read.
  uint8_t *plainEntry(const LoweredEntry &e, ByteRange w, const char *what) const {
    return plain(ownerOf(e), e.where.type, w.offset, w.length, what, std::strncmp(what, "dst", 3) == 0 ? Write : Read);
  }
  /// The same without telling the race checker (packet ops report their accesses when done).
  uint8_t *plainEntryUntracked(const LoweredEntry &e, ByteRange w, const char *what) const {
    return plain(ownerOf(e), e.where.type, w.offset, w.length, what);
  }

  ReduceOp reduceOp() const { return op.hasReduceOp ? op.reduceOp : m.reduceOp; }

  // --- Channels ---------------------------------------------------------------------------
  void signal(uint32_t channel) {
    ChannelType ct = op.channelType;
    if (ct != ChannelType::Memory && ct != ChannelType::Port)
      return; // switch/none: no-op (plan#8.1)
    const auto &list = ct == ChannelType::Memory ? m.resolved->gpus[tb.rank].memoryChannels
                                                 : m.resolved->gpus[tb.rank].portChannels;
    const ResolvedChannel &ch = list.at(channel);
    if (ch.peerChannel == kNoChannel)
      misuse("signal on " + std::string(channelTypeName(ct)) + " channel " + std::to_string(channel) + " to rank " +
             std::to_string(ch.peer) + ", which declares no partner channel");
    if (m.port && ct == ChannelType::Port) {
      m.port->signal(tb, ch.peer, ch.peerChannel);
      return;
    }
    RankState &peer = m.ranks[ch.peer];
    if (!peer.mapped)
      misuse("signal on memory channel " + std::to_string(channel) + " to rank " + std::to_string(ch.peer) +
             ", which is on another node (memory channels reach only ranks of the same node)");
    const bool relaxed = ct == ChannelType::Memory && op.type == OpType::RelaxedSignal;
    auto &words = ct == ChannelType::Memory ? peer.memSignals : peer.portSignals;
    words.add(ch.peerChannel, 1, relaxed ? __ATOMIC_RELAXED : __ATOMIC_RELEASE);
#ifdef __linux__
    if (m.wakeWaiters) { // shared futex: the waiter may be another process of the node
      // Ordered with the waiter's count (sleepOnSignal): either it sees the new value and does
      // not sleep, or this sees it counted and wakes it.
      __atomic_thread_fence(__ATOMIC_SEQ_CST);
      if (!peer.sleepers || __atomic_load_n(peer.sleepers, __ATOMIC_SEQ_CST) != 0)
        syscall(SYS_futex, reinterpret_cast<uint32_t *>(words.p + ch.peerChannel), FUTEX_WAKE, INT_MAX, nullptr,
                nullptr, 0);
    }
#endif
    if (m.race)
      m.race->signal(tb, ct, ch.peer, ch.peerChannel, ct == ChannelType::Port || op.type != OpType::RelaxedSignal,
                     ct == ChannelType::Memory && (op.type == OpType::PutWithSignal ||
                                                   op.type == OpType::PutWithSignalAndFlush));
  }

  Step waitAll() {
    ChannelType ct = op.channelType;
    if (ct != ChannelType::Memory && ct != ChannelType::Port)
      return Step::Done;
    RankState &rs = m.ranks[tb.rank];
    auto &sig = ct == ChannelType::Memory ? rs.memSignals : rs.portSignals;
    auto &wt = ct == ChannelType::Memory ? rs.memWaits : rs.portWaits;
    bool progressed = false;
    const int order = ct == ChannelType::Memory && op.type == OpType::RelaxedWait ? __ATOMIC_RELAXED : __ATOMIC_ACQUIRE;
    while (tb.cursor < op.channels.size()) {
      uint32_t c = op.channels[tb.cursor];
      uint64_t w = wt.load(c);
      if (sig.load(c, order) > w && wt.casIncrement(c, w)) {
        if (m.race)
          m.race->wait(tb, ct, c, ct == ChannelType::Port || op.type != OpType::RelaxedWait);
        tb.cursor++;
        progressed = true;
        continue;
      }
      tb.waitWord = reinterpret_cast<const uint32_t *>(sig.p + c); // low half (little endian)
      tb.waitValue = uint32_t(sig.load(c, __ATOMIC_RELAXED));
      tb.waitWoken = ct == ChannelType::Memory;
      tb.blocked.kind = BlockedOn::Kind::Signal;
      tb.blocked.channelType = ct;
      tb.blocked.id = c;
      return progressed ? Step::Progress : Step::Blocked;
    }
    return Step::Done;
  }

  // --- Plain data ---------------------------------------------------------------------------
  void copyBytes(uint8_t *dst, const uint8_t *src, uint64_t n) {
    if (n && dst != src)
      std::memmove(dst, src, n);
  }

  /// Reduce sources (pointers, each `len` bytes) into the first destination; copy to the rest.
  void reduceInto(const std::vector<const uint8_t *> &srcs, const std::vector<uint8_t *> &dsts, uint64_t len) {
    if (len == 0)
      return;
    uint8_t *d0 = dsts[0];
    bool overlap = false;
    for (size_t k = 1; k < srcs.size(); ++k)
      if (srcs[k] < d0 + len && d0 < srcs[k] + len)
        overlap = true;
    if (srcs[0] != d0 && srcs[0] < d0 + len && d0 < srcs[0] + len)
      overlap = true;
    uint8_t *acc = d0;
    if (overlap) {
      if (tlsReduceTmp.size() < len)
        tlsReduceTmp.resize(len);
      acc = tlsReduceTmp.data();
    }
    if (srcs.size() == 1)
      copyBytes(acc, srcs[0], len);
    else {
      reduceElements(acc, srcs[0], srcs[1], len, m.dataType, reduceOp());
      for (size_t k = 2; k < srcs.size(); ++k)
        reduceElements(acc, acc, srcs[k], len, m.dataType, reduceOp());
    }
    if (acc != d0)
      copyBytes(d0, acc, len);
    for (size_t k = 1; k < dsts.size(); ++k)
      copyBytes(dsts[k], d0, len);
  }

  Step put(bool withSignal) {
    const size_t n = op.dst.size();
    if (m.port && op.channelType == ChannelType::Port) {
      for (size_t i = 0; i < n; ++i) {
        ByteRange dw = window(op.dst[i]);
        ByteRange sw = window(op.src[i]);
        sw.length = dw.length;
        const LoweredEntry &de = op.dst[i];
        const EntryName what = entryName("dst_buff", i);
        uint64_t at = checkedOffset(ownerOf(de), de.where.type, dw.offset, dw.length, what.c_str());
        const uint8_t *s = plainEntry(op.src[i], sw, entryName("src_buff", i));
        m.port->put(tb, ownerOf(de), de.where.type, at, s, dw.length, nullptr);
        if (withSignal && i < op.channels.size())
          signal(op.channels[i]);
      }
      return Step::Done;
    }
    for (size_t i = 0; i < n; ++i) {
      ByteRange dw = window(op.dst[i]);
      ByteRange sw = window(op.src[i]);
      sw.length = dw.length;
      uint8_t *d = plainEntry(op.dst[i], dw, entryName("dst_buff", i));
      uint8_t *s = plainEntry(op.src[i], sw, entryName("src_buff", i));
      copyBytes(d, s, dw.length);
      if (withSignal && i < op.channels.size())
        signal(op.channels[i]);
    }
    return Step::Done;
  }

  Step get() {
    for (size_t i = 0; i < op.src.size(); ++i) {
      ByteRange sw = window(op.src[i]);
      ByteRange dw = window(op.dst[i]);
      dw.length = sw.length;
      uint8_t *s = plainEntry(op.src[i], sw, entryName("src_buff", i));
      uint8_t *d = plainEntry(op.dst[i], dw, entryName("dst_buff", i));
      copyBytes(d, s, sw.length);
    }
    return Step::Done;
  }

  Step copy() {
    ByteRange sw = window(op.src[0]);
    ByteRange dw = window(op.dst[0]);
    dw.length = sw.length;
    copyBytes(plainEntry(op.dst[0], dw, "dst_buff[0]"), plainEntry(op.src[0], sw, "src_buff[0]"), sw.length);
    return Step::Done;
  }

  /// re, res, rre, rres: sum of all src entries (local or remote) into dst[0], copied to the
  /// dst[1..] the row says the op writes (res's and rres's peers; re's extra entries are ignored,
  /// as MSCCL++'s REDUCE handler ignores them: plan::entryAccess).
  Step reduce() {
    ByteRange w0 = window(op.src[0]);
    const uint64_t len = w0.length;
    std::vector<const uint8_t *> srcs;
    for (size_t k = 0; k < op.src.size(); ++k) {
      ByteRange w = window(op.src[k]);
      w.length = len;
      srcs.push_back(plainEntry(op.src[k], w, entryName("src_buff", k)));
    }
    std::vector<uint8_t *> dsts;
    for (size_t k = 0; k < op.dst.size(); ++k) {
      if (entryAccess(op.type, false, k) == EntryAccess::None)
        continue;
      ByteRange w = window(op.dst[k]);
      w.length = len;
      dsts.push_back(plainEntry(op.dst[k], w, entryName("dst_buff", k)));
    }
    reduceInto(srcs, dsts, len);
    return Step::Done;
  }

  /// glres / glre: load-reduce over every member of the src switch channel; store to every
  /// member of the dst switch channel (glres) or to the local dst entry (glre).
  Step groupReduce() {
    const LoweredEntry &se = op.src[0];
    ByteRange sw = window(se);
    const uint64_t len = sw.length;
    std::vector<const uint8_t *> srcs;
    for (uint32_t r : members(se))
      srcs.push_back(plain(r, se.where.type, sw.offset, len, "src_buff[0] (switch member)", Read));
    std::vector<uint8_t *> dsts;
    const LoweredEntry &de = op.dst[0];
    ByteRange dw = window(de);
    if (de.where.kind == Location::Kind::Switch) {
      for (uint32_t r : members(de))
        dsts.push_back(plain(r, de.where.type, dw.offset, len, "dst_buff[0] (switch member)", Write));
    } else {
      dw.length = len;
      dsts.push_back(plainEntry(de, dw, "dst_buff[0]"));
    }
    reduceInto(srcs, dsts, len);
    return Step::Done;
  }

  Step groupStore() {
    ByteRange sw = window(op.src[0]);
    const uint8_t *s = plainEntry(op.src[0], sw, "src_buff[0]");
    const LoweredEntry &de = op.dst[0];
    ByteRange dw = window(de);
    for (uint32_t r : members(de))
      copyBytes(plain(r, de.where.type, dw.offset, sw.length, "dst_buff[0] (switch member)", Write), s, sw.length);
    return Step::Done;
  }

  // --- Packets ------------------------------------------------------------------------------
  uint64_t payload() const { return m.packetType == PacketType::LL16 ? 8 : 4; }
  uint64_t packetBytes() const { return 2 * payload(); }

  /// Packet i of `region`: its payload into `out` when every flag word carries this launch's
  /// flag, else false. Each 8-byte word (4 data bytes + flag) is loaded once, atomically, as a
  /// GPU thread loads an LL packet.
  bool readPacket(const uint8_t *region, uint64_t i, uint8_t *out) const {
    if (m.packetType == PacketType::LL16) {
      uint64_t w0 = loadWord(region + 16 * i), w1 = loadWord(region + 16 * i + 8);
      if (uint32_t(w0 >> 32) != m.flag || uint32_t(w1 >> 32) != m.flag)
        return false;
      uint32_t d0 = uint32_t(w0), d1 = uint32_t(w1);
      std::memcpy(out, &d0, 4);
      std::memcpy(out + 4, &d1, 4);
      return true;
    }
    uint64_t w = loadWord(region + 8 * i);
    if (uint32_t(w >> 32) != m.flag)
      return false;
    uint32_t d = uint32_t(w);
    std::memcpy(out, &d, 4);
    return true;
  }
  void writePacket(uint8_t *region, uint64_t i, const uint8_t *in) const {
    if (m.packetType == PacketType::LL16) {
      storeWord(region + 16 * i, packWord(in, m.flag));
      storeWord(region + 16 * i + 8, packWord(in + 4, m.flag));
    } else {
      storeWord(region + 8 * i, packWord(in, m.flag));
    }
  }

  uint64_t packetCount(uint64_t len) const {
    if (len % payload() != 0)
      misuse("payload length " + std::to_string(len) + " bytes is not a multiple of the " +
             std::string(packetTypeName(m.packetType)) + " payload (" + std::to_string(payload()) + " bytes)");
    return len / payload();
  }

  uint8_t *packetEntry(const LoweredEntry &e, uint64_t len, const char *what) const {
    return packets(ownerOf(e), e.where.type, e.bytes.offset, len, what);
  }

  void blockedOnPacket(const LoweredEntry &e, const char *side, size_t j, uint64_t i, uint64_t n) {
    tb.blocked.kind = BlockedOn::Kind::Packet;
    tb.blocked.entry = &e;
    tb.blocked.side = side;
    tb.blocked.entryIndex = j;
    tb.blocked.index = i;
    tb.blocked.count = n;
  }

  /// Race checker, when a packet op completes: the packets it consumed carry their producers'
  /// clocks (LL flags order each packet's payload), then its plain accesses are checked, then
  /// the packets it produced carry its clock (including its own plain reads). Which entries are
  /// packets, plain data or untouched comes from the op's row (plan::entryAccess); an entry's
  /// length is src_buff[0]'s, or its pair's for PairsBySrc ops (ppkt).
  void racePacketOp() {
    if (!m.race)
      return;
    const bool pairs = opRow(op.type).length == OpLength::PairsBySrc;
    auto len = [&](size_t i) { return op.src[pairs ? i : 0].bytes.length; };
    std::vector<std::pair<const uint8_t *, uint64_t>> in, out;
    auto pk = [&](std::vector<std::pair<const uint8_t *, uint64_t>> &v, const LoweredEntry &e, uint64_t n) {
      if (e.where.kind == Location::Kind::Switch) // every member's copy (gstorepkt)
        for (uint32_t r : members(e))
          v.emplace_back(packets(r, e.where.type, e.bytes.offset, n, "packets"), 2 * n);
      else
        v.emplace_back(packetEntry(e, n, "packets"), 2 * n);
    };
    for (size_t k = 0; k < op.src.size(); ++k)
      if (entryAccess(op.type, true, k) == EntryAccess::Packets)
        pk(in, op.src[k], len(k));
    for (size_t k = 0; k < op.dst.size(); ++k)
      if (entryAccess(op.type, false, k) == EntryAccess::Packets)
        pk(out, op.dst[k], len(k));
    for (auto &r : in)
      m.race->packetAcquire(tb, op, r.first, r.second);
    for (size_t k = 0; k < op.src.size(); ++k)
      if (entryAccess(op.type, true, k) == EntryAccess::Plain)
        plain(ownerOf(op.src[k]), op.src[k].where.type, op.src[k].bytes.offset, len(k), "plain", Read);
    for (size_t k = 0; k < op.dst.size(); ++k)
      if (entryAccess(op.type, false, k) == EntryAccess::Plain)
        plain(ownerOf(op.dst[k]), op.dst[k].where.type, op.dst[k].bytes.offset, len(k), "plain", Write);
    for (auto &r : out)
      m.race->packetRelease(tb, op, byProxy(), r.first, r.second);
  }

  /// cpkt / ppkt: plain sources -> packets (no waiting).
  Step toPackets() {
    const size_t n = op.type == OpType::CopyPackets ? 1 : op.dst.size();
    for (size_t i = 0; i < n; ++i) {
      uint64_t len = op.src[i].bytes.length;
      uint64_t cnt = packetCount(len);
      const uint8_t *s = plainEntryUntracked(op.src[i], op.src[i].bytes, entryName("src_buff", i));
      if (m.port && op.type == OpType::PutPackets && op.channelType == ChannelType::Port) {
        // Packetise into a staging copy the proxy sends (MSCCL++'s port ppkt stages too).
        const LoweredEntry &de = op.dst[i];
        const EntryName what = entryName("dst_buff", i);
        uint64_t at = checkedOffset(ownerOf(de), de.where.type, 2 * de.bytes.offset, 2 * len, what.c_str());
        std::vector<uint8_t> staging(2 * len);
        for (uint64_t k = 0; k < cnt; ++k)
          writePacket(staging.data(), k, s + k * payload());
        m.port->put(tb, ownerOf(de), de.where.type, at, staging.data(), staging.size(), &staging);
        continue;
      }
      uint8_t *d = packetEntry(op.dst[i], len, entryName("dst_buff", i));
      for (uint64_t k = 0; k < cnt; ++k)
        writePacket(d, k, s + k * payload());
    }
    racePacketOp();
    return Step::Done;
  }

  /// upkt, rppkt, gstorepkt: consume the packets of src[0] as they arrive.
  Step fromPackets() {
    const LoweredEntry &se = op.src[0];
    const uint64_t len = se.bytes.length;
    const uint64_t cnt = packetCount(len);
    const uint8_t *s = packetEntry(se, len, "src_buff[0]");
    std::vector<uint8_t *> outs;    // plain (upkt) or packet (rppkt, gstorepkt) destinations
    if (op.type == OpType::UnpackPackets) {
      ByteRange dw = op.dst[0].bytes;
      dw.length = len;
      outs.push_back(plainEntryUntracked(op.dst[0], dw, "dst_buff[0]"));
    } else if (op.type == OpType::ReadPutPackets) {
      for (size_t j = 0; j < op.dst.size(); ++j)
        outs.push_back(packetEntry(op.dst[j], len, entryName("dst_buff", j)));
    } else { // gstorepkt
      const LoweredEntry &de = op.dst[0];
      for (uint32_t r : members(de))
        outs.push_back(packets(r, de.where.type, de.bytes.offset, len, "dst_buff[0] (switch member)"));
    }
    bool progressed = false;
    uint8_t buf[8];
    while (tb.cursor < cnt) {
      uint64_t i = tb.cursor;
      if (!readPacket(s, i, buf)) {
        blockedOnPacket(se, "src_buff", 0, i, cnt);
        return progressed ? Step::Progress : Step::Blocked;
      }
      if (op.type == OpType::UnpackPackets)
        std::memcpy(outs[0] + i * payload(), buf, payload());
      else
        for (uint8_t *o : outs)
          writePacket(o, i, buf);
      tb.cursor++;
      progressed = true;
    }
    racePacketOp();
    return Step::Done;
  }

  /// repkt, recpkt, respkt, recspkt: d = (s1 op s2 op ...) op a, packet by packet.
  Step reducePackets() {
    const uint64_t len = op.src[0].bytes.length;
    const uint64_t cnt = packetCount(len);
    const uint8_t *a = plainEntryUntracked(op.src[0], op.src[0].bytes, "src_buff[0]");
    std::vector<const uint8_t *> pk;
    for (size_t j = 1; j < op.src.size(); ++j)
      pk.push_back(packetEntry(op.src[j], len, entryName("src_buff", j)));
    ByteRange dw = op.dst[0].bytes;
    dw.length = len;
    uint8_t *d = plainEntryUntracked(op.dst[0], dw, "dst_buff[0]");
    std::vector<uint8_t *> outPk; // packet destinations
    size_t firstRemote = 1;
    if (op.type == OpType::ReduceCopyPackets || op.type == OpType::ReduceCopySendPackets) {
      if (op.dst.size() < 2)
        misuse("needs a packet destination dst_buff[1]");
      outPk.push_back(packetEntry(op.dst[1], len, "dst_buff[1]"));
      firstRemote = 2;
    }
    if (op.type == OpType::ReduceSendPackets || op.type == OpType::ReduceCopySendPackets)
      for (size_t j = firstRemote; j < op.dst.size(); ++j)
        outPk.push_back(packetEntry(op.dst[j], len, entryName("dst_buff", j)));
    const uint64_t P = payload();
    uint8_t acc[8];
    std::vector<uint8_t> got(8 * pk.size());
    bool progressed = false;
    while (tb.cursor < cnt) {
      uint64_t i = tb.cursor;
      bool all = true;
      for (size_t j = 0; j < pk.size() && all; ++j)
        if (!readPacket(pk[j], i, got.data() + 8 * j)) {
          blockedOnPacket(op.src[j + 1], "src_buff", j + 1, i, cnt);
          all = false;
        }
      if (!all)
        return progressed ? Step::Progress : Step::Blocked;
      if (pk.empty()) {
        std::memcpy(acc, a + i * P, P);
      } else {
        std::memcpy(acc, got.data(), P);
        for (size_t j = 1; j < pk.size(); ++j)
          reduceElements(acc, acc, got.data() + 8 * j, P, m.dataType, reduceOp());
        reduceElements(acc, acc, a + i * P, P, m.dataType, reduceOp());
      }
      std::memcpy(d + i * P, acc, P);
      for (uint8_t *o : outPk)
        writePacket(o, i, acc);
      tb.cursor++;
      progressed = true;
    }
    racePacketOp();
    return Step::Done;
  }

  // --- Barrier and semaphores -------------------------------------------------------------
  Step barrier() {
    if (op.numThreadblocks <= 1) {
      if (m.race)
        m.race->nop(tb);
      return Step::Done;
    }
    std::lock_guard<std::mutex> lock(m.barrierMutex);
    RankState &rs = m.ranks[tb.rank];
    if (op.barrierId >= rs.barriers.size())
      rs.barriers.resize(op.barrierId + 1);
    Barrier &b = rs.barriers[op.barrierId];
    if (!tb.arrived) {
      if (b.arrived == 0)
        b.expected = op.numThreadblocks;
      else if (b.expected != op.numThreadblocks)
        misuse("barrier " + std::to_string(op.barrierId) + " entered with num_threadblocks " +
               std::to_string(op.numThreadblocks) + " while other threadblocks entered it with " +
               std::to_string(b.expected));
      tb.arrived = true;
      tb.barrierGeneration = b.generation;
      if (m.race)
        m.race->barrierArrive(tb, op.barrierId, tb.barrierGeneration);
      if (++b.arrived == b.expected) {
        b.arrived = 0;
        b.generation++;
        if (m.race)
          m.race->barrierLeave(tb, op.barrierId, tb.barrierGeneration);
        return Step::Done;
      }
      tb.blocked.kind = BlockedOn::Kind::Barrier;
      tb.blocked.id = op.barrierId;
      return Step::Progress;
    }
    if (b.generation != tb.barrierGeneration) {
      if (m.race)
        m.race->barrierLeave(tb, op.barrierId, tb.barrierGeneration);
      return Step::Done;
    }
    tb.blocked.kind = BlockedOn::Kind::Barrier;
    tb.blocked.id = op.barrierId;
    return Step::Blocked;
  }

  /// Reference semantics: every thread j atomically decrements semaphore ids[j] at once; if the
  /// old value was <= 0 it spins until the value is back at >= the old value (a matching release).
  Step semAcquire() {
    RankState &rs = m.ranks[tb.rank];
    if (!tb.arrived) {
      tb.arrived = true;
      tb.semOld.clear();
      for (uint32_t id : op.semaphores)
        tb.semOld.push_back(rs.semaphores.add(id, -1, __ATOMIC_ACQ_REL));
      tb.cursor = 0;
    }
    bool progressed = false;
    while (tb.cursor < op.semaphores.size()) {
      uint32_t id = op.semaphores[tb.cursor];
      int64_t old = tb.semOld[tb.cursor];
      if (old > 0 || rs.semaphores.load(id) >= old) {
        tb.cursor++;
        progressed = true;
        continue;
      }
      tb.blocked.kind = BlockedOn::Kind::Semaphore;
      tb.blocked.id = id;
      return progressed ? Step::Progress : Step::Blocked;
    }
    if (m.race)
      for (uint32_t id : op.semaphores)
        m.race->semAcquire(tb, id);
    return Step::Done;
  }

  Step semRelease() {
    RankState &rs = m.ranks[tb.rank];
    for (uint32_t id : op.semaphores) {
      if (m.race)
        m.race->semRelease(tb, id);
      rs.semaphores.add(id, 1, __ATOMIC_RELEASE);
    }
    return Step::Done;
  }

  /// Port transfers of this tb have completed (always, without a PortTransport).
  bool flushed() {
    if (!m.port || op.channelType != ChannelType::Port)
      return true;
    if (m.port->flushed(tb))
      return true;
    tb.blocked.kind = BlockedOn::Kind::PortFlush;
    return false;
  }

  // Handlers named by the op table's Cpu column (PlanEnums.def) that are not shared above.
  Step nop() {
    if (m.race)
      m.race->nop(tb);
    return Step::Done;
  }
  Step signalAll() {
    for (uint32_t c : op.channels)
      signal(c);
    return Step::Done;
  }
  Step flush() { // one-process: port transfers complete when issued (docs/runtime.md)
    if (!flushed())
      return Step::Blocked;
    if (m.race)
      m.race->flush(tb);
    return Step::Done;
  }
  Step putPlain() { return put(false); }
  Step putSignal() { return put(true); }
  Step putFlush() {
    if (!tb.arrived) {
      put(true);
      tb.arrived = true;
    }
    if (!flushed())
      return Step::Blocked;
    if (m.race && op.channelType == ChannelType::Port)
      m.race->flush(tb);
    return Step::Done;
  }
  Step pipeline() { return Step::Done; } // handled by the scheduler

  /// Dispatch: one case per op table row, calling the row's Cpu handler.
  Step run() {
    switch (op.type) {
#define MSCCL_OP(Enum, Json, Shape, Executable, Channels, Traits, Src, Dst, Length, Cpu, ...)                      \
  case OpType::Enum:                                                                                               \
    return Cpu();
#include "msccl/plan/PlanEnums.def"
    }
    misuse("unknown op");
  }
};

} // namespace

Step stepOp(Machine &m, TbState &tb, const LoweredOp &op) {
  tb.waitWord = nullptr;
  Ctx c{m, tb, op};
  return c.run();
}

TbState makeTbState(const Machine &m, uint32_t r, uint32_t t, uint32_t actor) {
  TbState s;
  s.rank = r;
  s.tbIndex = t;
  s.tb = &m.lowered->gpus[r].threadblocks[t];
  s.actor = actor;
  s.done = s.tb->ops.empty();
  return s;
}

void finishOp(Machine &m, TbState &s) {
  s.cursor = 0;
  s.arrived = false;
  s.blocked = BlockedOn{};
  s.pc++;
  s.serial++;
  m.opsExecuted++;
}

void settleTb(Machine &m, TbState &s) { m.opsExecuted += s.settle(s.tb->ops); }

namespace {
/// The text of s.blocked, with the machine's counters as they are now.
std::string describeBlocked(const Machine &m, const TbState &s) {
  const BlockedOn &b = s.blocked;
  const RankState &rs = m.ranks[s.rank];
  switch (b.kind) {
  case BlockedOn::Kind::None: return "blocked";
  case BlockedOn::Kind::Signal: {
    const bool mem = b.channelType == ChannelType::Memory;
    const auto &list = mem ? m.resolved->gpus[s.rank].memoryChannels : m.resolved->gpus[s.rank].portChannels;
    const ResolvedChannel &ch = list[b.id];
    const std::string type(channelTypeName(b.channelType));
    const auto &sig = mem ? rs.memSignals : rs.portSignals;
    const auto &wt = mem ? rs.memWaits : rs.portWaits;
    return "waits for a signal on " + type + " channel " + std::to_string(b.id) + " from rank " +
           std::to_string(ch.peer) +
           (ch.peerChannel == kNoChannel ? std::string(" (the peer declares no partner channel)")
                                         : " (its " + type + " channel " + std::to_string(ch.peerChannel) + ")") +
           "; received " + std::to_string(sig.load(b.id)) + " signals, " + std::to_string(wt.load(b.id)) + " consumed";
  }
  case BlockedOn::Kind::Packet: {
    const LoweredEntry &e = *b.entry;
    const uint64_t pkt = m.packetType == PacketType::LL16 ? 16 : 8, at = 2 * e.bytes.offset + b.index * pkt;
    const uint32_t owner = e.where.kind == Location::Kind::Local ? s.rank : e.where.rank;
    return "waits for packet " + std::to_string(b.index) + " of " + std::to_string(b.count) + " (flag " +
           std::to_string(m.flag) + ") of " + b.side + "[" + std::to_string(b.entryIndex) + "] in rank " +
           std::to_string(owner) + "'s " + bufferWord(e.where.type) + " bytes [" + std::to_string(at) + ", " +
           std::to_string(at + pkt) + ") (packet region [" + std::to_string(2 * e.bytes.offset) + ", " +
           std::to_string(2 * e.bytes.end()) + "))";
  }
  case BlockedOn::Kind::Barrier: {
    const cpu::Barrier &bar = rs.barriers.at(b.id);
    return "waits at barrier " + std::to_string(b.id) + ": " + std::to_string(bar.arrived) + " of " +
           std::to_string(bar.expected) + " threadblocks arrived";
  }
  case BlockedOn::Kind::Semaphore:
    return "waits to acquire semaphore " + std::to_string(b.id) + " (value " + std::to_string(rs.semaphores.load(b.id)) +
           " after its decrement; needs a sem_release)";
  case BlockedOn::Kind::PortFlush: return m.port ? m.port->describePending(s) : "waits for its port transfers";
  }
  return "blocked";
}
} // namespace

std::string blockedLine(const Machine &m, const TbState &s) {
  const LoweredOp &op = s.tb->ops[s.pc];
  std::string d = opWhere(s, op);
  if (s.inPipe)
    d += " (pipeline iteration " + std::to_string(s.pipeIter) + " of " + std::to_string(s.pipeIters) + ")";
  d += ": " + describeBlocked(m, s);
  return d;
}

std::vector<std::string> balanceProblems(const Machine &m, uint32_t r) {
  std::vector<std::string> diags;
  const RankState &rs = m.ranks[r];
  for (size_t k = 0; k < rs.semaphores.size(); ++k)
    if (rs.semaphores.load(k) != rs.semaphoreInit[k])
      diags.push_back("rank " + std::to_string(r) + " semaphore " + std::to_string(k) + " (gpus[" + std::to_string(r) +
                      "].semaphores[" + std::to_string(k) + "]) ends the launch at " +
                      std::to_string(rs.semaphores.load(k)) + " instead of its init_value " +
                      std::to_string(rs.semaphoreInit[k]) + ": sem_acquire/sem_release are unbalanced");
  for (int type = 0; type < 2; ++type) {
    auto &sig = type == 0 ? rs.memSignals : rs.portSignals;
    auto &wt = type == 0 ? rs.memWaits : rs.portWaits;
    const auto &list = type == 0 ? m.resolved->gpus[r].memoryChannels : m.resolved->gpus[r].portChannels;
    for (size_t c = 0; c < sig.size(); ++c)
      if (sig.load(c) != wt.load(c))
        diags.push_back("rank " + std::to_string(r) + " " + (type == 0 ? "memory" : "port") + " channel " +
                        std::to_string(c) + " (to rank " + std::to_string(list[c].peer) + ") received " +
                        std::to_string(sig.load(c)) + " signal(s) but waited " + std::to_string(wt.load(c)) +
                        " time(s): signals and waits are unbalanced");
  }
  return diags;
}

} // namespace msccl::runtime::cpu
