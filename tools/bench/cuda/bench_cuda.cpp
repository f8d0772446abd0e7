// msccl-bench-cuda: figures of the CUDA executor (virtual ranks on GPU 0).
//   1. copy-only and reduce-only bandwidth at 1 GiB (one rank, one threadblock per SM, tbg
//      split), against the HBM peak computed from the device's memory clock and bus width;
//   2. time per launch of an 8 KiB LL all-pairs AllReduce over 8 virtual ranks;
//   3. busbw of AllReduce plans (LL all-pairs, Simple all-pairs) over 8 virtual ranks.
// Every synthetic plan is first checked on the CPU reference executor (always, also without a
// GPU), and each timed plan's result is checked once on the GPU. Without a GPU or driver the
// measurements are skipped (exit 77).
//   msccl-bench-cuda [--quick | --check-plans]   (--check-plans: only the CPU check; exit 0/1)
#include "BenchPlans.h"

#include "msccl/cuda/CudaExecutor.h"
#include "msccl/runtime/Elements.h"
#include "msccl/runtime/Executor.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace msccl;

namespace {

struct Rig {
  runtime::Executor &ex;
  const plan::Plan &plan;
  uint64_t inBytes, outBytes;
  std::vector<runtime::DeviceBuffer> in, out;

  Rig(runtime::Executor &e, const plan::Plan &p, uint64_t inB, uint64_t outB) : ex(e), plan(p), inBytes(inB), outBytes(outB) {
    for (size_t r = 0; r < p.gpus.size(); ++r) {
      in.push_back(ex.allocate(inB));
      out.push_back(ex.allocate(outB));
    }
  }
  ~Rig() {
    for (auto &b : in) ex.release(b);
    for (auto &b : out) ex.release(b);
  }
  runtime::ExecuteResult run(unsigned iters, unsigned warmup, plan::DataType t = plan::DataType::Float32) {
    runtime::ExecuteRequest q;
    q.plan = &plan;
    for (size_t r = 0; r < in.size(); ++r) q.buffers.push_back({in[r].ptr, out[r].ptr});
    q.inputBytes = inBytes;
    q.outputBytes = outBytes;
    q.dataType = t;
    q.iterations = iters;
    q.warmupIterations = warmup;
    return ex.execute(q);
  }
  /// Input of rank r element i = r + i % 7 (float32); returns the max error of output vs `expect`.
  double check(double (*expect)(size_t rank, size_t i, size_t nranks, uint64_t inElems)) {
    const size_t n = in.size();
    std::vector<float> h(inBytes / 4);
    for (size_t r = 0; r < n; ++r) {
      for (size_t i = 0; i < h.size(); ++i) h[i] = float(r + i % 7);
      ex.upload(in[r].ptr, h.data(), inBytes);
      std::vector<float> z(outBytes / 4, 0.f);
      ex.upload(out[r].ptr, z.data(), outBytes);
    }
    run(1, 0);
    double err = 0;
    std::vector<float> o(outBytes / 4);
    for (size_t r = 0; r < n; ++r) {
      ex.download(o.data(), out[r].ptr, outBytes);
      for (size_t i = 0; i < o.size(); ++i) err = std::max(err, std::fabs(o[i] - expect(r, i, n, inBytes / 4)));
    }
    return err;
  }
};

double expectCopy(size_t r, size_t i, size_t, uint64_t) { return double(r + i % 7); }
double expectReduce(size_t r, size_t i, size_t, uint64_t) { return double(r + i % 7); } // output starts at 0
double expectAllReduce(size_t, size_t i, size_t n, uint64_t) { return double(n * (n - 1) / 2 + n * (i % 7)); }

/// Bytes read + written per second of cudaMemcpyAsync between two device buffers of `bytes`
/// (events around `reps` copies after one warm-up); 0 when an allocation fails.
double measuredDeviceCopy(uint64_t bytes, unsigned reps) {
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
    cudaFree(a);
    cudaGetLastError();
    return 0;
  }
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
  cudaEventRecord(t0, 0);
  for (unsigned i = 0; i < reps; ++i) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
  cudaEventRecord(t1, 0);
  cudaEventSynchronize(t1);
  float ms = 0;
  cudaEventElapsedTime(&ms, t0, t1);
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaFree(a);
  cudaFree(b);
  return ms > 0 ? 2.0 * bytes * reps / (ms * 1e-3) / 1e9 : 0;
}

