//===- DistributedRun.cpp - One rank per process: threads, shared memory, port proxy ------===//
//
// Consumes a Communicator, a plan and RunOptions; produces the RunReport every rank agrees on
// (DistributedRun.h). Pieces:
//   SegmentLayout  where a rank's abort word, memory/port signal words, input/output (aliased
//                  in place as in runCollective) and scratch lie in its NodeSharedMemory
//                  segment; computed for every rank from the plan, so puts need no exchange;
//   Proxy          the port proxy: threadblock threads queue puts and signals (per-tb FIFO),
//                  the main thread moves them with MPI_Put / MPI_Accumulate and completes them
//                  with MPI_Win_flush; `flushed(tb)` tells flush/pwsf when a tb's are done;
//   TbPool         one thread per threadblock of this rank, driving cpu::stepOp until the
//                  tb is done or the launch is stopped, with spin -> yield -> sleep backoff;
//   launch         start the pool, run the proxy until every tb is done, complete the puts,
//                  then barrier, balance check and agreement on the outcome (with deadlines).
// The op semantics are CpuOps.cpp's (the same Machine, with node peers mapped and a
// PortTransport); no op has a second meaning here.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/DistributedRun.h"

#include "msccl/runtime/cpu/Machine.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/PlanValidate.h"
#include "msccl/runtime/Resolve.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MSCCL_CPU_RELAX() _mm_pause()
#else
#define MSCCL_CPU_RELAX() ((void)0)
#endif

