// Device tests of the CUDA executor: every plan given (default: the golden plans of
// ../shared/golden and the older-format references of ../shared/legacy) runs on the CUDA
// executor and must leave every rank's input and output bytes exactly as the CPU reference
// executor does, for each data type and reduce operator, at several message sizes (ones that
// leave a partial last round of the vector loops among them), in-place (where the plan's buffer
// sizes allow the nccl-tests aliasing) and out-of-place, LL16 and LL8 for LL plans, over three
// launches (so LL flags, both double-scratch halves and channel counters are exercised across
// launches).
//   --device cuda  (default; ctest label `gpu`) the GPU: exits 77 (SKIP) without a GPU or driver;
//   --device host  (ctest label `device-host`) the same kernel source on host threads
//                  (--threads N per block), on every CI run.
//   --placement virtual|gpus  all ranks on device 0 (default) or one rank per device.
// The reference runs with the CPU executor's race checker: a case whose plan races for that
// buffer layout (an out-of-place plan given aliased buffers, the racy reference plans) has no
// defined result, so it is counted as racy, not compared.
// Exits 77 (ctest SKIP) when no GPU or driver is usable.
//   msccl_cuda_gpu_tests [--quick] [PLAN.json ...]
#include "msccl/cuda/CudaExecutor.h"
#include "msccl/runtime/CpuExecutor.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Elements.h"
#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Layout.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using namespace msccl;
namespace fs = std::filesystem;

namespace {

struct Case {
  uint64_t inputBytes = 0, outputBytes = 0;
  bool inPlace = false;
  plan::DataType type = plan::DataType::Float32;
  plan::ReduceOp op = plan::ReduceOp::Sum;
  runtime::PacketType packet = runtime::PacketType::LL16;
};

/// Rank buffers of one backend, laid out with the nccl-tests in-place conventions.
struct Buffers {
  std::vector<runtime::DeviceBuffer> allocs;
  std::vector<runtime::RankBuffers> ranks;
  std::vector<std::pair<void *, size_t>> views; // per rank: whole input, whole output (host copies compare these)
};

bool inPlaceLayout(const plan::Plan &p, const Case &c, uint32_t rank, uint64_t &total, uint64_t &inOff, uint64_t &outOff) {
  const uint64_t n = p.gpus.size();
  inOff = outOff = 0;
  if (p.collective == "allgather" && c.outputBytes == n * c.inputBytes) {
    total = c.outputBytes;
    inOff = rank * c.inputBytes;
  } else if (p.collective == "reducescatter" && c.inputBytes == n * c.outputBytes) {
    total = c.inputBytes;
    outOff = rank * c.outputBytes;
  } else if (c.inputBytes == c.outputBytes) {
    total = c.inputBytes;
  } else {
    return false;
  }
  return true;
}

void fill(std::vector<uint8_t> &bytes, plan::DataType t, uint32_t rank, uint32_t salt) {
  const size_t e = plan::dataTypeBytes(t);
  for (size_t i = 0; i < bytes.size() / e; ++i) {
    double v = double((i * 7 + rank * 13 + salt * 5) % 17);
    if (t != plan::DataType::UInt8 && t != plan::DataType::UInt32) v -= 8;
    runtime::storeElement(bytes.data(), i, t, v);
  }
}

Buffers setup(runtime::Executor &ex, const plan::Plan &p, const Case &c) {
  Buffers b;
  for (uint32_t r = 0; r < p.gpus.size(); ++r) {
    runtime::RankBuffers rb;
    uint64_t total, inOff, outOff;
    if (c.inPlace && inPlaceLayout(p, c, r, total, inOff, outOff)) {
      runtime::DeviceBuffer a = ex.allocate(total);
      std::vector<uint8_t> host(total);
      fill(host, c.type, r, 1);
      ex.upload(a.ptr, host.data(), total);
      rb.input = static_cast<char *>(a.ptr) + inOff;
      rb.output = static_cast<char *>(a.ptr) + outOff;
      b.allocs.push_back(a);
      b.views.push_back({a.ptr, total});
    } else {
      runtime::DeviceBuffer in = ex.allocate(c.inputBytes), out = ex.allocate(c.outputBytes);
      std::vector<uint8_t> hi(c.inputBytes), ho(c.outputBytes);
      fill(hi, c.type, r, 1);
      fill(ho, c.type, r, 2);
      ex.upload(in.ptr, hi.data(), hi.size());
      ex.upload(out.ptr, ho.data(), ho.size());
      rb.input = in.ptr;
      rb.output = out.ptr;
      b.allocs.push_back(in);
      b.allocs.push_back(out);
      b.views.push_back({in.ptr, c.inputBytes});
      b.views.push_back({out.ptr, c.outputBytes});
    }
    b.ranks.push_back(rb);
  }
  return b;
}

std::vector<std::vector<uint8_t>> runOn(runtime::Executor &ex, const plan::Plan &p, const Case &c) {
  Buffers b = setup(ex, p, c);
  runtime::ExecuteRequest req;
  req.plan = &p;
  req.buffers = b.ranks;
  req.inputBytes = c.inputBytes;
  req.outputBytes = c.outputBytes;
  req.dataType = c.type;
  req.reduceOp = c.op;
  req.packetType = c.packet;
  req.iterations = 3;
  std::vector<std::vector<uint8_t>> out;
  try {
    ex.execute(req);
    for (auto &[ptr, n] : b.views) {
      out.emplace_back(n);
      ex.download(out.back().data(), ptr, n);
    }
  } catch (...) {
    for (auto &a : b.allocs) ex.release(a);
    throw;
  }
  for (auto &a : b.allocs) ex.release(a);
  return out;
}

struct Options {
  bool quick = false, host = false, gpus = false;
  unsigned threads = 8;
  std::vector<fs::path> plans;
};

bool parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--quick") o.quick = true;
    else if (a == "--device") {
      std::string v = value();
      if (v != "cuda" && v != "host") return false;
      o.host = v == "host";
    } else if (a == "--placement") {
      std::string v = value();
      if (v != "virtual" && v != "gpus") return false;
      o.gpus = v == "gpus";
    } else if (a == "--threads") o.threads = (unsigned)std::atoi(value().c_str());
    else if (a.rfind("--", 0) == 0) return false;
    else o.plans.push_back(a);
  }
  return true;
}

