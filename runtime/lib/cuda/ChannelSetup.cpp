//===- ChannelSetup.cpp - Device state of one (plan, sizes, placement) ------------------===//
//
// See CudaContext.h. Allocation, channel wiring (memory channels to the paired peer
// channel's inbound counter, port channels to the proxy), semaphores, the co-residency check,
// and per-call binding of user buffers.
//
//===------------------------------------------------------------------------------------===//
#include "CudaContext.h"
#include "LaunchSchedule.h"

#include <cstring>
#include <map>
#include <sstream>

namespace msccl::cuda::detail {

using runtime::ErrorKind;
using runtime::ExecutionError;

constexpr uint32_t kFifoCapacity = 512;

Allocations::~Allocations() {
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) switch (it->kind) {
    case Kind::Device: api_.release(it->dev, it->ptr); break;
    case Kind::HostMapped: api_.releaseHostMapped(it->ptr); break;
    case Kind::Shareable: api_.releaseShareable(it->dev, it->ptr); break;
    case Kind::Imported: api_.closeImported(it->dev, it->ptr, it->bytes); break;
    case Kind::SharedHost: api_.releaseShareableHostMapped(it->ptr); break;
    }
}

void *Allocations::keep(int dev, void *ptr, Kind kind, size_t bytes) {
  blocks_.push_back({dev, ptr, kind, bytes});
  return ptr;
}

void *Allocations::device(int dev, size_t bytes) { return keep(dev, api_.allocate(dev, bytes), Kind::Device, bytes); }
void *Allocations::shareable(int dev, size_t bytes) {
  return keep(dev, api_.allocateShareable(dev, bytes), Kind::Shareable, bytes);
}
void *Allocations::imported(int dev, const std::vector<uint8_t> &handle, size_t bytes) {
  return keep(dev, api_.importMemory(dev, handle, bytes), Kind::Imported, bytes);
}
void *Allocations::shareableHostMapped(size_t bytes) {
  return keep(0, api_.allocateShareableHostMapped(bytes), Kind::SharedHost, bytes);
}
void *Allocations::importedHostMapped(const std::vector<uint8_t> &handle, size_t bytes) {
  return keep(0, api_.importHostMapped(handle, bytes), Kind::SharedHost, bytes);
}
void *Allocations::hostMapped(size_t bytes) { return keep(0, api_.allocateHostMapped(bytes), Kind::HostMapped, bytes); }

Context::~Context() {
  // Drain before stopping anything: a queued kernel may wait on port signals that only the
  // proxy can deliver (stopping the proxy first made it sit out the whole wait timeout).
  for (GpuState &g : gpus)
    if (g.stream) {
      try {
        api.synchronize(g.device, g.stream);
      } catch (const std::exception &) {
        // Teardown goes on.
      }
    }
  if (usesPort && !abandoned && proxy.running()) {
    try {
      drainPortProxy(*this, 5.0);
    } catch (const std::exception &) {
      // Teardown goes on; the proxy thread is stopped below either way.
    }
  }
  proxy.stop();
  for (GpuState &g : gpus) {
    api.destroyStream(g.device, g.stream);
    api.destroyEvent(g.device, g.done);
  }
  for (ProxyRank &p : proxyRanks)
    if (p.stream) api.destroyStream(p.device, p.stream);
}

namespace {

template <class T> void toDevice(DeviceApi &api, T *dst, const std::vector<T> &src) {
  if (!src.empty()) api.copy(dst, src.data(), src.size() * sizeof(T));
}

uint64_t opsPerLaunch(const LoweredRank &r) {
  uint64_t n = 0;
  for (const DevThreadblock &tb : r.threadblocks)
    for (uint32_t i = tb.opBegin; i < tb.opBegin + tb.nOps;) {
      const DevOp &op = r.ops[i];
      if (op.type == (uint8_t)plan::OpType::Pipeline) {
        n += 1 + uint64_t(op.nIterations) * op.nInner;
        i += 1 + op.nInner;
      } else {
        ++n;
        ++i;
      }
    }
  return n;
}

} // namespace