namespace msccl::runtime {
namespace {
using namespace msccl::plan;
using cpu::Machine;
using cpu::RankState;
using cpu::Step;
using cpu::TbState;

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

uint64_t align64(uint64_t v) { return (v + 63) / 64 * 64; }

/// Waiting without burning the cores other ranks need: spin a little, then yield, then sleep
/// with a growing period (up to 200 us).
struct Backoff {
  unsigned n = 0;
  void reset() { n = 0; }
  void pause() {
    ++n;
    if (n < 64) {
      MSCCL_CPU_RELAX();
    } else if (n < 128) {
      std::this_thread::yield();
    } else {
      unsigned us = std::min(200u, (n - 127) * 5);
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
  }
};

void sleepOn(const uint32_t *word, uint32_t seen, long us) {
#ifdef __linux__
  struct timespec ts = {0, us * 1000};
  syscall(SYS_futex, const_cast<uint32_t *>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
#else
  (void)word;
  (void)seen;
  std::this_thread::sleep_for(std::chrono::microseconds(us));
#endif
}

/// Sleep on a blocked wait's signal word, counted in the rank's `sleepers` so that signallers
/// skip the wake-up syscall while nobody sleeps (CpuOps.cpp signal).
void sleepOnSignal(uint64_t *sleepers, const TbState &s, long us) {
  if (sleepers)
    __atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
  sleepOn(s.waitWord, s.waitValue, us);
  if (sleepers)
    __atomic_sub_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
}

struct SegmentLayout {
  uint64_t abortWord = 0, sleepers = 8, memSignals = 0, portSignals = 0, input = 0, output = 0, scratch = 0, total = 0;
  uint64_t dataBytes = 0; ///< Bytes of the input/output region(s) (zeroed per execute).
};

SegmentLayout layoutFor(const ResolvedPlan &resolved, const LoweredPlan &lowered, uint32_t r,
                        const MessageSizes &ms, bool inPlace, CollectiveKind kind) {
  SegmentLayout l;
  l.abortWord = 0;
  l.memSignals = 64;
  l.portSignals = l.memSignals + 8 * resolved.gpus[r].memoryChannels.size();
  uint64_t data = align64(l.portSignals + 8 * resolved.gpus[r].portChannels.size());
  if (inPlace) {
    const InPlaceLayout a = inPlaceLayout(kind, r, ms.inputBytes, ms.outputBytes);
    l.input = data + a.input;
    l.output = data + a.output;
    l.dataBytes = a.bytes;
    l.scratch = align64(data + a.bytes);
  } else {
    l.input = data;
    l.output = align64(data + ms.inputBytes);
    l.dataBytes = l.output + ms.outputBytes - data;
    l.scratch = align64(l.output + ms.outputBytes);
  }
  l.total = l.scratch + lowered.gpus[r].scratchBytes;
  return l;
}

/// Memory and switch channels need their ranks on one node (they are loads and stores).
void checkLocality(const Communicator &comm, const Plan &plan, const ResolvedPlan &resolved) {
  std::vector<std::string> diags;
  for (uint32_t r = 0; r < plan.gpus.size(); ++r) {
    const ResolvedGpu &g = resolved.gpus[r];
    for (size_t c = 0; c < g.memoryChannels.size(); ++c)
      if (!comm.sameNode(int(r), int(g.memoryChannels[c].peer)))
        diags.push_back("gpus[" + std::to_string(r) + "]: memory channel " + std::to_string(c) + " connects rank " +
                        std::to_string(r) + " (node " + std::to_string(comm.nodeOf(int(r))) + ") to rank " +
                        std::to_string(g.memoryChannels[c].peer) + " (node " +
                        std::to_string(comm.nodeOf(int(g.memoryChannels[c].peer))) +
                        "): memory channels need both ranks on one node (use a port channel)");
    for (size_t c = 0; c < g.switchChannels.size(); ++c)
      for (uint32_t q : g.switchChannels[c].ranks)
        if (!comm.sameNode(int(r), int(q))) {
          diags.push_back("gpus[" + std::to_string(r) + "]: switch channel " + std::to_string(c) + " includes rank " +
                          std::to_string(q) + " of node " + std::to_string(comm.nodeOf(int(q))) + " but rank " +
                          std::to_string(r) + " is on node " + std::to_string(comm.nodeOf(int(r))) +
                          ": switch channels need all members on one node");
          break;
        }
    if (diags.size() >= 8)
      break;
  }
  if (!diags.empty())
    throw ExecutionError(ErrorKind::InvalidPlan,
                         "the plan does not fit the job's nodes (" + comm.describeNodes() + "):", diags);
}

/// The port proxy (see the file comment).
class Proxy final : public cpu::PortTransport {
public:
  Proxy(NodeSharedMemory &shm, const std::vector<SegmentLayout> &layouts, size_t numTbs)
      : shm_(shm), layouts_(layouts), issued_(numTbs), completed_(numTbs) {}

  void reset() {
    for (auto &a : issued_)
      a.store(0);
    for (auto &a : completed_)
      a.store(0);
  }

  void put(const TbState &tb, uint32_t dstRank, BufferType type, uint64_t offset, const uint8_t *src, uint64_t bytes,
           std::vector<uint8_t> *owned) override {
    const SegmentLayout &l = layouts_[dstRank];
    uint64_t base = type == BufferType::Input ? l.input : type == BufferType::Output ? l.output : l.scratch;
    Request q;
    q.tb = tb.tbIndex;
    q.rank = dstRank;
    q.disp = base + offset;
    q.src = src;
    q.bytes = bytes;
    if (owned) {
      q.owned = std::move(*owned);
      q.src = q.owned.data();
    }
    push(std::move(q));
  }
  void signal(const TbState &tb, uint32_t peer, uint32_t peerChannel) override {
    Request q;
    q.tb = tb.tbIndex;
    q.rank = peer;
    q.disp = layouts_[peer].portSignals + 8 * uint64_t(peerChannel);
    q.isSignal = true;
    push(std::move(q));
  }
  bool flushed(const TbState &tb) override {
    return completed_[tb.tbIndex].load(std::memory_order_acquire) == issued_[tb.tbIndex].load(std::memory_order_acquire);
  }
  std::string describePending(const TbState &tb) override {
    uint64_t i = issued_[tb.tbIndex].load(std::memory_order_acquire);
    uint64_t c = completed_[tb.tbIndex].load(std::memory_order_acquire);
    return "waits for the port proxy to complete its transfers (" + std::to_string(c) + " of " + std::to_string(i) +
           " queued puts/signals of this threadblock done)";
  }

  /// Run what is queued; true when something was done.
  bool poll() {
    std::deque<Request> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      batch.swap(queue_);
    }
    if (batch.empty())
      return false;
    std::vector<uint8_t> dirty(layouts_.size(), 0);
    for (Request &q : batch) {
      if (q.isSignal) {
        if (dirty[q.rank]) // the data the signal announces is complete at the target first
          shm_.flush(int(q.rank));
        shm_.add(int(q.rank), q.disp, 1);
        dirty[q.rank] = 1;
      } else if (q.bytes) {
        shm_.put(int(q.rank), q.disp, q.src, q.bytes);
        dirty[q.rank] = 1;
        bytesMoved += q.bytes;
      }
    }
    shm_.flushAll();
    for (Request &q : batch)
      completed_[q.tb].fetch_add(1, std::memory_order_release);
    return true;
  }

  bool idle() {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.empty();
  }
  /// "queued: N request(s)" for reports.
  std::string describe() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::to_string(queue_.size()) + " port request(s) queued";
  }
  void discard() {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.clear();
  }

