//===- CudaRankSession.cpp - The CUDA executor with one process per rank ----------------===//
//
// See CudaRankSession.h. Opening: lower the plan, build a context that holds only this rank
// (buildContext with `local`), allocate the rank's data buffer (input and output) as shareable
// memory, exchange the four export handles (data, scratch, memory- and port-channel inbound
// counters) with one allGather, map the peers this rank's kernels reach, wire the channels and bind the buffers;
// every step that can fail on one rank only is followed by an agreement round, so that all
// ranks throw together instead of some waiting for the others forever.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/cuda/CudaRankSession.h"

#include "CudaContext.h"
#include "EthernetPort.h"

#include "msccl/runtime/Collective.h"
#include "msccl/runtime/PlanValidate.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>

namespace msccl::cuda {

using runtime::Communicator;
using runtime::ErrorKind;
using runtime::ExecutionError;
using namespace detail;

namespace {

/// What each rank tells the others when the session opens: its four shareable regions.
struct SharedRegions {
  static constexpr size_t kHandleBytes = 128;
  enum Region { Data, Scratch, Inbound, PortInbound, Count };
  uint8_t handle[Count][kHandleBytes];
  uint32_t handleBytes[Count];
  uint64_t bytes[Count];
  uint64_t inputOffset, outputOffset; ///< in the data region
  uint32_t failed;                    ///< this rank could not set up (it throws its own error)
};

uint64_t align256(uint64_t v) { return (v + 255) / 256 * 256; }

/// How a launch of `execute` ended on a rank; the ranks agree on the worst (the largest).
enum Outcome : uint64_t { Ok = 0, Failed = 1, TimedOut = 2 };

} // namespace

struct CudaRankSession::Impl {
  Communicator &comm;
  const plan::Plan &plan;
  runtime::RunOptions options;
  runtime::DistributedOptions dist;
  runtime::RunReport rep;
  uint32_t me = 0, n = 0;
  int dev = 0;
  double timeoutSeconds = 60;
  std::unique_ptr<DeviceApi> api; // declared before ctx: destroyed after the context that uses it
  /// Port channels to ranks of other nodes (null when there are none): destroyed after the
  /// context, whose teardown may flush through it; it stops receiving before (~Impl).
  std::unique_ptr<EthernetPort> ethernet;
  std::unique_ptr<Context> ctx;
  char *data = nullptr, *input = nullptr, *output = nullptr;
  uint64_t dataBytes = 0;
  std::vector<uint8_t> hostIn, hostOut; ///< execute's input and output (sized there: calls need none)
  uint64_t launches = 0;

  Impl(Communicator &c, const plan::Plan &p, const runtime::RunOptions &o, const runtime::DistributedOptions &d,
       const CudaRankOptions &cuda)
      : comm(c), plan(p), options(o), dist(d) {
    me = uint32_t(comm.rank());
    n = uint32_t(plan.gpus.size());
    if (n != uint32_t(comm.size()))
      throw ExecutionError(ErrorKind::InvalidPlan, "the plan has " + std::to_string(n) + " ranks but the job has " +
                                                       std::to_string(comm.size()) + " processes");
    rep = runtime::startRun(plan, options);
    timeoutSeconds = dist.timeoutSeconds;
    if (const char *t = std::getenv("MSCCL_CUDA_TIMEOUT")) timeoutSeconds = std::atof(t);
    SharedRegions mine{};
    std::optional<ExecutionError> error;
    try {
      openLocal(cuda, mine);
    } catch (const ExecutionError &e) {
      error = e;
      mine.failed = 1;
    }
    auto all = comm.allGather(&mine, sizeof mine);
    std::vector<SharedRegions> regions(n);
    for (uint32_t r = 0; r < n; ++r) std::memcpy(&regions[r], all[r].data(), sizeof(SharedRegions));
    // Every rank throws when any rank failed to open: its own error, or which rank failed.
    if (error) throw *error;
    for (uint32_t r = 0; r < n; ++r)
      if (regions[r].failed)
        throw ExecutionError(ErrorKind::Backend, "rank " + std::to_string(r) + " could not open its session (see its report)");
    if (portsBetweenNodes()) // collective; every rank throws together when one cannot open it
      ethernet = std::make_unique<EthernetPort>(comm, *api, otherNodePeers(), timeoutSeconds);
    try {
      connect(regions);
    } catch (const ExecutionError &e) {
      error = ExecutionError(e.kind(), "rank " + std::to_string(me) + ": " + e.summary(), e.diagnostics());
    }
    const bool failedToMap = comm.allReduceMax(uint64_t(error ? 1 : 0)) != 0;
    api->sealShareable(); // every peer has mapped (or failed to map) what it needs of this rank
    if (failedToMap) {
      if (error) throw *error;
      throw ExecutionError(ErrorKind::Backend, "another rank could not map its peers' memory (see its report)");
    }
    const char *sync = std::getenv("MSCCL_CUDA_SYNC_CALLS");
    if (api->name() == "cuda" && !(sync && std::string_view(sync) == "1")) lastDone = api->createEvent(dev);
  }

