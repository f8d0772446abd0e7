//===- Elements.cpp - Element types and reductions on host memory ------------------------===//
//
// Conversions between float and the 16-bit float types, and the element-wise reduction loops
// (written so the compiler vectorises the float32/int32 paths). See Elements.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Elements.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace msccl::runtime {
using plan::DataType;
using plan::ReduceOp;

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal
      float f = std::ldexp(float(mant), -24);
      return sign ? -f : f;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or nan
    return uint16_t(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
  if (absx >= 0x477ff000u) // rounds to >= 65520 -> inf
    return uint16_t(sign | 0x7c00);
  if (absx < 0x38800000u) { // subnormal or zero in half
    float a;
    std::memcpy(&a, &absx, 4);
    float scaled = a * 16777216.0f; // 2^24
    uint32_t m = uint32_t(std::nearbyint(scaled));
    return uint16_t(sign | m);
  }
  uint32_t exp = (absx >> 23) - 112;
  uint32_t mant = absx & 0x7fffff;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    ++h;
  return uint16_t(sign | h);
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return uint16_t((x + rounding) >> 16);
}

double reduceValues(double a, double b, ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum: return a + b;
  case ReduceOp::Min: return std::min(a, b);
  case ReduceOp::Max: return std::max(a, b);
  }
  return a + b;
}

namespace {
template <typename T, typename F>
void loop(void *dst, const void *a, const void *b, size_t n, F f) {
  // Element loads and stores through memcpy: a hostile plan's offsets need not be element-aligned
  // (found by msccl-fuzz-cpu: a misaligned float load); the compiler makes them plain moves.
  auto *d = static_cast<unsigned char *>(dst);
  const auto *x = static_cast<const unsigned char *>(a), *y = static_cast<const unsigned char *>(b);
  for (size_t i = 0; i < n; ++i) {
    T p, q;
    std::memcpy(&p, x + i * sizeof(T), sizeof(T));
    std::memcpy(&q, y + i * sizeof(T), sizeof(T));
    const T r = f(p, q);
    std::memcpy(d + i * sizeof(T), &r, sizeof(T));
  }
}

template <typename T>
void reduceNative(void *dst, const void *a, const void *b, size_t n, ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    // Integers wrap as they do on the GPU (two's complement), never signed overflow: timed
    // iterations of an in-place reduction re-reduce their own sums (found by UBSan at 256 ranks).
    if constexpr (std::is_integral_v<T>)
      loop<T>(dst, a, b, n, [](T p, T q) { return T(std::make_unsigned_t<T>(p) + std::make_unsigned_t<T>(q)); });
    else
      loop<T>(dst, a, b, n, [](T p, T q) { return T(p + q); });
    break;
  case ReduceOp::Min: loop<T>(dst, a, b, n, [](T p, T q) { return q < p ? q : p; }); break;
  case ReduceOp::Max: loop<T>(dst, a, b, n, [](T p, T q) { return p < q ? q : p; }); break;
  }
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void reduce16(void *dst, const void *a, const void *b, size_t n, ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum: loop<uint16_t>(dst, a, b, n, [](uint16_t p, uint16_t q) { return FromF(ToF(p) + ToF(q)); }); break;
  case ReduceOp::Min: loop<uint16_t>(dst, a, b, n, [](uint16_t p, uint16_t q) { return FromF(std::fmin(ToF(p), ToF(q))); }); break;
  case ReduceOp::Max: loop<uint16_t>(dst, a, b, n, [](uint16_t p, uint16_t q) { return FromF(std::fmax(ToF(p), ToF(q))); }); break;
  }
}
} // namespace

void reduceElements(void *dst, const void *a, const void *b, size_t bytes, DataType type, ReduceOp op) {
  switch (type) {
  case DataType::Float32: reduceNative<float>(dst, a, b, bytes / 4, op); break;
  case DataType::Int32: reduceNative<int32_t>(dst, a, b, bytes / 4, op); break;
  case DataType::UInt32: reduceNative<uint32_t>(dst, a, b, bytes / 4, op); break;
  case DataType::UInt8: reduceNative<uint8_t>(dst, a, b, bytes, op); break;
  case DataType::Float16: reduce16<halfToFloat, floatToHalf>(dst, a, b, bytes / 2, op); break;
  case DataType::BFloat16: reduce16<bfloat16ToFloat, floatToBfloat16>(dst, a, b, bytes / 2, op); break;
  }
}

double loadElement(const void *base, size_t index, DataType type) {
  const auto *p = static_cast<const uint8_t *>(base);
  switch (type) {
  case DataType::Float32: { float v; std::memcpy(&v, p + 4 * index, 4); return v; }
  case DataType::Int32: { int32_t v; std::memcpy(&v, p + 4 * index, 4); return v; }
  case DataType::UInt32: { uint32_t v; std::memcpy(&v, p + 4 * index, 4); return v; }
  case DataType::UInt8: return p[index];
  case DataType::Float16: { uint16_t v; std::memcpy(&v, p + 2 * index, 2); return halfToFloat(v); }
  case DataType::BFloat16: { uint16_t v; std::memcpy(&v, p + 2 * index, 2); return bfloat16ToFloat(v); }
  }
  return 0;
}

void storeElement(void *base, size_t index, DataType type, double value) {
  auto *p = static_cast<uint8_t *>(base);
  switch (type) {
  case DataType::Float32: { float v = float(value); std::memcpy(p + 4 * index, &v, 4); break; }
  case DataType::Int32: { int32_t v = int32_t(int64_t(value)); std::memcpy(p + 4 * index, &v, 4); break; }
  case DataType::UInt32: { uint32_t v = uint32_t(int64_t(value)); std::memcpy(p + 4 * index, &v, 4); break; }
  case DataType::UInt8: p[index] = uint8_t(int64_t(value)); break;
  case DataType::Float16: { uint16_t v = floatToHalf(float(value)); std::memcpy(p + 2 * index, &v, 2); break; }
  case DataType::BFloat16: { uint16_t v = floatToBfloat16(float(value)); std::memcpy(p + 2 * index, &v, 2); break; }
  }
}

void divideElements(void *data, size_t count, DataType type, uint32_t n) {
  auto *p = static_cast<uint8_t *>(data);
  for (size_t i = 0; i < count; ++i)
    switch (type) {
    case DataType::Int32: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      v = int32_t(int64_t(v) / int64_t(n));
      std::memcpy(p + 4 * i, &v, 4);
      break;
    }
    case DataType::UInt32: {
      uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      v /= n;
      std::memcpy(p + 4 * i, &v, 4);
      break;
    }
    case DataType::UInt8: p[i] = uint8_t(p[i] / n); break;
    case DataType::Float32:
    case DataType::Float16:
    case DataType::BFloat16: storeElement(data, i, type, loadElement(data, i, type) / double(n)); break;
    }
}

void scaleElements(void *data, size_t count, DataType type, double factor) {
  for (size_t i = 0; i < count; ++i) {
    const double v = loadElement(data, i, type) * factor;
    storeElement(data, i, type, type == DataType::Float32 || type == DataType::Float16 || type == DataType::BFloat16
                                    ? v
                                    : std::trunc(v));
  }
}

} // namespace msccl::runtime