  uint64_t bytesMoved = 0;
  std::function<void()> onPush; ///< Wakes the main thread (the proxy) when work is queued.

private:
  struct Request {
    uint32_t tb = 0, rank = 0;
    uint64_t disp = 0, bytes = 0;
    const uint8_t *src = nullptr;
    bool isSignal = false;
    std::vector<uint8_t> owned;
  };
  void push(Request &&q) {
    uint32_t tb = q.tb;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(q));
      issued_[tb].fetch_add(1, std::memory_order_release);
    }
    if (onPush)
      onPush();
  }

  NodeSharedMemory &shm_;
  const std::vector<SegmentLayout> &layouts_;
  std::mutex mu_;
  std::deque<Request> queue_;
  std::vector<std::atomic<uint64_t>> issued_, completed_;
};

/// One thread per threadblock of this rank.
class TbPool {
public:
  TbPool(Machine &m, uint32_t rank) : m_(m), rank_(rank) {
    const size_t n = m.lowered->gpus[rank].threadblocks.size();
    states_.resize(n);
    for (size_t t = 0; t < n; ++t)
      threads_.emplace_back([this, t] { threadMain(t); });
  }
  ~TbPool() {
    stop.store(true); // threads still in a launch (an exception left it) stop at their next step
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto &t : threads_)
      t.join();
  }

  /// Start a launch: every tb from pc 0, on the pool's threads, or (`inlineRun`) left for
  /// runInline on the caller's thread, which saves two thread wake-ups per threadblock and launch.
  void start(bool inlineRun = false) {
    for (uint32_t t = 0; t < states_.size(); ++t) {
      states_[t] = cpu::makeTbState(m_, rank_, t, t);
      if (!states_[t].done)
        cpu::settleTb(m_, states_[t]);
    }
    stop.store(false);
    failed.store(false);
    error.reset();
    running_.store(uint32_t(states_.size()));
    if (inlineRun)
      return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++generation_;
    }
    cv_.notify_all();
  }
  size_t size() const { return states_.size(); }
  /// Run every threadblock of this rank on the caller's thread, round robin as the CPU executor
  /// steps them (each until it blocks); `shouldStop()` is asked between rounds (true: stop).
  /// While every threadblock waits for a peer it spins, then yields the core to the peers' processes
  /// (a machine with fewer cores than ranks needs them to run), then sleeps on the first wait.
  template <class Stop> void runInline(Stop shouldStop) {
    Backoff backoff;
    try {
      for (size_t left = states_.size();;) {
        left = 0;
        bool moved = false;
        for (TbState &s : states_) {
          while (!s.done) {
            Step st = cpu::stepOp(m_, s, s.tb->ops[s.pc]);
            if (st == Step::Blocked)
              break;
            moved = true;
            if (st == Step::Done) {
              cpu::finishOp(m_, s);
              cpu::settleTb(m_, s);
            }
          }
          left += s.done ? 0 : 1;
        }
        if (left == 0 || stop.load(std::memory_order_relaxed))
          break;
        if (shouldStop()) {
          stop.store(true);
          break;
        }
        if (moved) {
          backoff.reset();
          continue;
        }
        const TbState *waiting = nullptr;
        for (const TbState &s : states_)
          if (!s.done && s.waitWord && !waiting)
            waiting = &s;
        idle(backoff, waiting);
      }
    } catch (const ExecutionError &e) {
      recordError(e);
    }
    running_.store(0, std::memory_order_release);
  }
  bool finished() const { return running_.load(std::memory_order_acquire) == 0; }
  /// The main thread idles until a tb queues port work or finishes, or a short tick passes
  /// (the proxy must also let MPI progress incoming one-sided traffic).
  void waitActivity(Backoff &backoff, long tickUs) {
    if (backoff.n < 32) {
      backoff.pause();
      return;
    }
    std::unique_lock<std::mutex> lock(activityMu_);
    activityCv_.wait_for(lock, std::chrono::microseconds(tickUs), [&] { return activity_; });
    activity_ = false;
  }
  void notifyActivity() {
    {
      std::lock_guard<std::mutex> lock(activityMu_);
      activity_ = true;
    }
    activityCv_.notify_one();
  }
  const std::vector<TbState> &states() const { return states_; }

  std::atomic<bool> stop{false}, failed{false};
  std::unique_ptr<ExecutionError> error; ///< First error of a tb thread (set before `failed`).

