//===- LaunchSchedule.h - Host-side order of one execute call's launches ----------------===//
//
// Consumes the number of GPUs of a context and the number of launches of one execute call;
// produces the order in which the executor enqueues the CUDA work of those launches: the
// cross-GPU event waits, the kernel launches and the event records. Also the co-residency
// limit the executor checks before it launches (how many blocks of the interpreter may share a
// GPU). Plain C++ (no CUDA), so host tests can check both.
//
// Why the order matters: the kernels of one iteration on different GPUs wait on each other
// (signals, packets), so they must all be able to run at once; and a launch must not start
// before every GPU's previous launch ended (a fast rank would overwrite scratch that a slow rank
// still reads). Each GPU has one `done` event, re-recorded after each of its launches, and
// cudaStreamWaitEvent waits for the record that was last *enqueued* when it is called. So all
// of iteration k's waits (on the records of iteration k-1) are enqueued before any of its
// launches: had GPU 1 enqueued its wait after GPU 0's launch k had been recorded, GPU 1's
// kernel k would wait for GPU 0's kernel k, which spins on signals from GPU 1's kernel k
// (a deadlock from the second launch on).
//
// Mirrors: nothing in MSCCL++ (its executor launches one rank per process).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace msccl::cuda::detail {

/// One piece of enqueued work of the launch schedule.
struct ScheduleStep {
  enum class Kind : uint8_t {
    Wait,   ///< cudaStreamWaitEvent(stream of `gpu`, done event of `other`)
    Launch, ///< the interpreter kernel of iteration `iteration` on `gpu`'s stream
    Record, ///< cudaEventRecord(done event of `gpu`, stream of `gpu`)
  };
  Kind kind = Kind::Launch;
  uint32_t gpu = 0;
  uint32_t other = 0;     ///< Wait only
  uint32_t iteration = 0; ///< 0-based launch of this call (all steps carry it)
};

/// The enqueue order of `count` launches over `numGpus` GPUs (see the file comment). With one
/// GPU there are only launches (stream order suffices). `afterEarlierLaunch`: some launch of
/// the context was enqueued before this call (its records exist), so iteration 0 waits too.
/// Guarantees: within an iteration every Wait precedes every Launch; each Launch of GPU g is
/// followed by g's Record before the next iteration's steps; with several GPUs, iteration k > 0
/// (or 0 when afterEarlierLaunch) has one Wait per ordered pair (g, other != g).
std::vector<ScheduleStep> launchSchedule(uint32_t numGpus, uint32_t count, bool afterEarlierLaunch);

/// How many interpreter blocks one GPU may host in one launch: `blocksPerSm` (occupancy
/// calculator) x `numSms` (0 if either is not positive). With `reserveForProxy` (port channels
/// between ranks on this same GPU: the proxy's cudaMemcpyAsync may run as a kernel on the SMs)
/// and more than one SM, one SM's worth of blocks is kept free, so that the copy the plan waits
/// for can be scheduled while every plan block spins.
uint64_t coResidentBlockLimit(int blocksPerSm, int numSms, bool reserveForProxy);

} // namespace msccl::cuda::detail