/// The golden plans and the older-format references under ../shared.
std::vector<fs::path> sharedPlans() {
  std::vector<fs::path> plans;
  for (const char *sub : {"golden", "legacy"}) {
    fs::path root = fs::path(MSCCL_SHARED_DIR) / sub;
    if (!fs::exists(root)) continue;
    for (auto &e : fs::recursive_directory_iterator(root))
      if (e.path().extension() == ".json") plans.push_back(e.path());
  }
  std::sort(plans.begin(), plans.end());
  return plans;
}

struct Counts {
  unsigned passed = 0, failed = 0, skipped = 0, racy = 0;
};

/// One case: the CPU reference (with its race checker), then the device, compared bitwise.
void runCase(runtime::Executor &cpu, runtime::Executor &dev, const plan::Plan &p, const Case &cs, const char *label,
             Counts &n) {
  std::vector<std::vector<uint8_t>> want, got;
  try {
    want = runOn(cpu, p, cs);
  } catch (const runtime::ExecutionError &e) {
    if (e.summary().rfind("data races", 0) == 0) {
      std::printf("racy  %s: no defined result: %s\n", label,
                  e.diagnostics().empty() ? e.summary().c_str() : e.diagnostics()[0].c_str());
      ++n.racy;
    } else {
      std::printf("skip  %s: the CPU executor refuses it: %s\n", label, e.what());
      ++n.skipped;
    }
    return;
  }
  try {
    got = runOn(dev, p, cs);
  } catch (const runtime::ExecutionError &e) {
    if (e.kind() == runtime::ErrorKind::Unsupported) { // e.g. more threadblocks than can be co-resident
      std::printf("skip  %s: the device cannot run it: %s\n", label, e.summary().c_str());
      ++n.skipped;
    } else {
      std::printf("FAIL  %s: %s\n", label, e.what());
      ++n.failed;
    }
    return;
  } catch (const std::exception &e) {
    std::printf("FAIL  %s: %s\n", label, e.what());
    ++n.failed;
    return;
  }
  bool ok = want.size() == got.size();
  for (size_t k = 0; ok && k < want.size(); ++k)
    if (want[k] != got[k]) {
      size_t i = 0;
      while (i < want[k].size() && want[k][i] == got[k][i]) ++i;
      std::printf("FAIL  %s: buffer %zu differs from the CPU executor first at byte %zu\n", label, k, i);
      ok = false;
    }
  if (ok) ++n.passed;
  else ++n.failed;
}