private:
  void threadMain(size_t t) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return quit_ || generation_ != seen; });
        if (quit_)
          return;
        seen = generation_;
      }
      runTb(states_[t], [this] { return stop.load(std::memory_order_relaxed); });
      running_.fetch_sub(1, std::memory_order_acq_rel);
      notifyActivity();
    }
  }
  template <class Stop> void runTb(TbState &s, Stop shouldStop) {
    Backoff backoff;
    try {
      while (!s.done) {
        if (shouldStop())
          return;
        Step st = cpu::stepOp(m_, s, s.tb->ops[s.pc]);
        if (st == Step::Done) {
          cpu::finishOp(m_, s);
          cpu::settleTb(m_, s);
          backoff.reset();
        } else if (st == Step::Progress) {
          backoff.reset();
        } else {
          idle(backoff, s.waitWord ? &s : nullptr);
        }
      }
    } catch (const ExecutionError &e) {
      recordError(e);
    }
  }

  /// Nothing moved: spin, yield, then (with `waiting`, a wait on a signal counter) sleep on the
  /// counter until a signaller wakes it (or 200 us: port signals arrive through MPI unannounced).
  void idle(Backoff &backoff, const TbState *waiting) {
    if (waiting && backoff.n >= 128) {
      ++backoff.n;
      sleepOnSignal(m_.ranks[rank_].sleepers, *waiting, waiting->waitWoken ? 200 : 20);
    } else {
      backoff.pause();
    }
  }
  /// The first error of a threadblock stops the launch.
  void recordError(const ExecutionError &e) {
    std::lock_guard<std::mutex> lock(errMu_);
    if (!error)
      error = std::make_unique<ExecutionError>(e);
    failed.store(true);
    stop.store(true);
  }

  Machine &m_;
  uint32_t rank_;
  std::vector<TbState> states_;
  std::vector<std::thread> threads_;
  std::mutex mu_, errMu_, activityMu_;
  std::condition_variable cv_, activityCv_;
  bool activity_ = false;
  uint64_t generation_ = 0;
  bool quit_ = false;
  std::atomic<uint32_t> running_{0};
};

enum Outcome : uint64_t { Ok = 0, PeerStopped = 1, Timeout = 2, Failed = 3 };

} // namespace

