//===- SimData.cpp - Data ops of the replay: activities, demands and fair rates ----------===//
//
// Consumes a threadblock at a data op (SimModel.h); produces an activity whose byte demands on
// links, HBM, NICs and the threadblock's own cap carry the op, and recomputes every active
// activity's rate by progressive filling (max-min fairness: no resource exceeds its capacity)
// whenever the active set changes. The interval helpers track LL packet coverage.
//
//===------------------------------------------------------------------------------------===//
#include "SimModel.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace msccl::runtime::sim::detail {

void addInterval(std::map<uint64_t, uint64_t> &m, uint64_t b, uint64_t e) {
  if (b >= e)
    return;
  auto it = m.upper_bound(b);
  if (it != m.begin()) {
    auto p = std::prev(it);
    if (p->second >= b) {
      b = p->first;
      e = std::max(e, p->second);
      it = m.erase(p);
    }
  }
  while (it != m.end() && it->first <= e) {
    e = std::max(e, it->second);
    it = m.erase(it);
  }
  m[b] = e;
}

bool covered(const std::map<uint64_t, uint64_t> &m, uint64_t b, uint64_t e) {
  if (b >= e)
    return true;
  auto it = m.upper_bound(b);
  if (it == m.begin())
    return false;
  --it;
  return it->first <= b && it->second >= e;
}

void Sim::startData(TbState &s, const LoweredOp &op) {
  // A port put with signal whose entries share a channel (a fused chunk loop): MSCCL++'s
  // executor pushes one proxy trigger per entry (putWithSignal each), and a channel's triggers
  // are served in order (one queue pair), so each entry's signal lands when its own bytes have,
  // not when the op's last byte has: the fused loop pipelines across nodes as the unfused one
  // does. Modelled as one chain per channel of one activity per (src, dst) pair, in entry
  // order, each started when the one before it is through; the channels' chains run at once
  // and the threadblock continues after the last one ends. An op with one entry per channel is
  // one activity, as any other data op.
  std::vector<std::vector<size_t>> perChannel; // entry indexes per channel, in order
  if (op.channelType == ChannelType::Port &&
      (op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush) && op.dst.size() > 1 &&
      op.src.size() == op.dst.size() && op.channels.size() == op.dst.size()) {
    std::map<uint32_t, size_t> group;
    for (size_t i = 0; i < op.dst.size(); ++i) {
      auto [it, fresh] = group.emplace(op.channels[i], perChannel.size());
      if (fresh)
        perChannel.emplace_back();
      perChannel[it->second].push_back(i);
    }
    if (perChannel.size() == op.dst.size())
      perChannel.clear(); // one entry per channel
  }
  double startDelay = 0;
  if (perChannel.empty()) {
    Activity a = dataActivity(s, op, startDelay);
    startActivity(s, std::move(a), startDelay);
    return;
  }
  LoweredOp one = op;
  uint32_t rec = kNone;
  const uint32_t join = uint32_t(joins_.size());
  joins_.push_back(uint32_t(perChannel.size()));
  for (const std::vector<size_t> &entries : perChannel) {
    uint32_t prev = kNone;
    for (size_t i : entries) {
      one.src.assign(1, op.src[i]);
      one.dst.assign(1, op.dst[i]);
      one.channels.assign(1, op.channels[i]);
      double delay = 0;
      Activity a = dataActivity(s, one, delay);
      a.join = join;
      uint32_t id;
      if (rec == kNone) {
        startDelay = delay;
        id = startActivity(s, std::move(a), startDelay); // records the op instance
        rec = acts_[id].rec;
      } else {
        a.chained = true;
        a.rec = rec;
        id = addActivity(std::move(a));
        if (prev == kNone) // another channel's chain: starts with the first
          startAt(id, now_ + startDelay);
      }
      if (prev != kNone)
        acts_[prev].next = id;
      prev = id;
    }
  }
}