/// Every case of one plan.
void runPlan(runtime::Executor &cpu, runtime::Executor &dev, const fs::path &path, const plan::Plan &p, const Options &o,
             Counts &n) {
  const plan::Gpu &g0 = p.gpus[0];
  const uint64_t A = p.bufferAlignment;
  const uint64_t most = std::max<uint64_t>({g0.inputChunks, g0.outputChunks, g0.scratchChunks, 1});
  // Byte targets; a chunk is the target over the largest chunk count, rounded down to the
  // alignment. 1 KiB + 48: odd vector counts (a partial last round of the 4-way loop).
  std::vector<uint64_t> sizes = o.quick ? std::vector<uint64_t>{1 << 10, 64 << 10}
                                        : std::vector<uint64_t>{1 << 10, (1 << 10) + 48 * most, 64 << 10, 4 << 20};
  if (o.host && !o.quick) sizes = {1 << 10, (1 << 10) + 48 * most, 64 << 10};
  std::vector<plan::DataType> types = {plan::DataType::Float32};
  if (!o.quick)
    types = {plan::DataType::Float16, plan::DataType::BFloat16, plan::DataType::Float32,
             plan::DataType::Int32,   plan::DataType::UInt32,   plan::DataType::UInt8};
  const plan::ReduceOp ops[] = {plan::ReduceOp::Sum, plan::ReduceOp::Min, plan::ReduceOp::Max};
  unsigned caseIndex = 0;
  for (size_t si = 0; si < sizes.size(); ++si) {
    uint64_t c = std::max<uint64_t>(A, sizes[si] / most / A * A);
    Case base;
    if (g0.inputChunks || g0.outputChunks) {
      base.inputBytes = g0.inputChunks * c;
      base.outputBytes = g0.outputChunks * c;
    } else {
      base.inputBytes = g0.scratchChunks * c;
    }
    uint64_t m = runtime::rangeCheckedSize(p, base.inputBytes, base.outputBytes);
    if (m < p.minMessageSize || m > p.maxMessageSize) continue;
    // Every data type at the first size; float32 and one other type rotating at the others.
    std::vector<plan::DataType> ts = types;
    if (si > 0 && ts.size() > 1) ts = {plan::DataType::Float32, types[si % types.size()]};
    for (plan::DataType t : ts)
      for (int inPlace = 0; inPlace < 2; ++inPlace)
        for (int ll8 = 0; ll8 < (p.protocol == "LL" && !o.quick ? 2 : 1); ++ll8) {
          Case cs = base;
          cs.type = t;
          cs.inPlace = inPlace;
          cs.packet = ll8 ? runtime::PacketType::LL8 : runtime::PacketType::LL16;
          cs.op = o.quick ? plan::ReduceOp::Sum : ops[caseIndex++ % 3]; // every operator over the cases
          uint64_t tot, io, oo;
          if (inPlace && !inPlaceLayout(p, cs, 0, tot, io, oo)) continue;
          char label[512];
          std::snprintf(label, sizeof label, "%s in=%llu out=%llu %s %s %s %s", path.filename().c_str(),
                        (unsigned long long)cs.inputBytes, (unsigned long long)cs.outputBytes,
                        std::string(plan::dataTypeName(t)).c_str(), std::string(plan::reduceOpName(cs.op)).c_str(),
                        inPlace ? "in-place" : "out-of-place", ll8 ? "LL8" : "LL16");
          runCase(cpu, dev, p, cs, label, n);
        }
  }
}

} // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // a killed run still shows how far it got
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr, "usage: %s [--quick] [--device cuda|host] [--placement virtual|gpus] [--threads N] [PLAN.json...]\n",
                 argv[0]);
    return 2;
  }
  std::string why;
  if (!o.host && !cuda::cudaUsable(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  if (o.plans.empty()) {
    o.plans = sharedPlans();
    if (o.plans.empty()) {
      std::printf("SKIP: no golden or legacy plans under %s\n", MSCCL_SHARED_DIR);
      return 77;
    }
  }
  Counts n;
  std::vector<std::pair<fs::path, plan::Plan>> plans;
  for (const fs::path &path : o.plans) {
    try {
      plans.emplace_back(path, plan::readPlanFile(path.string()));
    } catch (const std::exception &e) {
      std::printf("FAIL  %s: cannot read: %s\n", path.filename().c_str(), e.what());
      ++n.failed;
    }
  }
  runtime::CpuExecutorOptions co;
  co.raceCheck = true;
  auto cpu = runtime::makeCpuExecutor(co);
  cuda::CudaOptions opt;
  opt.placement = o.gpus ? cuda::Placement::OneRankPerGpu : cuda::Placement::VirtualRanks;
  opt.device = o.host ? cuda::DeviceKind::Host : cuda::DeviceKind::Cuda;
  opt.hostThreadsPerBlock = o.threads;
  opt.hostDevices = 8;
  if (o.host && o.gpus) // one emulated device per rank of the largest plan
    for (const auto &[path, p] : plans) opt.hostDevices = std::max<int>(opt.hostDevices, (int)p.gpus.size());
  opt.waitTimeoutSeconds = 10;
  auto dev = cuda::makeCudaExecutor(opt);
  std::printf("# %s\n", dev->description().c_str());
  for (const auto &[path, p] : plans) runPlan(*cpu, *dev, path, p, o, n);
  std::printf("%u passed, %u failed, %u racy (not compared), %u skipped (refused)\n", n.passed, n.failed, n.racy,
              n.skipped);
  return n.failed ? 1 : 0;
}