struct DistributedSession::Impl {
  Communicator &comm;
  const Plan &plan;
  RunOptions o;
  DistributedOptions dist;
  uint32_t n = 0, me = 0;
  RunReport rep;
  CollectiveKind kind = CollectiveKind::Other;
  ResolvedPlan resolved;
  LoweredPlan lowered;
  std::vector<SegmentLayout> layouts;
  std::unique_ptr<NodeSharedMemory> shm;
  Machine m;
  std::vector<uint64_t> waitStorage;
  std::unique_ptr<Proxy> proxy;
  std::unique_ptr<TbPool> pool;
  uint8_t *segment = nullptr;
  uint64_t *abortWord = nullptr;
  std::vector<std::string> diags;
  uint64_t lastLaunch = 0; // index of the last launch started (stoppedIn())
  uint64_t nextLaunch = 0; // executeNext: launches so far
  double deadline = 0;
  bool hasPortChannels = false;

  Impl(Communicator &c, const Plan &p, const RunOptions &opts, const DistributedOptions &d)
      : comm(c), plan(p), o(opts), dist(d) {
    n = uint32_t(plan.gpus.size());
    me = uint32_t(comm.rank());
    // Set (the same on every rank) once a launch of this job timed out: later runs do not start,
    // so a sweep over a deadlocking plan ends after one timeout instead of one per size.
    if (!comm.stopped().empty())
      throw ExecutionError(ErrorKind::Deadlock, "not run: " + comm.stopped());
    if (int(n) != comm.size())
      throw ExecutionError(ErrorKind::InvalidPlan,
                           "the plan has " + std::to_string(n) + " ranks but the job has " +
                               std::to_string(comm.size()) + " processes (run it with mpirun -np " +
                               std::to_string(n) + ")");
    if (!o.planValidated) { // msccl-run validates once before its sweep
      ValidateOptions vo;
      vo.allowGlre = true;
      vo.deviceLimits = false; // the CPU machine has no MSCCL++ per-threadblock tables
      validatePlan(plan, vo);
    }
    rep = startRun(plan, o);
    const MessageSizes *ms = &rep.sizes;
    kind = collectiveKind(plan.collective);

    resolved = resolvePlan(plan);
    checkLocality(comm, plan, resolved);
    lowered = lowerPlan(plan, resolved, ms->inputBytes, ms->outputBytes, dataTypeBytes(o.dataType));
    for (uint32_t r = 0; r < n; ++r)
      layouts.push_back(layoutFor(resolved, lowered, r, *ms, rep.inPlace, kind));
    shm = comm.allocateShared(layouts[me].total);

    m.plan = &plan;
    m.resolved = &resolved;
    m.lowered = &lowered;
    m.dataType = o.dataType;
    m.reduceOp = rep.reduceOp;
    m.packetType = o.packetType;
    m.ranks.resize(n);
    waitStorage.resize(resolved.gpus[me].memoryChannels.size() + resolved.gpus[me].portChannels.size());
    for (uint32_t r = 0; r < n; ++r) {
      RankState &rs = m.ranks[r];
      const SegmentLayout &l = layouts[r];
      const LoweredGpu &lg = lowered.gpus[r];
      rs.inputBytes = ms->inputBytes;
      rs.outputBytes = ms->outputBytes;
      rs.scratchBytes = lg.scratchBytes;
      rs.scratchHalf = plan.useDoubleScratchBuffer ? lg.scratchBytes / 2 : lg.scratchBytes;
      uint8_t *seg = shm->peer(int(r));
      rs.mapped = seg != nullptr;
      if (!rs.mapped)
        continue;
      rs.input = seg + l.input;
      rs.output = seg + l.output;
      rs.scratch = seg + l.scratch;
      rs.memSignals = {reinterpret_cast<uint64_t *>(seg + l.memSignals), resolved.gpus[r].memoryChannels.size()};
      rs.portSignals = {reinterpret_cast<uint64_t *>(seg + l.portSignals), resolved.gpus[r].portChannels.size()};
      rs.sleepers = reinterpret_cast<uint64_t *>(seg + l.sleepers);
    }
    RankState &mine = m.ranks[me];
    mine.memWaits = {waitStorage.data(), mine.memSignals.size()};
    mine.portWaits = {waitStorage.data() + mine.memSignals.size(), mine.portSignals.size()};
    for (const Semaphore &s : plan.gpus[me].semaphores) {
      mine.semaphoreStorage.push_back(s.initValue);
      mine.semaphoreInit.push_back(s.initValue);
    }
    mine.semaphores = {mine.semaphoreStorage.data(), mine.semaphoreStorage.size()};
    mine.barriers.resize(16);

    proxy = std::make_unique<Proxy>(*shm, layouts, lowered.gpus[me].threadblocks.size());
    m.port = proxy.get();
    m.wakeWaiters = true;
    pool = std::make_unique<TbPool>(m, me);
    proxy->onPush = [p = pool.get()] { p->notifyActivity(); };
    segment = shm->local();
    abortWord = reinterpret_cast<uint64_t *>(segment + layouts[me].abortWord);
    // With port channels the proxy ticks often: incoming one-sided traffic needs MPI progress here.
    for (uint32_t r = 0; r < n; ++r)
      hasPortChannels |= !resolved.gpus[r].portChannels.empty();
  }