  int chooseDevice(const CudaRankOptions &cuda) {
    const std::vector<int> &node = comm.nodeRanks();
    const int local = int(std::find(node.begin(), node.end(), int(me)) - node.begin());
    const int count = api->deviceCount();
    switch (cuda.placement) {
    case Placement::VirtualRanks: return 0;
    case Placement::Auto: return local % count;
    case Placement::OneRankPerGpu:
      if (local >= count)
        throw ExecutionError(ErrorKind::Unsupported, "cuda-gpus: " + std::to_string(node.size()) + " ranks on this node but " +
                                                         std::to_string(count) + " GPU(s) visible (use cuda, which shares GPUs)");
      return local;
    }
    return 0;
  }

  /// This rank's device, lowering, context and shareable memory; fills `mine`.
  void openLocal(const CudaRankOptions &cuda, SharedRegions &mine) {
    if (cuda.device == DeviceKind::Host || hostDeviceRequested()) {
      HostDeviceOptions h;
      h.deviceCount = int(comm.nodeRanks().size()); // one emulated device per rank of the node
      h.threadsPerBlock = cuda.hostThreadsPerBlock;
      api = makeHostDeviceApi(h);
    } else {
      try {
        api = makeCudaDeviceApi();
      } catch (const ExecutionError &e) {
        throw ExecutionError(ErrorKind::Unsupported, "cuda backend unavailable: " + e.summary());
      }
    }
    dev = chooseDevice(cuda);
    runtime::ValidateOptions vo;
    vo.allowGlre = true;
    vo.deviceLimits = false;
    if (!options.planValidated) runtime::validatePlan(plan, vo);
    const runtime::MessageSizes &ms = rep.sizes;
    std::vector<LoweredRank> lowered;
    try {
      lowered = lowerForDevice(plan, ms.inputBytes, ms.outputBytes, rep.reduceOp, plan::dataTypeBytes(options.dataType));
    } catch (const LoweringError &e) {
      throw ExecutionError(ErrorKind::InvalidPlan, std::string("cuda: ") + e.what());
    }
    std::vector<bool> local(n, false);
    local[me] = true;
    ctx = buildContext(*api, plan, std::move(lowered), std::vector<int>(n, dev), &local);
    checkLocality();
    // The data buffer: input and output as runCollective lays them out.
    const runtime::CollectiveKind kind = runtime::collectiveKind(plan.collective);
    if (rep.inPlace) {
      const runtime::InPlaceLayout l = runtime::inPlaceLayout(kind, me, ms.inputBytes, ms.outputBytes);
      dataBytes = l.bytes;
      mine.inputOffset = l.input;
      mine.outputOffset = l.output;
    } else {
      dataBytes = align256(ms.inputBytes) + ms.outputBytes;
      mine.inputOffset = 0;
      mine.outputOffset = align256(ms.inputBytes);
    }
    data = static_cast<char *>(ctx->memory.shareable(dev, dataBytes));
    input = data + mine.inputOffset;
    output = data + mine.outputOffset;
    const RankState &s = ctx->ranks[me];
    putHandle(mine, SharedRegions::Data, api->exportMemory(dev, data), dataBytes);
    putHandle(mine, SharedRegions::Scratch, api->exportMemory(dev, s.scratch), s.lowered.scratchBytes);
    putHandle(mine, SharedRegions::Inbound, api->exportMemory(dev, s.memoryInbound),
              sizeof(uint64_t) * std::max<size_t>(1, s.lowered.numMemoryChannels));
    putHandle(mine, SharedRegions::PortInbound, api->exportHostMapped(s.portInbound),
              sizeof(uint64_t) * (s.lowered.numPortChannels + 1));
  }