namespace {

/// Rank r's device state on its GPU. Scratch and inbound memory-channel counters are what other
/// ranks write: shareable memory when `shareable` (other processes import it).
void allocateRank(Context &c, const plan::Plan &plan, size_t r, bool shareable) {
  DeviceApi &api = c.api;
  auto toDevice = [&api](auto *dst, const auto &src) { detail::toDevice(api, dst, src); };
  Allocations &A = c.memory;
  RankState &s = c.ranks[r];
  const LoweredRank &L = s.lowered;
  const int d = s.device;
  auto shared = [&](size_t bytes) { return shareable ? A.shareable(d, bytes) : A.device(d, bytes); };
  c.opsPerLaunch += opsPerLaunch(L);
  s.scratch = L.scratchBytes || shareable ? static_cast<char *>(shared(L.scratchBytes)) : nullptr;
  s.ops = A.deviceArray<DevOp>(d, L.ops.size());
  toDevice(s.ops, L.ops);
  s.entries = A.deviceArray<DevEntry>(d, L.entries.size());
  toDevice(s.entries, L.entries);
  s.remoteBases = A.deviceArray<char *>(d, L.numRemoteBuffers);
  s.remoteScratchHalf = A.deviceArray<uint64_t>(d, L.numRemoteBuffers);
  toDevice(s.remoteScratchHalf, L.remoteScratchHalf);
  s.remoteTypes = A.deviceArray<uint8_t>(d, L.numRemoteBuffers);
  s.memoryChannels = A.deviceArray<DevMemoryChannel>(d, L.numMemoryChannels);
  s.portChannels = A.deviceArray<DevPortChannel>(d, L.numPortChannels);
  s.switchChannels = A.deviceArray<DevSwitchChannel>(d, L.numSwitchChannels);
  std::vector<int32_t> init;
  for (const plan::Semaphore &sem : plan.gpus[r].semaphores) init.push_back(sem.initValue);
  s.semaphores = A.deviceArray<int32_t>(d, init.size());
  toDevice(s.semaphores, init);
  s.barrierCounters = A.deviceArray<uint64_t>(d, kMaxBarriers);
  s.memoryInbound = static_cast<uint64_t *>(shared(sizeof(uint64_t) * std::max<size_t>(1, L.numMemoryChannels)));
  s.memoryExpected = A.deviceArray<uint64_t>(d, L.numMemoryChannels);
  s.sink = A.deviceArray<uint64_t>(d, 1);
  // The peers' proxies add to these: shareable host memory when they are other processes.
  const size_t portInboundBytes = sizeof(uint64_t) * (L.numPortChannels + 1);
  s.portInbound = static_cast<uint64_t *>(shareable ? A.shareableHostMapped(portInboundBytes) : A.hostMapped(portInboundBytes));
  s.portExpected = A.deviceArray<uint64_t>(d, L.numPortChannels);
  if (L.numPortChannels) {
    c.usesPort = true;
    s.fifo.slots = static_cast<DevProxyRequest *>(A.hostMapped(sizeof(DevProxyRequest) * kFifoCapacity));
    s.fifo.completed = static_cast<uint64_t *>(A.hostMapped(sizeof(uint64_t)));
    s.fifo.head = A.deviceArray<uint64_t>(d, 1);
    s.fifo.capacity = kFifoCapacity;
  }
  std::vector<uint8_t> types(s.remoteType.size());
  for (size_t g = 0; g < types.size(); ++g) types[g] = (uint8_t)s.remoteType[g];
  toDevice(s.remoteTypes, types);
}

} // namespace