/// The activity of data op `op` on threadblock `s` and the delay before its bytes start moving.
Activity Sim::dataActivity(TbState &s, const LoweredOp &op, double &startDelay) {
  Activity a;
  a.tb = s.id;
  const bool packetOp = isPacketOp(op.type);
  const bool port = op.channelType == ChannelType::Port;
  startDelay = topo_.opUs * 1e-6;
  double tbBytes = 0; // the copy/reduce loop: one pass over the longest buffer entry (payload + flags)
  std::vector<Demand> &dem = a.demands; // few entries: linear merge
  auto add = [&](uint32_t r, double b) {
    for (Demand &d : dem)
      if (d.res == r) {
        d.bytes += b;
        return;
      }
    dem.push_back({r, b});
  };
  auto wire = [&](const LoweredEntry &e, uint64_t len) {
    bool pk = packetOp && (e.where.kind == Location::Kind::Switch || e.where.type == BufferType::Scratch);
    return double(len) * (pk ? 2.0 : 1.0);
  };
  const double eff = topo_.nvlsEfficiency;
  auto members = [&](const LoweredEntry &e) -> const std::vector<uint32_t> & {
    const ResolvedSwitch &sw = rp_.gpus[s.rank].switchChannels.at(e.where.switchChannel);
    if (!topo_.nvls)
      unsupported(s, "a switch channel (NVLS multimem) needs NVLS, which this topology lacks");
    for (uint32_t m : sw.ranks)
      if (node(m) != node(s.rank))
        unsupported(s, "switch channel members span NVLink domains (ranks " + std::to_string(s.rank) + " and " +
                           std::to_string(m) + ")");
    return sw.ranks;
  };
  // Remote endpoints: bytes from `from` to `to`.
  auto remote = [&](uint32_t from, uint32_t to, double b) {
    if (node(from) == node(to) && !topo_.fabric.empty()) {
      // A graph-shaped node: every link of the pair's route.
      const uint32_t g = topo_.gpusPerNode;
      for (uint32_t d : topo_.fabric.routes[(from % g) * g + to % g])
        add(fabricBase_ + d, b);
    } else if (node(from) == node(to)) {
      // Memory channels over NVLink, or PCIe peer-to-peer: the writer's link out, the reader's in.
      add(linkOut(from), b);
      add(linkIn(to), b);
    } else {
      if (!port)
        unsupported(s, "a memory channel between rank " + std::to_string(from) + " and rank " + std::to_string(to) +
                           " crosses nodes (memory channels need one NVLink domain; use port channels)");
      if (topo_.nicGBps <= 0)
        unsupported(s, "a port channel between nodes needs a network");
      add(nicOut(from), b);
      add(nicIn(to), b);
    }
  };
  double hopDelay = 0;
  bool remoteRead = false, switchRead = false;
  double readHop = 0; // the farthest peer read from
  for (const LoweredEntry &e : op.src) {
    ByteRange w = window(s, op, e);
    double b = wire(e, w.length);
    tbBytes = std::max(tbBytes, b);
    if (b == 0)
      continue;
    switch (e.where.kind) {
    case Location::Kind::Local: add(hbm(s.rank), b); break;
    case Location::Kind::Remote:
      remote(e.where.rank, s.rank, b);
      add(hbm(e.where.rank), b);
      remoteRead = true;
      readHop = std::max(readHop, hop(e.where.rank, s.rank));
      break;
    case Location::Kind::Switch:
      for (uint32_t m : members(e)) {
        add(linkOut(m), b / eff);
        add(hbm(m), b);
      }
      add(linkIn(s.rank), b / eff);
      switchRead = true;
      break;
    }
  }
  for (const LoweredEntry &e : op.dst) {
    ByteRange w = window(s, op, e);
    double b = wire(e, w.length);
    tbBytes = std::max(tbBytes, b);
    uint32_t target = s.rank;
    if (b != 0) {
      switch (e.where.kind) {
      case Location::Kind::Local: add(hbm(s.rank), b); break;
      case Location::Kind::Remote:
        remote(s.rank, e.where.rank, b);
        add(hbm(e.where.rank), b);
        target = e.where.rank;
        break;
      case Location::Kind::Switch:
        add(linkOut(s.rank), b / eff);
        for (uint32_t m : members(e)) {
          add(linkIn(m), b / eff);
          add(hbm(m), b);
        }
        break;
      }
    }
    if (packetOp && e.where.type == BufferType::Scratch) {
      auto pushPacket = [&](uint32_t r) {
        double d = r == s.rank ? 0 : hop(s.rank, r);
        a.packets.push_back({r, e.where.type, w.offset, w.length, d});
      };
      if (e.where.kind == Location::Kind::Switch) {
        for (uint32_t m : members(e))
          pushPacket(m);
      } else {
        pushPacket(target);
      }
    }
  }
  const double intra = topo_.intraLatencyUs * 1e-6;
  double writeHop = 0; // the farthest peer written to
  for (const LoweredEntry &e : op.dst)
    if (e.where.kind == Location::Kind::Remote)
      writeHop = std::max(writeHop, hop(s.rank, e.where.rank));
  if (remoteRead)
    startDelay += port ? 0 : readHop;
  if (switchRead)
    startDelay += 2 * intra; // multimem.ld_reduce: request to the switch and the reduced reply
  if (port) {
    startDelay += topo_.proxyUs * 1e-6;
    hopDelay = writeHop > 0 ? writeHop : intra;
    a.endDelay = hopDelay; // a port put completes (and its signal lands) one hop after the last byte
  } else {
    // Copy/reduce loop of the threadblock.
    if (tbBytes > 0)
      add(s.tbRes, tbBytes);
  }
  if (op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush)
    putSignals(s, op, a, port ? a.endDelay : (writeHop > 0 ? writeHop : intra)); // the signal follows the data
  return a;
}

