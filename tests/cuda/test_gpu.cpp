// GPU tests of the CUDA executor (ctest label `gpu`): every golden plan runs on virtual ranks
// and must leave every rank's input and output bytes exactly as the CPU reference executor
// does, for each data type, at message sizes from 1 KiB to 4 MiB, in-place (where the plan's
// buffer sizes allow the nccl-tests aliasing) and out-of-place, over two launches (so LL flags,
// double-scratch halves and channel counters are exercised across launches).
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
  req.packetType = c.packet;
  req.iterations = 2;
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

} // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // a killed run still shows how far it got
  std::string why;
  if (!cuda::cudaUsable(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  bool quick = false;
  std::vector<fs::path> plans;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") quick = true;
    else plans.push_back(argv[i]);
  }
  if (plans.empty()) {
    fs::path root = fs::path(MSCCL_SHARED_DIR) / "golden";
    if (!fs::exists(root)) {
      std::printf("SKIP: no golden plans under %s\n", root.c_str());
      return 77;
    }
    for (auto &e : fs::recursive_directory_iterator(root))
      if (e.path().extension() == ".json") plans.push_back(e.path());
    std::sort(plans.begin(), plans.end());
  }
  runtime::CpuExecutorOptions co;
  co.raceCheck = true;
  auto cpu = runtime::makeCpuExecutor(co);
  cuda::CudaOptions o;
  o.placement = cuda::Placement::VirtualRanks;
  o.waitTimeoutSeconds = 10;
  auto gpu = cuda::makeCudaExecutor(o);
  std::printf("# %s\n", gpu->description().c_str());

  const std::vector<uint64_t> sizes = quick ? std::vector<uint64_t>{1 << 10, 64 << 10}
                                            : std::vector<uint64_t>{1 << 10, 64 << 10, 4 << 20};
  const std::vector<plan::DataType> types = quick ? std::vector<plan::DataType>{plan::DataType::Float32}
                                                  : std::vector<plan::DataType>{plan::DataType::Float16, plan::DataType::BFloat16,
                                                                                plan::DataType::Float32, plan::DataType::Int32};
  unsigned passed = 0, failed = 0, skipped = 0, racy = 0;
  for (const fs::path &path : plans) {
    plan::Plan p = plan::readPlanFile(path.string());
    const plan::Gpu &g0 = p.gpus[0];
    const uint64_t A = p.bufferAlignment;
    const uint64_t most = std::max<uint64_t>({g0.inputChunks, g0.outputChunks, g0.scratchChunks, 1});
    for (uint64_t target : sizes) {
      uint64_t c = std::max<uint64_t>(A, target / most / A * A);
      Case base;
      if (g0.inputChunks || g0.outputChunks) {
        base.inputBytes = g0.inputChunks * c;
        base.outputBytes = g0.outputChunks * c;
      } else {
        base.inputBytes = g0.scratchChunks * c;
      }
      uint64_t m = runtime::rangeCheckedSize(p, base.inputBytes, base.outputBytes);
      if (m < p.minMessageSize || m > p.maxMessageSize) continue;
      for (plan::DataType t : types)
        for (int inPlace = 0; inPlace < 2; ++inPlace)
          for (int ll8 = 0; ll8 < (p.protocol == "LL" && !quick ? 2 : 1); ++ll8) {
            Case cs = base;
            cs.type = t;
            cs.inPlace = inPlace;
            cs.packet = ll8 ? runtime::PacketType::LL8 : runtime::PacketType::LL16;
            uint64_t tot, io, oo;
            if (inPlace && !inPlaceLayout(p, cs, 0, tot, io, oo)) continue;
            char label[512];
            std::snprintf(label, sizeof label, "%s in=%llu out=%llu %s %s %s", path.filename().c_str(),
                          (unsigned long long)cs.inputBytes, (unsigned long long)cs.outputBytes,
                          std::string(plan::dataTypeName(t)).c_str(), inPlace ? "in-place" : "out-of-place",
                          ll8 ? "LL8" : "LL16");
            std::vector<std::vector<uint8_t>> want, got;
            try {
              want = runOn(*cpu, p, cs);
            } catch (const runtime::ExecutionError &e) {
              if (e.summary().rfind("data races", 0) == 0) {
                std::printf("racy  %s: no defined result: %s\n", label,
                            e.diagnostics().empty() ? e.summary().c_str() : e.diagnostics()[0].c_str());
                ++racy;
              } else {
                std::printf("skip  %s: the CPU executor refuses it: %s\n", label, e.what());
                ++skipped;
              }
              continue;
            }
            try {
              got = runOn(*gpu, p, cs);
            } catch (const std::exception &e) {
              std::printf("FAIL  %s: %s\n", label, e.what());
              ++failed;
              continue;
            }
            bool ok = want.size() == got.size();
            for (size_t k = 0; ok && k < want.size(); ++k)
              if (want[k] != got[k]) {
                size_t i = 0;
                while (i < want[k].size() && want[k][i] == got[k][i]) ++i;
                std::printf("FAIL  %s: buffer %zu differs from the CPU executor first at byte %zu\n", label, k, i);
                ok = false;
              }
            if (ok) ++passed;
            else ++failed;
          }
    }
  }
  std::printf("%u passed, %u failed, %u racy (not compared), %u skipped (CPU refused)\n", passed, failed, racy, skipped);
  return failed ? 1 : 0;
}