  static void putHandle(SharedRegions &mine, SharedRegions::Region region, const std::vector<uint8_t> &h, uint64_t bytes) {
    if (h.size() > SharedRegions::kHandleBytes)
      throw ExecutionError(ErrorKind::Backend, "an export handle of " + std::to_string(h.size()) + " bytes does not fit");
    std::memcpy(mine.handle[region], h.data(), h.size());
    mine.handleBytes[region] = uint32_t(h.size());
    mine.bytes[region] = bytes;
  }

  /// The ranks this rank's kernels reach: memory-channel peers, owners of remote buffers,
  /// switch-channel members.
  std::set<uint32_t> reachedPeers() const {
    std::set<uint32_t> peers;
    for (const plan::RemoteBuffer &rb : plan.gpus[me].remoteBuffers) peers.insert(rb.rank);
    const runtime::ResolvedGpu &rg = ctx->resolved.gpus[me];
    for (const runtime::ResolvedChannel &ch : rg.memoryChannels) peers.insert(ch.peer);
    for (const runtime::ResolvedChannel &ch : rg.portChannels) peers.insert(ch.peer);
    for (const runtime::ResolvedSwitch &sw : rg.switchChannels)
      for (uint32_t r : sw.ranks) peers.insert(r);
    peers.erase(me);
    return peers;
  }

  /// Whether any rank's port channels reach a rank of another node (the same answer on every
  /// rank: the plan and the node split are the job's).
  bool portsBetweenNodes() const {
    for (uint32_t r = 0; r < n; ++r)
      for (const runtime::ResolvedChannel &ch : ctx->resolved.gpus[r].portChannels)
        if (!comm.sameNode(int(r), int(ch.peer))) return true;
    return false;
  }

  /// The peers this rank's kernels reach on other nodes (by port channels only: checkLocality).
  std::vector<int> otherNodePeers() const {
    std::vector<int> peers;
    for (uint32_t p : reachedPeers())
      if (!comm.sameNode(int(me), int(p))) peers.push_back(int(p));
    return peers;
  }

  /// Peers on other nodes: through a memory or switch channel the plan is wrong there
  /// (InvalidPlan, as for the CPU); through port channels only they are reached host-staged
  /// (EthernetPort.h), or refused as Unsupported by a build without ZeroMQ (a caller such as
  /// the NCCL shim then falls back).
  void checkLocality() const {
    const runtime::ResolvedGpu &rg = ctx->resolved.gpus[me];
    std::set<uint32_t> memoryPeers;
    for (const runtime::ResolvedChannel &ch : rg.memoryChannels) memoryPeers.insert(ch.peer);
    for (const runtime::ResolvedSwitch &sw : rg.switchChannels)
      for (uint32_t r : sw.ranks) memoryPeers.insert(r);
    for (uint32_t p : reachedPeers()) {
      if (comm.sameNode(int(me), int(p))) continue;
      const std::string where = "rank " + std::to_string(p) + ", which is on another node (" + comm.describeNodes() + ")";
      if (memoryPeers.count(p))
        throw ExecutionError(ErrorKind::InvalidPlan, "rank " + std::to_string(me) + "'s memory or switch channels reach " +
                                                         where + ": those channels load and store their peer's memory");
      if (!runtime::EthernetTransport::available())
        throw ExecutionError(ErrorKind::Unsupported, "rank " + std::to_string(me) + "'s port channels reach " + where +
                                                         ": port channels between nodes are host-staged over TCP, which "
                                                         "needs msccl built with ZeroMQ (with CURVE)");
    }
  }

