// Host-only tests of the CUDA executor's launch schedule (LaunchSchedule.h). The schedule is run
// on a model of CUDA streams and events: cudaStreamWaitEvent waits for the record of the event
// that was last enqueued when the wait was enqueued; a kernel of iteration k cannot finish
// before the kernels of iteration k on every other GPU have started (they spin on each other's
// signals). The model reports a deadlock when no stream can move, and checks that no kernel
// starts before every GPU's kernel of the previous iteration has finished.
#include "LaunchSchedule.h"

#include <catch2/catch.hpp>

#include <deque>
#include <string>
#include <vector>

using msccl::cuda::detail::coResidentBlockLimit;
using msccl::cuda::detail::launchSchedule;
using msccl::cuda::detail::ScheduleStep;
using Kind = ScheduleStep::Kind;

namespace {

struct Item {
  Kind kind;
  uint32_t iteration; // Launch
  uint32_t event;     // Wait, Record
  uint64_t version;   // Wait: the number of records of `event` enqueued when the wait was
};

struct Outcome {
  bool deadlock = false;
  bool overlap = false; ///< a kernel started before the previous iteration ended everywhere
  std::string where;
};

/// Runs `steps` on `numGpus` modelled streams. `earlierRecords`: every event was recorded once
/// before (by an earlier call) and has completed.
Outcome simulate(const std::vector<ScheduleStep> &steps, uint32_t numGpus, bool earlierRecords) {
  std::vector<std::deque<Item>> streams(numGpus);
  std::vector<uint64_t> enqueued(numGpus, earlierRecords ? 1 : 0), completed = enqueued;
  uint32_t maxIt = 0;
  for (const ScheduleStep &s : steps) {
    switch (s.kind) {
    case Kind::Wait: streams[s.gpu].push_back({Kind::Wait, 0, s.other, enqueued[s.other]}); break;
    case Kind::Record: streams[s.gpu].push_back({Kind::Record, 0, s.gpu, ++enqueued[s.gpu]}); break;
    case Kind::Launch: streams[s.gpu].push_back({Kind::Launch, s.iteration, 0, 0}); maxIt = std::max(maxIt, s.iteration + 1); break;
    }
  }
  std::vector<std::vector<bool>> started(maxIt, std::vector<bool>(numGpus)), finished = started;
  Outcome out;
  for (bool moved = true; moved;) {
    moved = false;
    for (uint32_t g = 0; g < numGpus; ++g) {
      while (!streams[g].empty()) {
        Item &it = streams[g].front();
        if (it.kind == Kind::Wait) {
          if (completed[it.event] < it.version) break;
        } else if (it.kind == Kind::Record) {
          completed[g] = std::max(completed[g], it.version);
        } else {
          if (!started[it.iteration][g]) {
            started[it.iteration][g] = true;
            moved = true;
            if (it.iteration > 0)
              for (uint32_t o = 0; o < numGpus; ++o)
                if (!finished[it.iteration - 1][o]) out.overlap = true;
          }
          bool all = true;
          for (uint32_t o = 0; o < numGpus; ++o) all = all && started[it.iteration][o];
          if (!all) break;
          finished[it.iteration][g] = true;
        }
        streams[g].pop_front();
        moved = true;
      }
    }
  }
  for (uint32_t g = 0; g < numGpus; ++g)
    if (!streams[g].empty()) {
      out.deadlock = true;
      out.where += "gpu " + std::to_string(g) + " stuck; ";
    }
  return out;
}

/// The order the executor used before: per GPU, its waits, its launch and its record.
std::vector<ScheduleStep> interleavedSchedule(uint32_t numGpus, uint32_t count, bool earlier) {
  std::vector<ScheduleStep> out;
  for (uint32_t it = 0; it < count; ++it)
    for (uint32_t g = 0; g < numGpus; ++g) {
      if (numGpus > 1 && (it > 0 || earlier))
        for (uint32_t o = 0; o < numGpus; ++o)
          if (o != g) out.push_back({Kind::Wait, g, o, it});
      out.push_back({Kind::Launch, g, 0, it});
      out.push_back({Kind::Record, g, 0, it});
    }
  return out;
}

} // namespace

TEST_CASE("the model detects the deadlock of waits interleaved with launches", "[cuda][schedule]") {
  // Iteration 1: GPU 1 waits for GPU 0's record of iteration 1, i.e. for GPU 0's kernel 1,
  // which spins on GPU 1's kernel 1.
  Outcome o = simulate(interleavedSchedule(2, 2, false), 2, false);
  CHECK(o.deadlock);
  CHECK_FALSE(simulate(interleavedSchedule(2, 1, false), 2, false).deadlock); // one launch is fine
}

TEST_CASE("launch schedule: no deadlock, no overlap of iterations", "[cuda][schedule]") {
  for (uint32_t gpus : {1u, 2u, 3u, 8u})
    for (uint32_t count : {1u, 2u, 3u, 5u})
      for (bool earlier : {false, true}) {
        INFO(gpus << " GPUs, " << count << " launches, earlier launches: " << earlier);
        auto steps = launchSchedule(gpus, count, earlier);
        Outcome o = simulate(steps, gpus, earlier);
        CHECK_FALSE(o.deadlock);
        INFO(o.where);
        CHECK_FALSE(o.overlap);
        // Shape: one launch per GPU per iteration; every wait of an iteration precedes its launches.
        size_t launches = 0, waits = 0;
        for (size_t i = 0; i < steps.size(); ++i) {
          if (steps[i].kind == Kind::Launch) ++launches;
          if (steps[i].kind == Kind::Wait) {
            ++waits;
            CHECK(steps[i].other != steps[i].gpu);
            for (size_t j = 0; j < i; ++j)
              if (steps[j].iteration == steps[i].iteration) CHECK(steps[j].kind == Kind::Wait);
          }
        }
        CHECK(launches == size_t(gpus) * count);
        const size_t waitingIterations = gpus > 1 ? count - (earlier ? 0 : 1) : 0;
        CHECK(waits == waitingIterations * gpus * (gpus - 1));
      }
}

TEST_CASE("co-resident block limit keeps an SM for the proxy's copies", "[cuda][schedule]") {
  CHECK(coResidentBlockLimit(2, 108, false) == 216);
  CHECK(coResidentBlockLimit(2, 108, true) == 214);
  CHECK(coResidentBlockLimit(1, 1, true) == 1); // nothing to keep on a one-SM device
  CHECK(coResidentBlockLimit(0, 108, false) == 0);
}
