//===- ChannelPairing.cpp - Channels whose creation order crossed between two ranks -------===//
// See ChannelPairing.h.
#include "msccl/driver/ChannelPairing.h"

#include "msccl/plan/OpTable.h"

#include <map>
#include <vector>

namespace msccl::driver {
namespace {

/// Per rank and channel type: signals each GPU-level channel sends and waits it performs.
struct Counts {
  std::vector<std::vector<uint64_t>> signals[2], waits[2]; // [memory, port][rank][channel]
};

void count(const ir::GpuIR &g, const ir::ThreadBlockIR &tb, const ir::Op &op, Counts &c) {
  for (const ir::Op &inner : op.ops)
    count(g, tb, inner, c);
  const bool signals = plan::opHas(op.kind, plan::optrait::Signals), waits = plan::opHas(op.kind, plan::optrait::Waits);
  if ((!signals && !waits) || (op.channelType != ir::ChannelType::Memory && op.channelType != ir::ChannelType::Port))
    return;
  const int t = op.channelType == ir::ChannelType::Memory ? 0 : 1;
  const bool sync = plan::opHas(op.kind, plan::optrait::Sync); // signal/wait: syncChannelIds; pws: channelIds
  std::vector<uint32_t> local = sync ? op.syncChannelIds.toList()
                                     : std::vector<uint32_t>(op.channelIds.begin(), op.channelIds.end());
  for (const ir::TbChannelList &l : tb.channels) {
    if (l.type != op.channelType)
      continue;
    for (uint32_t id : local)
      if (id < l.ids.size()) {
        auto &v = (signals ? c.signals : c.waits)[t][g.id];
        if (v.size() <= l.ids[id])
          v.resize(l.ids[id] + 1, 0);
        v[l.ids[id]]++;
      }
  }
}

uint64_t at(const std::vector<uint64_t> &v, size_t i) { return i < v.size() ? v[i] : 0; }

std::string ordinal(size_t k) {
  static const char *th[] = {"th", "st", "nd", "rd"};
  const size_t n = k + 1;
  return std::to_string(n) + (n % 100 / 10 == 1 || n % 10 > 3 ? th[0] : th[n % 10]);
}

} // namespace

std::optional<CrossedChannel> findCrossedChannel(const ir::ProgramIR &ir) {
  Counts c;
  for (int t = 0; t < 2; ++t) {
    c.signals[t].resize(ir.gpus.size());
    c.waits[t].resize(ir.gpus.size());
  }
  for (const ir::GpuIR &g : ir.gpus)
    for (const ir::ThreadBlockIR &tb : g.threadblocks)
      for (const ir::Op &op : ir::allOps(tb)) // packed and unpacked alike
        count(g, tb, op, c);
  for (int t = 0; t < 2; ++t)
    for (const ir::GpuIR &g : ir.gpus) {
      const std::vector<uint32_t> &to = t == 0 ? g.memoryConnectedTo : g.portConnectedTo;
      const std::vector<uint32_t> &src = t == 0 ? g.memoryChannelSource : g.portChannelSource;
      std::map<uint32_t, std::vector<size_t>> byPeer; // peer -> this rank's channels to it, in order
      for (size_t ch = 0; ch < to.size(); ++ch)
        byPeer[to[ch]].push_back(ch);
      for (auto &[peer, mine] : byPeer) {
        if (peer >= ir.gpus.size())
          continue;
        const ir::GpuIR &pg = ir.gpus[peer];
        const std::vector<uint32_t> &pto = t == 0 ? pg.memoryConnectedTo : pg.portConnectedTo;
        const std::vector<uint32_t> &psrc = t == 0 ? pg.memoryChannelSource : pg.portChannelSource;
        std::vector<size_t> theirs;
        for (size_t ch = 0; ch < pto.size(); ++ch)
          if (pto[ch] == g.id)
            theirs.push_back(ch);
        uint64_t sent = 0, waited = 0;
        for (size_t k = 0; k < mine.size() && k < theirs.size(); ++k) {
          sent += at(c.signals[t][g.id], mine[k]);
          waited += at(c.waits[t][peer], theirs[k]);
        }
        if (sent != waited)
          continue; // unbalanced in total: the pairing check's case, not a crossing
        for (size_t k = 0; k < mine.size() && k < theirs.size(); ++k) {
          const uint64_t s = at(c.signals[t][g.id], mine[k]), w = at(c.waits[t][peer], theirs[k]);
          if (s == w)
            continue;
          const char *cls = t == 0 ? "MemoryChannel" : "PortChannel";
          CrossedChannel out;
          out.sourceHere = mine[k] < src.size() ? src[mine[k]] : 0;
          out.sourcePeer = theirs[k] < psrc.size() ? psrc[theirs[k]] : 0;
          out.text = "channels pair in creation order: this " + std::string(cls) + " is rank " + std::to_string(g.id) +
                     "'s " + ordinal(k) + " channel to rank " + std::to_string(peer) + ", so it pairs with rank " +
                     std::to_string(peer) + "'s " + ordinal(k) + " channel to rank " + std::to_string(g.id) +
                     " (the next note); rank " + std::to_string(g.id) + " signals it " + std::to_string(s) +
                     " time(s) but rank " + std::to_string(peer) + " waits on its partner " + std::to_string(w) +
                     " time(s), while their totals agree: did the two ranks create their channels to each other in "
                     "different orders?";
          return out;
        }
      }
    }
  return std::nullopt;
}

} // namespace msccl::driver