/// The signals a put-with-signal sends, one per destination entry's channel, `delay` after its data.
void Sim::putSignals(const TbState &s, const LoweredOp &op, Activity &a, double delay) {
  const bool port = op.channelType == ChannelType::Port;
  const auto &list = port ? rp_.gpus[s.rank].portChannels : rp_.gpus[s.rank].memoryChannels;
  for (size_t i = 0; i < op.dst.size() && i < op.channels.size(); ++i) {
    const ResolvedChannel &ch = list.at(op.channels[i]);
    if (ch.peerChannel == kNoChannel)
      throw ExecutionError(ErrorKind::Misuse, where(s) + ": signal to rank " + std::to_string(ch.peer) +
                                                  ", which declares no partner channel");
    a.signals.push_back({ch.peer, ch.peerChannel});
  }
  a.signalType = op.channelType;
  a.signalDelay = delay;
}

/// Records the op's instance and queues the transfer to start `startDelay` from now; its weight
/// is its largest demand (the bytes of its busiest resource).
uint32_t Sim::startActivity(TbState &s, Activity &&a, double startDelay) {
  const uint32_t id = addActivity(std::move(a));
  Activity &x = acts_[id];
  x.rec = newRec(s, s.opStart);
  recs_[x.rec].transfer = x.weight > 0;
  startAt(id, now_ + startDelay);
  return id;
}

uint32_t Sim::addActivity(Activity &&a) {
  for (const Demand &d : a.demands)
    a.weight = std::max(a.weight, d.bytes);
  acts_.push_back(std::move(a));
  return uint32_t(acts_.size() - 1);
}

void Sim::startAt(uint32_t id, double t) {
  Event e{};
  e.t = t;
  e.kind = Ev::Start;
  e.a = id;
  push(e);
}

void Sim::recomputeRates() {
  std::vector<uint32_t> touched;
  for (uint32_t id : active_) {
    Activity &a = acts_[id];
    a.frozen = false;
    a.rate = 0;
    for (const Demand &d : a.demands) {
      Resource &r = res_[d.res];
      if (!r.touched) {
        r.touched = true;
        r.coef = r.used = 0;
        r.acts.clear();
        touched.push_back(d.res);
      }
      r.coef += d.bytes / a.weight;
      r.acts.push_back(id);
    }
  }
  size_t unfrozen = active_.size();
  while (unfrozen > 0) {
    double lambda = kInf;
    for (uint32_t r : touched) {
      const Resource &x = res_[r];
      if (x.coef > 1e-12)
        lambda = std::min(lambda, std::max(0.0, x.cap - x.used) / x.coef);
    }
    if (!(lambda < kInf))
      break;
    std::vector<uint32_t> sat;
    for (uint32_t r : touched) {
      const Resource &x = res_[r];
      if (x.coef > 1e-12 && std::max(0.0, x.cap - x.used) / x.coef <= lambda * (1 + 1e-9))
        sat.push_back(r);
    }
    for (uint32_t r : sat)
      for (uint32_t id : res_[r].acts) {
        Activity &a = acts_[id];
        if (a.frozen)
          continue;
        a.frozen = true;
        --unfrozen;
        a.rate = lambda / a.weight;
        for (const Demand &d : a.demands) {
          Resource &y = res_[d.res];
          y.used += a.rate * d.bytes;
          y.coef -= d.bytes / a.weight;
        }
      }
    for (uint32_t r : sat)
      res_[r].coef = 0; // saturated: nothing more fits
  }
  for (uint32_t r : touched)
    res_[r].touched = false;
}

} // namespace msccl::runtime::sim::detail
