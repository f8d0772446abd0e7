//===- CudaExecutor.cpp - The CUDA backend of the executor interface --------------------===//
//
// Consumes ExecuteRequests (msccl/runtime/Executor.h); produces launches of the interpreter
// kernel (Kernel.cu) over a cached Context (CudaContext.h) and reports ExecutionErrors:
// InvalidPlan/InvalidSize from validation and lowering, Unsupported for placements that cannot
// run, Deadlock when a device-side wait timed out, Backend for CUDA errors.
// One execute = (warmup + iterations) launches; every launch advances the LL flag F and with
// it the double-scratch half; with several GPUs each launch waits (on the device) for the
// previous launch of every GPU, so a fast rank never overwrites packets a slow rank still reads;
// the order of the enqueued waits, launches and records is launchSchedule (LaunchSchedule.h).
// Each batch of launches ends with the port proxy drained (every request the kernels pushed is
// done, its copies have landed), so results are in place when execute returns.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/cuda/CudaExecutor.h"

#include "CudaContext.h"
#include "LaunchSchedule.h"

#include "msccl/runtime/PlanValidate.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace msccl::cuda {

using runtime::ErrorKind;
using runtime::ExecutionError;
using namespace detail;

bool hostDeviceRequested() {
  const char *d = std::getenv("MSCCL_CUDA_DEVICE");
  return d && std::string_view(d) == "host";
}

bool cudaUsable(std::string *why) {
  try {
    makeCudaDeviceApi();
    return true;
  } catch (const ExecutionError &e) {
    if (why) *why = e.summary();
    return false;
  }
}

namespace {

/// A user buffer staged on a rank's GPU (OneRankPerGpu with buffers elsewhere); the device
/// memory comes from the context's StagingPool and is reused by later calls.
struct Staging {
  char *user = nullptr, *device = nullptr;
  size_t bytes = 0;
};

class CudaExecutor final : public runtime::Executor {
public:
  explicit CudaExecutor(const CudaOptions &o) : options_(o) {
    if (hostDeviceRequested()) options_.device = DeviceKind::Host;
    if (options_.device == DeviceKind::Host) {
      HostDeviceOptions h;
      h.deviceCount = options_.hostDevices;
      h.threadsPerBlock = options_.hostThreadsPerBlock;
      api_ = makeHostDeviceApi(h);
    } else {
      try {
        api_ = makeCudaDeviceApi();
      } catch (const ExecutionError &e) {
        throw ExecutionError(ErrorKind::Unsupported, "cuda backend unavailable: " + e.summary());
      }
    }
    numDevices_ = api_->deviceCount();
    if (const char *t = std::getenv("MSCCL_CUDA_TIMEOUT")) options_.waitTimeoutSeconds = std::atof(t);
  }

  void synchronizeStream(void *stream) override { api_->synchronizeCallerStream(stream); }

  std::string_view name() const override {
    const bool host = options_.device == DeviceKind::Host;
    return options_.placement == Placement::VirtualRanks ? (host ? "cuda-host" : "cuda-virtual")
           : options_.placement == Placement::OneRankPerGpu ? (host ? "cuda-host-gpus" : "cuda-gpus")
                                                            : (host ? "cuda-host-auto" : "cuda");
  }

  std::string description() const override {
    const DeviceProperties p = api_->properties(0);
    std::ostringstream os;
    if (options_.device == DeviceKind::Host)
      os << "CUDA executor's device code on host threads, " << numDevices_ << " emulated devices, "
         << api_->threadsPerBlock(0) << " threads per block, ";
    else
      os << "CUDA, " << numDevices_ << " x " << p.name << " (sm_" << p.major << p.minor << "), ";
    os << (options_.placement == Placement::VirtualRanks ? "virtual ranks on device 0"
           : options_.placement == Placement::OneRankPerGpu ? "one rank per device"
                                                            : "one rank per device if enough, else virtual ranks")
       << "; switch channels emulated with peer loads/stores";
    return os.str();
  }

  runtime::DeviceBuffer allocate(size_t bytes) override {
    runtime::DeviceBuffer b;
    b.ptr = api_->allocate(0, bytes);
    b.bytes = bytes;
    return b;
  }
  void release(runtime::DeviceBuffer &b) override {
    if (b.ptr) {
      // A context may point at this memory: drop it first.
      context_.reset();
      api_->release(0, b.ptr);
    }
    b = {};
  }
  void upload(void *dst, const void *src, size_t bytes) override { api_->copy(dst, src, bytes); }
  void download(void *dst, const void *src, size_t bytes) override { api_->copy(dst, src, bytes); }

  runtime::ExecuteResult execute(const runtime::ExecuteRequest &req) override;

private:
  bool choosePerGpu(size_t nranks);
  std::vector<Staging> stage(const runtime::ExecuteRequest &req, std::vector<char *> &in, std::vector<char *> &out);
  void launch(unsigned count, runtime::PacketType pt, plan::DataType dt);
  void checkAbort();