void setupPortProxy(Context &c) {
  const size_t nr = c.ranks.size();
  c.proxyRanks.resize(nr);
  for (size_t r = 0; r < nr; ++r) {
    RankState &s = c.ranks[r];
    if (!s.local) continue; // served by its own process's proxy
    ProxyRank &p = c.proxyRanks[r];
    p.device = s.device;
    p.stream = c.api.createStream(s.device);
    p.slots = s.fifo.slots;
    p.completed = s.fifo.completed;
    p.capacity = s.fifo.capacity;
    const runtime::ResolvedGpu &rg = c.resolved.gpus[r];
    // A peer whose counters this process does not map (another node) gets null: the session
    // routes those signals through the rank's RemotePort.
    for (const runtime::ResolvedChannel &ch : rg.portChannels) {
      uint64_t *peerInbound = c.ranks[ch.peer].portInbound;
      p.flagTargets.push_back(ch.peerChannel == runtime::kNoChannel ? s.portInbound + s.lowered.numPortChannels
                              : peerInbound                         ? peerInbound + ch.peerChannel
                                                                    : nullptr);
    }
  }
}

namespace {

/// Local ranks grouped by device, one launch each; refuses a GPU whose threadblocks cannot be
/// co-resident.
void groupByDevice(Context &c, const plan::Plan &plan) {
  DeviceApi &api = c.api;
  Allocations &A = c.memory;
  std::map<int, std::vector<uint32_t>> byDevice;
  for (size_t r = 0; r < c.ranks.size(); ++r)
    if (c.ranks[r].local) byDevice[c.ranks[r].device].push_back(r);
  for (auto &[dev, ranks] : byDevice) {
    GpuState g;
    g.device = dev;
    g.ranks = ranks;
    std::vector<DevThreadblock> tbs;
    for (size_t slot = 0; slot < ranks.size(); ++slot)
      for (DevThreadblock tb : c.ranks[ranks[slot]].lowered.threadblocks) {
        tb.rankSlot = slot;
        tbs.push_back(tb);
      }
    g.numBlocks = tbs.size();
    const unsigned threads = api.threadsPerBlock(plan.numThreadsPerBlock);
    const int perSm = api.residentBlocksPerSm(dev, threads);
    const DeviceProperties prop = api.properties(dev);
    // Port copies between ranks of this GPU may run as a kernel: keep an SM for them.
    const bool reserve = c.usesPort && ranks.size() > 1;
    const uint64_t resident = coResidentBlockLimit(perSm, prop.multiProcessorCount, reserve);
    if (g.numBlocks > resident)
      throw ExecutionError(ErrorKind::Unsupported,
                           "cuda: " + std::to_string(ranks.size()) + " rank(s) on GPU " + std::to_string(dev) + " (" + prop.name +
                               ") need " + std::to_string(g.numBlocks) + " co-resident threadblocks of " + std::to_string(threads) +
                               " threads, but at most " + std::to_string(resident) + " (" + std::to_string(perSm) + " per SM x " +
                               std::to_string(prop.multiProcessorCount) + " SMs" +
                               (reserve ? ", one SM kept free for the port proxy's copies" : "") +
                               ") fit; threadblocks wait on each other, so the plan cannot run with these ranks on one GPU");
    g.cooperative = prop.cooperativeLaunch;
    g.threadblocks = A.deviceArray<DevThreadblock>(dev, tbs.size());
    detail::toDevice(api, g.threadblocks, tbs);
    g.rankContexts = A.deviceArray<DevRankContext>(dev, ranks.size());
    g.abort = A.deviceArray<DevAbort>(dev, 1);
    c.gpus.push_back(g); // owned by the context from here on (teardown destroys its stream and event)
    c.gpus.back().stream = api.createStream(dev);
    c.gpus.back().done = api.createEvent(dev);
  }
}

} // namespace