  ~Impl() {
    pool.reset();
    try {
      comm.barrier(); // nobody frees the segments while a peer still reads them
    } catch (...) {
    }
  }

  /// The first error of this rank's threadblocks, as this rank's.
  ExecutionError threadblockError() const {
    return ExecutionError(pool->error->kind(), "rank " + std::to_string(me) + ": " + pool->error->summary(),
                          pool->error->diagnostics());
  }
  /// This rank's launch did not finish within the timeout: its unfinished threadblocks.
  ExecutionError timeoutError() const {
    return ExecutionError(ErrorKind::Deadlock,
                          "rank " + std::to_string(me) + ": " + stoppedIn() + " did not finish within " +
                              seconds(dist.timeoutSeconds) + " s; " + std::to_string(diags.size()) +
                              " unfinished threadblock(s) (" + proxy->describe() + "):",
                          diags);
  }

  /// "launch 3 (flag 3)": where a run stopped, for reports.
  std::string stoppedIn() const {
    return "launch " + std::to_string(lastLaunch + 1) + " (flag " + std::to_string(lastLaunch + 1) + ")";
  }

  // One "execute": zeroed scratch, counters and semaphores, flags from 1 (as CpuExecutor).
  void resetData(const std::function<void(uint8_t *)> &fill) {
    RankState &mine = m.ranks[me];
    std::memset(segment, 0, layouts[me].total); // abort word, signals, data, scratch
    fill(mine.input);
    std::fill(waitStorage.begin(), waitStorage.end(), 0);
    for (size_t k = 0; k < mine.semaphoreStorage.size(); ++k)
      mine.semaphoreStorage[k] = mine.semaphoreInit[k];
    for (cpu::Barrier &b : mine.barriers)
      b = cpu::Barrier{};
    proxy->reset();
  }