  /// Maps the peers' regions, wires the channels and binds the buffers.
  void connect(const std::vector<SharedRegions> &regions) {
    std::vector<char *> in(n, nullptr), out(n, nullptr);
    in[me] = input;
    out[me] = output;
    for (uint32_t p : reachedPeers()) {
      if (!comm.sameNode(int(me), int(p))) continue; // port channels only: through `ethernet`
      const SharedRegions &sr = regions[p];
      auto handle = [&](SharedRegions::Region region) {
        return std::vector<uint8_t>(sr.handle[region], sr.handle[region] + sr.handleBytes[region]);
      };
      auto map = [&](SharedRegions::Region region) {
        return static_cast<char *>(ctx->memory.imported(dev, handle(region), sr.bytes[region]));
      };
      char *peerData = map(SharedRegions::Data);
      RankState &s = ctx->ranks[p];
      in[p] = peerData + sr.inputOffset;
      out[p] = peerData + sr.outputOffset;
      s.scratch = map(SharedRegions::Scratch);
      s.memoryInbound = reinterpret_cast<uint64_t *>(map(SharedRegions::Inbound));
      s.portInbound = static_cast<uint64_t *>(
          ctx->memory.importedHostMapped(handle(SharedRegions::PortInbound), sr.bytes[SharedRegions::PortInbound]));
    }
    wireChannels(*ctx);
    if (ctx->usesPort) setupPortProxy(*ctx);
    if (ethernet) routeToOtherNodes();
    bindBuffers(*ctx, in, out); // starts the proxy
    if (ethernet) {
      const RankState &s = ctx->ranks[me];
      char *const buffers[3] = {input, output, s.scratch};
      const uint64_t bytes[3] = {rep.sizes.inputBytes, rep.sizes.outputBytes, s.lowered.scratchBytes};
      ethernet->receiveInto(dev, buffers, bytes, s.portInbound, s.lowered.numPortChannels);
    }
  }

  /// The proxy's requests to ranks of other nodes go through `ethernet`.
  void routeToOtherNodes() {
    ProxyRank &p = ctx->proxyRanks[me];
    const RankState &s = ctx->ranks[me];
    p.remote = ethernet.get();
    p.remoteBuffers.assign(s.remoteOwner.size(), RemoteTarget{});
    for (size_t b = 0; b < s.remoteOwner.size(); ++b)
      if (!comm.sameNode(int(me), int(s.remoteOwner[b]))) p.remoteBuffers[b] = {int32_t(s.remoteOwner[b]), uint32_t(s.remoteType[b])};
    const auto &channels = ctx->resolved.gpus[me].portChannels;
    p.remoteSignals.assign(channels.size(), RemoteTarget{});
    for (size_t c = 0; c < channels.size(); ++c)
      if (channels[c].peerChannel != runtime::kNoChannel && !comm.sameNode(int(me), int(channels[c].peer)))
        p.remoteSignals[c] = {int32_t(channels[c].peer), channels[c].peerChannel};
  }

  [[noreturn]] void giveUp(const std::string &what, const std::vector<std::string> &diags) {
    std::string msg = "msccl: rank " + std::to_string(me) + ": " + what + "; aborting the job\n";
    for (const std::string &d : diags) msg += "  " + d + "\n";
    std::cerr << msg << std::flush;
    comm.abort(1);
  }