  CudaOptions options_;
  std::unique_ptr<DeviceApi> api_; ///< declared before context_: destroyed after the context that uses it
  int numDevices_ = 0;
  std::unique_ptr<Context> context_;
};

bool CudaExecutor::choosePerGpu(size_t nranks) {
  if (options_.placement == Placement::VirtualRanks) return false;
  bool enough = (size_t)numDevices_ >= nranks;
  bool peers = true;
  for (size_t a = 0; enough && a < nranks; ++a)
    for (size_t b = 0; b < nranks; ++b)
      if (a != b && !api_->canAccessPeer((int)a, (int)b)) peers = false;
  if (options_.placement == Placement::OneRankPerGpu) {
    if (!enough)
      throw ExecutionError(ErrorKind::Unsupported, "cuda-gpus: the plan has " + std::to_string(nranks) + " ranks but only " +
                                                       std::to_string(numDevices_) + " GPU(s) are visible (use cuda-virtual)");
    if (!peers) throw ExecutionError(ErrorKind::Unsupported, "cuda-gpus: not every pair of GPUs has peer access");
    return true;
  }
  return enough && peers && nranks > 1;
}

std::vector<Staging> CudaExecutor::stage(const runtime::ExecuteRequest &req, std::vector<char *> &in, std::vector<char *> &out) {
  std::vector<Staging> st;
  for (size_t r = 0; r < in.size(); ++r) {
    const int dev = context_->ranks[r].device;
    auto onDevice = [&](const void *p) { return p == nullptr || api_->deviceOf(p) == dev; };
    if (onDevice(in[r]) && onDevice(out[r])) continue;
    // One staging buffer over the union of input and output keeps in-place aliasing intact.
    char *lo = std::min(in[r], out[r]);
    char *hi = std::max(in[r] + req.inputBytes, out[r] + req.outputBytes);
    bool overlap = in[r] < out[r] + req.outputBytes && out[r] < in[r] + req.inputBytes;
    auto one = [&](char *user, size_t bytes) {
      Staging s;
      s.user = user;
      s.bytes = bytes;
      s.device = static_cast<char *>(context_->staging.acquire(dev, bytes));
      api_->copy(s.device, s.user, bytes);
      st.push_back(s);
      return s.device;
    };
    if (overlap) {
      char *d = one(lo, hi - lo);
      in[r] = d + (in[r] - lo);
      out[r] = d + (out[r] - lo);
    } else {
      if (req.inputBytes) in[r] = one(in[r], req.inputBytes);
      if (req.outputBytes) out[r] = one(out[r], req.outputBytes);
    }
  }
  return st;
}

void CudaExecutor::launch(unsigned count, runtime::PacketType pt, plan::DataType dt) {
  Context &c = *context_;
  const uint64_t timeoutNs = options_.waitTimeoutSeconds > 0 ? uint64_t(options_.waitTimeoutSeconds * 1e9) : 0;
  const bool earlier = c.flag != 0;
  uint32_t iteration = UINT32_MAX;
  for (const ScheduleStep &step : launchSchedule(c.gpus.size(), count, earlier)) {
    if (step.iteration != iteration) { // a new launch of every GPU: next flag
      iteration = step.iteration;
      advanceFlag(c);
    }
    GpuState &g = c.gpus[step.gpu];
    switch (step.kind) {
    case ScheduleStep::Kind::Wait: api_->streamWait(g.device, g.stream, c.gpus[step.other].done); break;
    case ScheduleStep::Kind::Record: api_->record(g.device, g.done, g.stream); break;
    case ScheduleStep::Kind::Launch:
      api_->launch(g.device, launchRecord(c, g, pt, dt, timeoutNs), g.numBlocks, c.ranks[g.ranks[0]].lowered.numThreadsPerBlock,
                   g.stream, g.cooperative);
      break;
    }
  }
  for (GpuState &g : c.gpus) api_->synchronize(g.device, g.stream);
  checkAbort();
  try {
    drainPortProxy(c, options_.waitTimeoutSeconds);
  } catch (const ExecutionError &) {
    c.abandoned = true; // requests left in the FIFOs: the context cannot be reused
    context_.reset();
    throw;
  }
}

void CudaExecutor::checkAbort() {
  Context &c = *context_;
  std::vector<std::string> diags = abandonedWaits(c, options_.waitTimeoutSeconds);
  std::string proxyError = c.usesPort ? c.proxy.error() : "";
  if (!diags.empty()) {
    c.abandoned = true;
    context_.reset(); // counters are unbalanced now
    throw ExecutionError(ErrorKind::Deadlock, "cuda: the launch was abandoned because a device-side wait timed out", diags);
  }
  if (!proxyError.empty()) {
    context_.reset();
    throw ExecutionError(ErrorKind::Misuse, "cuda: port channel proxy: " + proxyError);
  }
}

runtime::ExecuteResult CudaExecutor::execute(const runtime::ExecuteRequest &req) {
  if (!req.plan) throw ExecutionError(ErrorKind::Misuse, "execute: no plan");
  const plan::Plan &plan = *req.plan;
  if (req.buffers.size() != plan.gpus.size())
    throw ExecutionError(ErrorKind::Misuse, "execute: " + std::to_string(req.buffers.size()) + " rank buffers for a plan of " +
                                                std::to_string(plan.gpus.size()) + " ranks");
  runtime::ValidateOptions vo;
  vo.allowGlre = true; // emulated like glres
  vo.deviceLimits = false; // our tables are sized from the plan (no MSCCL++ per-threadblock limit)
  if (!req.planValidated)
    runtime::validatePlan(plan, vo);

  const bool perGpu = choosePerGpu(plan.gpus.size());
  if (!context_ || context_->plan != &plan || context_->inputBytes != req.inputBytes || context_->outputBytes != req.outputBytes ||
      context_->reduceOp != req.reduceOp || context_->oneRankPerGpu != perGpu) {
    context_.reset();
    std::vector<LoweredRank> lowered;
    try {
      lowered = lowerForDevice(plan, req.inputBytes, req.outputBytes, req.reduceOp, plan::dataTypeBytes(req.dataType));
    } catch (const LoweringError &e) {
      throw ExecutionError(ErrorKind::InvalidPlan, std::string("cuda: ") + e.what());
    }
    std::vector<int> devices(plan.gpus.size(), 0);
    if (perGpu)
      for (size_t r = 0; r < devices.size(); ++r) devices[r] = (int)r;
    if (perGpu)
      for (size_t a = 0; a < devices.size(); ++a)
        for (size_t b = 0; b < devices.size(); ++b)
          if (a != b) api_->enablePeerAccess((int)a, (int)b);
    context_ = buildContext(*api_, plan, std::move(lowered), devices);
    context_->plan = &plan;
    context_->inputBytes = req.inputBytes;
    context_->outputBytes = req.outputBytes;
    context_->reduceOp = req.reduceOp;
    context_->oneRankPerGpu = perGpu;
  }
  std::vector<char *> in(plan.gpus.size()), out(plan.gpus.size());
  for (size_t r = 0; r < in.size(); ++r) {
    in[r] = static_cast<char *>(req.buffers[r].input);
    out[r] = static_cast<char *>(req.buffers[r].output);
  }
  context_->staging.beginCall();
  std::vector<Staging> staged = perGpu ? stage(req, in, out) : std::vector<Staging>();
  context_->staging.endCall(); // frees what earlier calls staged and this one does not need
  bindBuffers(*context_, in, out);

  runtime::ExecuteResult res;
  if (req.warmupIterations) launch(req.warmupIterations, req.packetType, req.dataType);
  auto t0 = std::chrono::steady_clock::now();
  launch(req.iterations, req.packetType, req.dataType);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.launches = req.warmupIterations + req.iterations;
  res.opsExecuted = context_->opsPerLaunch * res.launches;
  for (const Staging &s : staged) api_->copy(s.user, s.device, s.bytes);
  return res;
}

} // namespace