  // One launch on this rank: no collective (ranks drift apart as GPUs do; cumulative signal
  // counters and LL flags carry over). Returns Ok, or why it stopped with `diags` filled.
  Outcome launch(uint64_t launchIndex) {
    TbPool &pool = *this->pool;
    Proxy &proxy = *this->proxy;
    m.flag = uint32_t(launchIndex + 1);
    for (RankState &rs : m.ranks)
      rs.scratchOffset = (plan.useDoubleScratchBuffer && m.flag % 2 == 0) ? rs.scratchHalf : 0;
    deadline = monotonicSeconds() + dist.timeoutSeconds;
    lastLaunch = launchIndex;
    Outcome outcome = Ok;
    unsigned checks = 0;
    auto check = [&]() -> bool { // asked between rounds: the clock only every 64th time
      if (__atomic_load_n(abortWord, __ATOMIC_ACQUIRE) != 0)
        outcome = PeerStopped;
      else if ((++checks & 63) == 0 && monotonicSeconds() > deadline)
        outcome = Timeout;
      return outcome != Ok;
    };
    if (!hasPortChannels) { // every threadblock on this thread (port transfers need the proxy loop below)
      pool.start(/*inlineRun=*/true);
      pool.runInline(check);
      if (pool.failed.load())
        outcome = Failed;
    } else {
      pool.start();
    }
    Backoff backoff;
    for (;;) {
      if (outcome != Ok)
        break;
      bool worked = proxy.poll();
      if (pool.finished() && proxy.idle())
        break;
      if (pool.failed.load()) {
        outcome = Failed;
        break;
      }
      if (__atomic_load_n(abortWord, __ATOMIC_ACQUIRE) != 0) {
        outcome = PeerStopped;
        break;
      }
      if (monotonicSeconds() > deadline) {
        outcome = Timeout;
        break;
      }
      if (worked) {
        backoff.reset();
      } else {
        shm->progress();
        pool.waitActivity(backoff, hasPortChannels ? 20 : 200);
      }
    }
    if (outcome != Ok) {
      pool.stop.store(true);
      while (!pool.finished())
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      proxy.discard();
      if (pool.failed.load())
        outcome = Failed;
      if (outcome == Failed) // tell every other rank to stop waiting for this one
        for (uint32_t r = 0; r < n; ++r)
          if (r != me)
            shm->add(int(r), layouts[r].abortWord, 1);
      for (const TbState &s : pool.states())
        if (!s.done)
          diags.push_back(cpu::blockedLine(m, s));
    }
    shm->flushAll();
    return outcome;
  }

  // End of an execute (every rank calls it exactly once, whatever happened): barrier, balance
  // check of this rank's counters, agreement on the outcome; throws the same kind everywhere.
  void settle(Outcome outcome) {
    const double grace = std::max(2.0, 0.5 * dist.timeoutSeconds);
    auto giveUp = [&](const std::string &what) {
      std::string msg = "msccl-run: rank " + std::to_string(me) + ": " + what + "; aborting the job\n";
      for (const std::string &d : diags)
        msg += "  " + d + "\n";
      std::cerr << msg;
      std::cerr.flush();
      comm.abort(1);
    };
    if (!comm.barrierUntil(monotonicSeconds() + dist.timeoutSeconds + grace))
      giveUp("the other ranks did not finish " + stoppedIn() + " within the timeout of " +
             seconds(dist.timeoutSeconds) + " s (a rank died or hangs)");
    std::vector<std::string> balance;
    if (outcome == Ok)
      balance = cpu::balanceProblems(m, me);
    uint64_t code = outcome == Ok && !balance.empty() ? uint64_t(Failed) : uint64_t(outcome);
    uint64_t worst = code;
    if (!comm.allReduceMaxUntil(worst, monotonicSeconds() + grace))
      giveUp("the ranks did not agree on the outcome of " + stoppedIn());
    if (worst == Ok)
      return;
    if (worst == Timeout)
      comm.setStopped("size " + std::to_string(o.size) + " timed out in " + stoppedIn());
    if (outcome == Failed && pool->error)
      throw threadblockError();
    if (!balance.empty())
      throw ExecutionError(ErrorKind::Misuse,
                           "rank " + std::to_string(me) + ": unbalanced synchronisation at the end of " + stoppedIn() +
                               " (signal and semaphore counts carry over launches; checked after the last):",
                           balance);
    if (outcome == Timeout)
      throw timeoutError();
    if (outcome == PeerStopped)
      throw ExecutionError(ErrorKind::Misuse,
                           "rank " + std::to_string(me) + ": stopped in " + stoppedIn() +
                               " because another rank failed (see its report); unfinished threadblocks here:",
                           diags);
    throw ExecutionError(worst == Timeout ? ErrorKind::Deadlock : ErrorKind::Misuse,
                         "rank " + std::to_string(me) + ": finished " + stoppedIn() + ", but another rank " +
                             (worst == Timeout ? "timed out" : "failed") + " (see its report)");
  }