  /// One launch of this rank, then the ranks agree on how every one ended.
  void launchOnce() {
    GpuState &g = ctx->gpus.at(0);
    uint64_t launch = launches + 1;
    Outcome outcome = Ok;
    std::string backendError;
    std::vector<std::string> diags;
    try {
      launch = enqueueLaunch(g.stream);
      api->synchronize(g.device, g.stream);
      diags = abandonedWaits(*ctx, timeoutSeconds);
      if (diags.empty()) drainPortProxy(*ctx, timeoutSeconds); // the proxy's last copies and signals
      if (ctx->usesPort && !ctx->proxy.error().empty())
        throw ExecutionError(ErrorKind::Misuse, "port channel proxy: " + ctx->proxy.error());
      checkEthernet();
      if (aborted.load()) {
        outcome = Failed;
        backendError = "the call was aborted (CudaRankSession::abort, ncclCommAbort)";
      } else if (!diags.empty()) {
        outcome = TimedOut;
      }
    } catch (const ExecutionError &e) {
      backendError = e.what();
      outcome = Failed;
    }
    uint64_t worst = outcome;
    const double grace = std::max(2.0, 0.5 * timeoutSeconds);
    if (!comm.allReduceMaxUntil(worst, runtime::monotonicSeconds() + timeoutSeconds + grace))
      giveUp("the other ranks did not finish launch " + std::to_string(launch) + " within the timeout (a rank died or hangs)",
             diags);
    if (worst == Ok) return;
    ctx->abandoned = true; // counters are not balanced any more: the communicator stops
    comm.setStopped("launch " + std::to_string(launch) + " of a CUDA session failed");
    if (outcome == TimedOut)
      throw ExecutionError(ErrorKind::Deadlock,
                           "rank " + std::to_string(me) + ": launch " + std::to_string(launch) +
                               " was abandoned because a device-side wait timed out",
                           diags);
    if (outcome == Failed)
      throw ExecutionError(aborted.load() ? ErrorKind::Misuse : ErrorKind::Backend, "rank " + std::to_string(me) + ": " + backendError);
    throw ExecutionError(worst == TimedOut ? ErrorKind::Deadlock : ErrorKind::Misuse,
                         "rank " + std::to_string(me) + ": finished launch " + std::to_string(launch) + ", but another rank " +
                             (worst == TimedOut ? "timed out" : "failed") + " (see its report)");
  }

  double execute(const std::function<void(uint8_t *)> &fill, unsigned warmup, unsigned iterations) {
    if (!comm.stopped().empty()) throw ExecutionError(ErrorKind::Deadlock, "not run: " + comm.stopped());
    hostIn.assign(rep.sizes.inputBytes, 0);
    hostOut.resize(rep.sizes.outputBytes);
    fill(hostIn.data());
    {
      std::vector<uint8_t> zeros(dataBytes, 0);
      api->copy(data, zeros.data(), dataBytes);
    }
    if (!hostIn.empty()) api->copy(input, hostIn.data(), hostIn.size());
    // No rank launches before every rank has reset its buffers (peers' kernels write into them).
    if (!comm.barrierUntil(runtime::monotonicSeconds() + timeoutSeconds + 2))
      giveUp("the other ranks did not start the run within the timeout", {});
    for (unsigned i = 0; i < warmup; ++i) launchOnce();
    auto t0 = std::chrono::steady_clock::now();
    for (unsigned i = 0; i < iterations; ++i) launchOnce();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!hostOut.empty()) api->copy(hostOut.data(), output, hostOut.size());
    return comm.allReduceMax(secs);
  }

  std::atomic<bool> aborted{false};

