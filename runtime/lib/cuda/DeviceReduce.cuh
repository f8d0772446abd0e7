//===- DeviceReduce.cuh - Lane-wise reduction of 32-bit words (device only) -------------===//
//
// combine<DT, OP>(a, b) reduces the elements packed in two 32-bit words: two float16 or
// bfloat16 lanes (__hadd2/__hmin2/__hmax2, correctly rounded as the CPU executor's
// Elements.h), one float32, one int32/uint32 (sums wrap) or four uint8 lanes (mod 256).
// DT is a msccl::plan::DataType value, OP a msccl::plan::ReduceOp value. Every reduction of
// the interpreter is built from this one function over 16-byte vectors (4 words), LL16
// payloads (2 words) or LL8 payloads (1 word).
//
// Mirrors: mscclpp src/core/include/reduce_kernel.hpp (add/min on half2, bf16x2, int, ...).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "DevicePrimitives.cuh"

#include "msccl/plan/Plan.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace msccl::cuda::dev {

constexpr int kF16 = (int)plan::DataType::Float16, kBF16 = (int)plan::DataType::BFloat16,
              kF32 = (int)plan::DataType::Float32, kI32 = (int)plan::DataType::Int32,
              kU32 = (int)plan::DataType::UInt32, kU8 = (int)plan::DataType::UInt8;
constexpr int kSum = (int)plan::ReduceOp::Sum, kMin = (int)plan::ReduceOp::Min, kMax = (int)plan::ReduceOp::Max;

template <class T> __device__ __forceinline__ T asType(uint32_t w) {
  T v;
  memcpy(static_cast<void *>(&v), &w, sizeof v);
  return v;
}
template <class T> __device__ __forceinline__ uint32_t asWord(T v) {
  uint32_t w;
  memcpy(&w, &v, sizeof w);
  return w;
}

template <int DT, int OP> __device__ __forceinline__ uint32_t combine(uint32_t a, uint32_t b) {
  if constexpr (DT == kF16) {
    __half2 x = asType<__half2>(a), y = asType<__half2>(b);
    return asWord(OP == kSum ? __hadd2(x, y) : OP == kMin ? __hmin2(x, y) : __hmax2(x, y));
  } else if constexpr (DT == kBF16) {
    __nv_bfloat162 x = asType<__nv_bfloat162>(a), y = asType<__nv_bfloat162>(b);
    return asWord(OP == kSum ? __hadd2(x, y) : OP == kMin ? __hmin2(x, y) : __hmax2(x, y));
  } else if constexpr (DT == kF32) {
    float x = wordAsFloat(a), y = wordAsFloat(b);
    return floatAsWord(OP == kSum ? x + y : OP == kMin ? fminf(x, y) : fmaxf(x, y));
  } else if constexpr (DT == kI32) {
    int x = (int)a, y = (int)b;
    return OP == kSum ? a + b : (uint32_t)(OP == kMin ? min(x, y) : max(x, y));
  } else if constexpr (DT == kU32) {
    return OP == kSum ? a + b : OP == kMin ? min(a, b) : max(a, b);
  } else {
    return OP == kSum ? vadd4(a, b) : OP == kMin ? vminu4(a, b) : vmaxu4(a, b);
  }
}

/// Calls f.template operator()<DT, OP>() for the run-time (dataType, reduceOp).
template <class F> __device__ __forceinline__ void dispatchReduce(int dataType, int reduceOp, const F &f) {
#define MSCCL_REDUCE_CASE(DT)                                                                                           \
  case DT:                                                                                                              \
    if (reduceOp == kMin) f.template operator()<DT, kMin>();                                                            \
    else if (reduceOp == kMax) f.template operator()<DT, kMax>();                                                       \
    else f.template operator()<DT, kSum>();                                                                             \
    return;
  switch (dataType) {
    MSCCL_REDUCE_CASE(kF16)
    MSCCL_REDUCE_CASE(kBF16)
    MSCCL_REDUCE_CASE(kF32)
    MSCCL_REDUCE_CASE(kI32)
    MSCCL_REDUCE_CASE(kU32)
    MSCCL_REDUCE_CASE(kU8)
  default: return;
  }
#undef MSCCL_REDUCE_CASE
}

} // namespace msccl::cuda::dev