std::unique_ptr<Context> buildContext(DeviceApi &api, const plan::Plan &plan, std::vector<LoweredRank> lowered,
                                      const std::vector<int> &rankDevice, const std::vector<bool> *local) {
  auto ctx = std::make_unique<Context>(api);
  Context &c = *ctx;
  c.resolved = runtime::resolvePlan(plan);
  const size_t nr = plan.gpus.size();
  c.ranks.resize(nr);
  for (size_t r = 0; r < nr; ++r) {
    RankState &s = c.ranks[r];
    s.device = rankDevice[r];
    s.lowered = std::move(lowered[r]);
    s.local = !local || (*local)[r];
    for (const plan::RemoteBuffer &rb : plan.gpus[r].remoteBuffers) {
      s.remoteOwner.push_back(rb.rank);
      s.remoteType.push_back(rb.type);
    }
    if (s.local) allocateRank(c, plan, r, local != nullptr);
  }
  if (!local) {
    wireChannels(c);
    if (c.usesPort) setupPortProxy(c);
  }
  groupByDevice(c, plan);
  return ctx;
}

void wireChannels(Context &c) {
  // A signal adds to the paired peer channel's inbound counter.
  for (size_t r = 0; r < c.ranks.size(); ++r) {
    RankState &s = c.ranks[r];
    if (!s.local) continue;
    const runtime::ResolvedGpu &rg = c.resolved.gpus[r];
    std::vector<DevMemoryChannel> mem(rg.memoryChannels.size());
    for (size_t p = 0; p < mem.size(); ++p) {
      const runtime::ResolvedChannel &ch = rg.memoryChannels[p];
      mem[p].outbound = ch.peerChannel != runtime::kNoChannel ? c.ranks[ch.peer].memoryInbound + ch.peerChannel : s.sink;
      mem[p].inbound = s.memoryInbound + p;
      mem[p].expected = s.memoryExpected + p;
    }
    toDevice(c.api, s.memoryChannels, mem);
    std::vector<DevPortChannel> port(rg.portChannels.size());
    for (size_t p = 0; p < port.size(); ++p) {
      port[p].inbound = s.portInbound + p; // host-mapped: the same address on every device
      port[p].expected = s.portExpected + p;
    }
    toDevice(c.api, s.portChannels, port);
  }
}

void bindBuffers(Context &c, const std::vector<char *> &input, const std::vector<char *> &output) {
  const size_t nr = c.ranks.size();
  // Quiesce the proxy: once its thread is joined, its tables (rewritten below) are ours alone.
  // Every request of earlier launches was completed by drainPortProxy.
  c.proxy.stop();
  for (size_t r = 0; r < nr; ++r) {
    c.ranks[r].input = input[r];
    c.ranks[r].output = output[r];
  }
  auto bufferOf = [&](uint32_t rank, plan::BufferType t) -> char * {
    const RankState &s = c.ranks[rank];
    return t == plan::BufferType::Input ? s.input : t == plan::BufferType::Output ? s.output : s.scratch;
  };
  for (size_t r = 0; r < nr; ++r) {
    RankState &s = c.ranks[r];
    if (!s.local) continue;
    std::vector<char *> remote(s.remoteOwner.size());
    for (size_t g = 0; g < remote.size(); ++g) remote[g] = bufferOf(s.remoteOwner[g], s.remoteType[g]);
    toDevice(c.api, s.remoteBases, remote);
    std::vector<DevSwitchChannel> sw;
    const auto &switches = c.resolved.gpus[r].switchChannels;
    for (size_t k = 0; k < switches.size(); ++k) {
      const runtime::ResolvedSwitch &rs = switches[k];
      DevSwitchChannel d;
      d.nMembers = rs.ranks.size();
      d.bufferType = (uint32_t)rs.bufferType;
      for (size_t m = 0; m < rs.ranks.size() && m < kMaxSwitchMembers; ++m) {
        d.bases[m] = bufferOf(rs.ranks[m], rs.bufferType);
        d.scratchHalf[m] = s.lowered.switchScratchHalf.at(k).at(m); // the member's own half
      }
      sw.push_back(d);
    }
    toDevice(c.api, s.switchChannels, sw);
    if (c.usesPort) {
      ProxyRank &p = c.proxyRanks[r];
      p.local[0] = s.input;
      p.local[1] = s.output;
      p.local[2] = s.scratch;
      p.remoteBases = remote;
    }
  }
  for (GpuState &g : c.gpus) {
    std::vector<DevRankContext> rcs;
    for (uint32_t r : g.ranks) {
      const RankState &s = c.ranks[r];
      DevRankContext rc;
      rc.ops = s.ops;
      rc.entries = s.entries;
      rc.input = s.input;
      rc.output = s.output;
      rc.scratch = s.scratch;
      rc.scratchHalf = s.lowered.scratchHalf;
      rc.reuseSlotBytes = s.lowered.reuseSlotBytes;
      rc.remoteBases = s.remoteBases;
      rc.remoteScratchHalf = s.remoteScratchHalf;
      rc.numRemoteBuffers = s.lowered.numRemoteBuffers;
      rc.remoteTypes = s.remoteTypes;
      rc.memoryChannels = s.memoryChannels;
      rc.portChannels = s.portChannels;
      rc.switchChannels = s.switchChannels;
      rc.semaphores = s.semaphores;
      rc.barrierCounters = s.barrierCounters;
      rc.fifo = s.fifo;
      rc.rank = r;
      rcs.push_back(rc);
    }
    toDevice(c.api, g.rankContexts, rcs);
  }
  if (c.usesPort) c.proxy.start(c.api, &c.proxyRanks);
}