std::unique_ptr<runtime::Executor> makeCudaExecutor(const CudaOptions &options) { return std::make_unique<CudaExecutor>(options); }

const CudaBackendName kCudaBackendNames[5] = {
    {"cuda", Placement::Auto, DeviceKind::Cuda,
     "CUDA executor: one rank per GPU when there are enough GPUs, else virtual ranks on GPU 0",
     "CUDA, one process per rank: the node's ranks spread over its GPUs (several per GPU when fewer GPUs)"},
    {"cuda-virtual", Placement::VirtualRanks, DeviceKind::Cuda, "CUDA executor: all ranks as virtual ranks on GPU 0",
     "CUDA, one process per rank, every rank on GPU 0"},
    {"cuda-gpus", Placement::OneRankPerGpu, DeviceKind::Cuda, "CUDA executor: one rank per GPU",
     "CUDA, one process per rank and one GPU per rank"},
    {"cuda-host", Placement::VirtualRanks, DeviceKind::Host,
     "CUDA executor's device code on host threads: all ranks as virtual ranks on one emulated device",
     "the CUDA executor's device code on host threads, one process per rank, POSIX shared memory"},
    {"cuda-host-gpus", Placement::OneRankPerGpu, DeviceKind::Host,
     "CUDA executor's device code on host threads: one rank per emulated device (8 devices)",
     "the CUDA executor's device code on host threads, one process per rank per emulated device, POSIX shared memory"},
};

} // namespace msccl::cuda

namespace msccl::runtime {

void registerCudaExecutor() {
  static std::once_flag once;
  std::call_once(once, [] {
    using namespace msccl::cuda;
    for (const CudaBackendName &b : kCudaBackendNames) // a static table: `b` outlives the factories
      registerExecutor(b.name, b.executorDescription, [&b](const BackendOptions &) {
        CudaOptions o;
        o.placement = b.placement;
        o.device = b.device;
        return makeCudaExecutor(o);
      });
  });
}

} // namespace msccl::runtime