  // DistributedSession::executeNext.
  void executeNext(const std::function<void(uint8_t *)> &fill) {
    if (!comm.stopped().empty())
      throw ExecutionError(ErrorKind::Deadlock, "not run: " + comm.stopped());
    if (nextLaunch == 0) {
      resetData(fill);
      comm.barrier();
    } else {
      if (__atomic_load_n(abortWord, __ATOMIC_ACQUIRE) != 0) {
        comm.setStopped("this rank's session was aborted, or another rank failed in an earlier call (see its report)");
        throw ExecutionError(ErrorKind::Misuse, "rank " + std::to_string(me) + ": not run: " + comm.stopped());
      }
      fill(m.ranks[me].input);
    }
    diags.clear();
    const Outcome outcome = launch(nextLaunch++);
    if (outcome == Ok)
      return;
    for (uint32_t r = 0; r < n; ++r) // every rank stops waiting for this one (or refuses its next call)
      if (r != me)
        shm->add(int(r), layouts[r].abortWord, 1);
    shm->flushAll();
    comm.setStopped("rank " + std::to_string(me) + " stopped in " + stoppedIn());
    if (outcome == Failed && pool->error)
      throw threadblockError();
    if (outcome == Timeout)
      throw timeoutError();
    throw ExecutionError(ErrorKind::Misuse,
                         "rank " + std::to_string(me) + ": stopped in " + stoppedIn() +
                             ": aborted here, or another rank failed (see its report); unfinished threadblocks here:",
                         diags);
  }

  double execute(const std::function<void(uint8_t *)> &fill, unsigned warmup, unsigned iterations) {
    // Set (the same on every rank) once a launch of this job timed out: later runs do not start,
    // so a sweep over a deadlocking plan ends after one timeout instead of one per size.
    if (!comm.stopped().empty())
      throw ExecutionError(ErrorKind::Deadlock, "not run: " + comm.stopped());
    resetData(fill);
    diags.clear();
    comm.barrier();
    uint64_t launchIndex = 0;
    Outcome outcome = Ok;
    for (unsigned i = 0; i < warmup && outcome == Ok; ++i)
      outcome = launch(launchIndex++);
    auto t0 = std::chrono::steady_clock::now();
    for (unsigned i = 0; i < iterations && outcome == Ok; ++i)
      outcome = launch(launchIndex++);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    settle(outcome);
    return comm.allReduceMax(secs);
  }
};

DistributedSession::DistributedSession(Communicator &comm, const Plan &plan, const RunOptions &options,
                                       const DistributedOptions &dist)
    : impl_(std::make_unique<Impl>(comm, plan, options, dist)) {}
DistributedSession::~DistributedSession() = default;
const RunReport &DistributedSession::start() const { return impl_->rep; }
double DistributedSession::execute(const std::function<void(uint8_t *input)> &fill, unsigned warmup,
                                   unsigned iterations) {
  return impl_->execute(fill, warmup, iterations);
}
void DistributedSession::executeNext(const std::function<void(uint8_t *input)> &fill) { impl_->executeNext(fill); }
void DistributedSession::call(const void *send, size_t sendBytes, void *recv, size_t recvBytes, void *) {
  checkCallBytes(impl_->rep.sizes, sendBytes, recvBytes);
  impl_->executeNext([&](uint8_t *input) {
    if (sendBytes) std::memcpy(input, send, sendBytes);
  });
  if (recvBytes) std::memcpy(recv, output(), recvBytes);
}
void DistributedSession::abort() { __atomic_store_n(impl_->abortWord, uint64_t(1), __ATOMIC_RELEASE); }
const uint8_t *DistributedSession::output() const { return impl_->m.ranks[impl_->me].output; }

RunReport runCollectiveDistributed(Communicator &comm, const Plan &plan, const RunOptions &o,
                                   const DistributedOptions &dist) {
  return runCollectiveRanks("cpu", comm, plan, o, dist);
}

} // namespace msccl::runtime