bool verifyOnCpu(runtime::Executor &cpu) {
  bool ok = true;
  struct Item { const char *what; plan::Plan p; uint64_t in, out; double (*e)(size_t, size_t, size_t, uint64_t); };
  std::vector<Item> items = {
      {"copy", bench::copyPlan(4), 4096, 4096, expectCopy},
      {"reduce", bench::reducePlan(4), 4096, 4096, expectReduce},
      {"LL all-pairs allreduce (8 ranks)", bench::allPairsPacketAllReduce(8), 8192, 8192, expectAllReduce},
      {"Simple all-pairs allreduce (8 ranks, 2 tbs)", bench::allPairsAllReduce(8, 2), 8192, 8192, expectAllReduce},
  };
  for (Item &it : items) {
    try {
      Rig rig(cpu, it.p, it.in, it.out);
      double err = rig.check(it.e);
      std::printf("# plan check on the CPU executor: %-44s %s\n", it.what, err == 0 ? "ok" : "WRONG");
      ok = ok && err == 0;
    } catch (const std::exception &e) {
      std::printf("# plan check on the CPU executor: %-44s FAILED: %s\n", it.what, e.what());
      ok = false;
    }
  }
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const bool checkOnly = argc > 1 && std::string(argv[1]) == "--check-plans";
  runtime::registerCpuExecutor();
  auto cpu = runtime::createExecutor("cpu");
  if (!verifyOnCpu(*cpu)) return 1;
  if (checkOnly) return 0;
  std::string why;
  if (!cuda::cudaUsable(&why)) {
    std::printf("SKIP: no GPU measurements: %s\n", why.c_str());
    return 77;
  }
  cuda::CudaOptions o;
  o.placement = cuda::Placement::VirtualRanks;
  auto gpu = cuda::makeCudaExecutor(o);
  int sms = 0, memClockKHz = 0, busBits = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&memClockKHz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&busBits, cudaDevAttrGlobalMemoryBusWidth, 0);
  const double peak = 2.0 * memClockKHz * 1e3 * busBits / 8 / 1e9; // GB/s, DDR
  std::printf("# %s\n# HBM peak (2 x memory clock x bus width): %.0f GB/s, %d SMs\n", gpu->description().c_str(), peak, sms);

  // 1. copy / reduce at 1 GiB, against the peak and a measured cudaMemcpy device-to-device copy.
  const uint64_t big = quick ? (64ull << 20) : (1ull << 30);
  const double d2d = measuredDeviceCopy(big, quick ? 3 : 20);
  std::printf("# cudaMemcpyAsync device-to-device, %.0f MiB: %.1f GB/s (bytes read + written), measured\n", big / 1048576.0, d2d);
  for (int reduce = 0; reduce < 2; ++reduce) {
    plan::Plan p = reduce ? bench::reducePlan(sms) : bench::copyPlan(sms);
    Rig rig(*gpu, p, big, big);
    double err = rig.check(reduce ? expectReduce : expectCopy);
    auto r = rig.run(quick ? 3 : 20, 2);
    const double bytes = (reduce ? 3.0 : 2.0) * big;
    const double gbs = bytes * (quick ? 3 : 20) / r.seconds / 1e9;
    std::printf("%-8s %6.0f MiB  %8.3f ms/launch  %7.1f GB/s  %5.1f%% of HBM peak  %5.1f%% of cudaMemcpy  %s\n",
                reduce ? "reduce" : "copy", big / 1048576.0, r.seconds / (quick ? 3 : 20) * 1e3, gbs, 100 * gbs / peak,
                d2d > 0 ? 100 * gbs / d2d : 0.0, err == 0 ? "" : "(WRONG RESULT)");
  }

  // 1b. The launch floor: a one-rank copy of 16 bytes (one kernel launch and a trivial op).
  {
    plan::Plan p = bench::copyPlan(1);
    Rig rig(*gpu, p, 16, 16);
    const unsigned n = quick ? 100 : 2000;
    auto r = rig.run(n, 100);
    std::printf("launch floor (1 rank, 1 tb, 16-byte copy): %.2f us per launch\n", r.seconds / n * 1e6);
  }

  // 2. 8 KiB LL all-pairs allreduce over 8 virtual ranks: time per launch.
  {
    plan::Plan p = bench::allPairsPacketAllReduce(8);
    Rig rig(*gpu, p, 8192, 8192);
    double err = rig.check(expectAllReduce);
    const unsigned n = quick ? 100 : 2000;
    auto r = rig.run(n, 100);
    std::printf("LL all-pairs allreduce, 8 virtual ranks, 8 KiB: %.2f us per launch %s\n", r.seconds / n * 1e6,
                err == 0 ? "" : "(WRONG RESULT)");
  }

  // 3. busbw over 8 virtual ranks.
  std::printf("%-34s %12s %12s %10s %10s\n", "# allreduce plan (8 virtual ranks)", "bytes", "time(us)", "algbw", "busbw");
  for (int simple = 0; simple < 2; ++simple) {
    std::vector<uint64_t> sizes = simple ? std::vector<uint64_t>{1 << 20, 16 << 20, 256 << 20}
                                         : std::vector<uint64_t>{8 << 10, 64 << 10, 1 << 20};
    if (quick) sizes.resize(2);
    for (uint64_t s : sizes) {
      plan::Plan p = simple ? bench::allPairsAllReduce(8, std::max(1, sms / 8)) : bench::allPairsPacketAllReduce(8);
      try {
        Rig rig(*gpu, p, s, s);
        double err = rig.check(expectAllReduce);
        const unsigned n = s >= (64u << 20) ? 10 : 200;
        auto r = rig.run(n, 5);
        const double t = r.seconds / n, algbw = s / t / 1e9, busbw = algbw * 2 * 7 / 8;
        std::printf("%-34s %12llu %12.2f %10.2f %10.2f %s\n", simple ? "Simple all-pairs" : "LL all-pairs", (unsigned long long)s,
                    t * 1e6, algbw, busbw, err == 0 ? "" : "(WRONG RESULT)");
      } catch (const std::exception &e) {
        std::printf("%-34s %12llu  error: %s\n", simple ? "Simple all-pairs" : "LL all-pairs", (unsigned long long)s, e.what());
      }
    }
  }
  std::printf("# busbw here is NVLink-free: all ranks share one GPU's HBM (algbw x 2(n-1)/n, as nccl-tests)\n");
  return 0;
}