  /// RankSession::call: copy in, one launch, copy out; no round of the communicator (a call
  /// must not hang on the host where ncclCommAbort cannot reach it): as in DistributedSession,
  /// the plans' own handshakes order a peer's next launch after this rank's copies (the verifier
  /// proves launches back to back), and a failure is this rank's own: it throws here and stops
  /// the communicator; its peers' waits for it time out or are aborted on their side.
  /// On a GPU the call is stream-ordered (callAsync) unless MSCCL_CUDA_SYNC_CALLS=1; on the host
  /// implementation, whose streams are not the caller's, it is host-synchronous.
  void call(const void *send, size_t sendBytes, void *recv, size_t recvBytes, void *stream) {
    runtime::checkCallBytes(rep.sizes, sendBytes, recvBytes);
    if (aborted.load()) throw ExecutionError(ErrorKind::Misuse, "rank " + std::to_string(me) + ": this session was aborted");
    if (!comm.stopped().empty()) throw ExecutionError(ErrorKind::Misuse, "rank " + std::to_string(me) + ": not run: " + comm.stopped());
    if (lastDone) {
      callAsync(send, sendBytes, recv, recvBytes, stream);
      return;
    }
    api->synchronizeCallerStream(stream);
    if (sendBytes) api->copy(input, send, sendBytes);
    GpuState &g = ctx->gpus.at(0);
    const uint64_t launch = enqueueLaunch(g.stream);
    api->synchronize(g.device, g.stream);
    const std::vector<std::string> diags = abandonedWaits(*ctx, timeoutSeconds);
    if (!aborted.load() && diags.empty()) drainPortProxy(*ctx, timeoutSeconds); // the proxy's last copies and signals
    if (aborted.load() || !diags.empty()) failed(launch, diags);
    checkEthernet();
    if (recvBytes) api->copy(recv, output, recvBytes);
  }

  /// A message from another node this rank could not apply (a malformed put or signal).
  void checkEthernet() const {
    if (ethernet && !ethernet->error().empty())
      throw ExecutionError(ErrorKind::Backend, "rank " + std::to_string(me) + ": port channels between nodes: " + ethernet->error());
  }

  /// The next launch of this rank on `stream`; returns its number.
  uint64_t enqueueLaunch(DeviceStream stream) {
    advanceFlag(*ctx);
    GpuState &g = ctx->gpus.at(0);
    const uint64_t timeoutNs = timeoutSeconds > 0 ? uint64_t(timeoutSeconds * 1e9) : 0;
    api->launch(g.device, launchRecord(*ctx, g, options.packetType, options.dataType, timeoutNs), g.numBlocks,
                ctx->ranks[me].lowered.numThreadsPerBlock, stream, g.cooperative);
    return ++launches;
  }

  [[noreturn]] void failed(uint64_t launch, const std::vector<std::string> &diags) {
    ctx->abandoned = true;
    comm.setStopped("rank " + std::to_string(me) + " stopped in call " + std::to_string(launch));
    if (aborted.load())
      throw ExecutionError(ErrorKind::Misuse, "rank " + std::to_string(me) + ": call " + std::to_string(launch) +
                                                  " was aborted (ncclCommAbort, CudaRankSession::abort)");
    std::vector<std::string> why = diags;
    if (ethernet && !ethernet->error().empty()) // what the wait was for may have been dropped
      why.push_back("port channels between nodes: " + ethernet->error());
    throw ExecutionError(ErrorKind::Deadlock,
                         "rank " + std::to_string(me) + ": call " + std::to_string(launch) +
                             " was abandoned because a device-side wait timed out",
                         why);
  }

  // Stream-ordered calls (a GPU): the copy in, the launch and the copy out are enqueued on the
  // caller's stream and the call returns; how a launch ended is read once it has run (the
  // event `lastDone`), at a later call or when the session closes.
  DeviceEvent lastDone = nullptr;
  bool inFlight = false;
  uint64_t inFlightLaunch = 0;

  /// Throws what the previous stream-ordered launch ended with, once it has run (`wait`: waits
  /// for it); nothing while it still runs.
  void settlePrevious(bool wait) {
    if (!inFlight) return;
    GpuState &g = ctx->gpus.at(0);
    if (wait) {
      api->streamWait(dev, g.stream, lastDone);
      api->synchronize(dev, g.stream);
    } else if (!api->query(dev, lastDone)) {
      return;
    }
    inFlight = false;
    const std::vector<std::string> diags = abandonedWaits(*ctx, timeoutSeconds, g.stream);
    if (aborted.load() || !diags.empty()) failed(inFlightLaunch, diags);
  }

  // callAsync and poll (another thread: the NCCL shim's ncclCommGetAsyncError) both settle the
  // previous launch.
  std::mutex settleMu;

  void poll() {
    std::lock_guard<std::mutex> lock(settleMu);
    settlePrevious(false);
  }