DevLaunch launchRecord(const Context &c, const GpuState &g, runtime::PacketType pt, plan::DataType dt, uint64_t timeoutNs) {
  DevLaunch L;
  L.threadblocks = g.threadblocks;
  L.ranks = g.rankContexts;
  L.abort = g.abort;
  L.timeoutNs = timeoutNs;
  L.flag = c.flag;
  L.packetType = (uint8_t)(pt == runtime::PacketType::LL16 ? PacketType::LL16 : PacketType::LL8);
  L.dataType = (uint8_t)dt;
  return L;
}

void advanceFlag(Context &c) {
  ++c.flag;
  if (c.flag == 0) ++c.flag;
}

std::vector<std::string> abandonedWaits(Context &c, double timeoutSeconds, DeviceStream via) {
  std::vector<std::string> diags;
  for (GpuState &g : c.gpus) {
    DevAbort a{};
    if (via) {
      c.api.copyAsync(g.device, &a, g.abort, sizeof a, via);
      c.api.synchronize(g.device, via);
    } else {
      c.api.copy(&a, g.abort, sizeof a);
    }
    if (a.aborted) {
      std::ostringstream os;
      os << "rank " << a.rank << " tb " << a.tbId << " op " << a.opIndex << " (" << plan::opName((plan::OpType)a.opType)
         << "): a wait did not complete within " << timeoutSeconds << " s";
      diags.push_back(os.str());
    }
  }
  return diags;
}

void drainPortProxy(Context &c, double timeoutSeconds) {
  if (!c.usesPort) return;
  std::vector<uint64_t> pushed(c.ranks.size(), 0);
  for (size_t r = 0; r < c.ranks.size(); ++r) {
    const RankState &s = c.ranks[r];
    if (!s.local || !s.fifo.head) continue;
    c.api.copy(&pushed[r], s.fifo.head, sizeof(uint64_t));
  }
  if (!c.proxy.waitIdle(pushed, timeoutSeconds))
    throw ExecutionError(ErrorKind::Deadlock, "cuda: the port channel proxy did not complete the kernels' requests within " +
                                                  std::to_string(timeoutSeconds) + " s");
  std::string e = c.proxy.syncCopies();
  if (!e.empty()) throw ExecutionError(ErrorKind::Backend, "cuda: port channel proxy: " + e);
}

} // namespace msccl::cuda::detail
