//===- Elements.h - Element types and reductions on host memory --------------------------===//
//
// Consumes raw bytes plus a run-time element type (float16, bfloat16, float32, int32, uint32,
// uint8) and a reduction operator (sum, min, max); produces element-wise results. float16 and
// bfloat16 are computed in float and rounded to nearest-even, which is the correctly rounded
// result of the GPU's __hadd2/__hmin2/... for two operands. Integer sums wrap (uint8 mod 256).
// Used by the CPU executor's reductions and by collective verification.
//
// Mirrors: mscclpp src/core/include/reduce_kernel.hpp (lane-wise add/min in the element type).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <cstddef>
#include <cstdint>

namespace msccl::runtime {

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);          ///< Round to nearest even; overflow -> inf.
float bfloat16ToFloat(uint16_t b);
uint16_t floatToBfloat16(float f);      ///< Round to nearest even.

/// dst[i] = a[i] (op) b[i] over `bytes` bytes of elements of `type` (bytes is a multiple of the
/// element size; a trailing partial element is left untouched). dst may alias a or b exactly.
void reduceElements(void *dst, const void *a, const void *b, size_t bytes, plan::DataType type, plan::ReduceOp op);

/// Element `index` of `base` as a double (exact for every supported type).
double loadElement(const void *base, size_t index, plan::DataType type);
/// Store `value` (rounded/converted to the type) as element `index` of `base`.
void storeElement(void *base, size_t index, plan::DataType type, double value);

/// Apply `op` to two doubles (the reference semantics of one lane).
double reduceValues(double a, double b, plan::ReduceOp op);

/// ncclAvg after a sum, as NCCL's SumPostDiv: each of `count` elements of `data` divided by `n`
/// (n > 0): integers in their own type (truncated toward zero, after the wrapping sum), float
/// types in double and rounded to the type (NCCL pre-multiplies floats by 1/n instead: the same
/// when the sum is exact and n a power of two, else within one rounding).
void divideElements(void *data, size_t count, plan::DataType type, uint32_t n);
/// Each of `count` elements of `data` multiplied by `factor` in double and rounded (integers
/// truncated toward zero): a PreMulSum's scalar applied after the sum (exact when every rank's
/// scalar is the same and the products are representable).
void scaleElements(void *data, size_t count, plan::DataType type, double factor);

} // namespace msccl::runtime