  void callAsync(const void *send, size_t sendBytes, void *recv, size_t recvBytes, void *stream) {
    std::lock_guard<std::mutex> lock(settleMu);
    settlePrevious(false);
    DeviceStream s = stream; // the caller's cudaStream_t (null: the legacy default stream)
    if (sendBytes) api->copyAsync(dev, input, send, sendBytes, s);
    inFlightLaunch = enqueueLaunch(s);
    api->record(dev, lastDone, s);
    inFlight = true;
    if (recvBytes) api->copyAsync(dev, recv, output, recvBytes, s);
  }

  void abort() {
    aborted.store(true);
    DevAbort a{};
    a.aborted = 1;
    a.rank = me;
    // Every wait of the launch gives up. A stream-ordered launch runs on the caller's stream,
    // which a plain copy could wait for: through the session's own (non-blocking, idle) stream
    // then; else the launch runs on that stream, and a plain copy does not wait for it.
    for (GpuState &g : ctx->gpus) {
      if (lastDone) {
        api->copyAsync(g.device, g.abort, &a, sizeof a, g.stream);
        api->synchronize(g.device, g.stream);
      } else {
        api->copy(g.abort, &a, sizeof a);
      }
    }
  }

  ~Impl() {
    if (lastDone) { // a stream-ordered launch must end before its memory goes
      try {
        if (inFlight) {
          inFlight = false;
          api->streamWait(dev, ctx->gpus.at(0).stream, lastDone);
          api->synchronize(dev, ctx->gpus.at(0).stream);
        }
      } catch (const std::exception &) {
        // Teardown goes on.
      }
      api->destroyEvent(dev, lastDone);
    }
    // This rank's last puts to other nodes land while their receivers still run.
    if (ethernet && ctx && !ctx->abandoned && comm.stopped().empty()) {
      try {
        drainPortProxy(*ctx, timeoutSeconds);
      } catch (const std::exception &) {
        // Teardown goes on.
      }
    }
    // Peers may still map this rank's memory: nobody frees before every rank is done.
    if (ctx && comm.stopped().empty()) comm.barrierUntil(runtime::monotonicSeconds() + timeoutSeconds + 2);
    if (ethernet) ethernet->stopReceiving(); // before the context's memory goes
  }
};

CudaRankSession::CudaRankSession(Communicator &comm, const plan::Plan &plan, const runtime::RunOptions &options,
                                 const runtime::DistributedOptions &dist, const CudaRankOptions &cuda)
    : impl_(std::make_unique<Impl>(comm, plan, options, dist, cuda)) {}
CudaRankSession::~CudaRankSession() = default;
const runtime::RunReport &CudaRankSession::start() const { return impl_->rep; }
double CudaRankSession::execute(const std::function<void(uint8_t *)> &fill, unsigned warmup, unsigned iterations) {
  return impl_->execute(fill, warmup, iterations);
}
const uint8_t *CudaRankSession::output() const { return impl_->hostOut.data(); }
void CudaRankSession::call(const void *send, size_t sendBytes, void *recv, size_t recvBytes, void *stream) {
  impl_->call(send, sendBytes, recv, recvBytes, stream);
}
void CudaRankSession::abort() { impl_->abort(); }
void CudaRankSession::poll() { impl_->poll(); }

} // namespace msccl::cuda

namespace msccl::runtime {

void registerCudaRankBackends() {
  static std::once_flag once;
  std::call_once(once, [] {
    using namespace msccl::cuda;
    for (const CudaBackendName &b : kCudaBackendNames) // a static table: `b` outlives the factories
      registerRankBackend(b.name, b.rankDescription,
                          [&b](Communicator &c, const plan::Plan &plan, const RunOptions &o, const DistributedOptions &dist)
                              -> std::unique_ptr<RankSession> {
                            CudaRankOptions co{b.device, b.placement};
                            return std::make_unique<CudaRankSession>(c, plan, o, dist, co);
                          });
  });
}

} // namespace msccl::runtime
