//===- ElementsTest.cpp - Element conversions and reductions -----------------------------===//
#include "msccl/runtime/Elements.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

using namespace msccl::plan;
using namespace msccl::runtime;

TEST_CASE("float16 conversions round to nearest even", "[elements]") {
  CHECK(floatToHalf(1.0f) == 0x3c00);
  CHECK(floatToHalf(-2.0f) == 0xc000);
  CHECK(floatToHalf(65504.0f) == 0x7bff);
  CHECK(floatToHalf(70000.0f) == 0x7c00);             // overflow -> inf
  CHECK(floatToHalf(1.0f + 1.0f / 2048) == 0x3c00);   // tie -> even
  CHECK(floatToHalf(1.0f + 3.0f / 2048) == 0x3c02);   // tie -> even (up)
  CHECK(halfToFloat(0x0001) == Approx(5.9604645e-8f)); // smallest subnormal
  CHECK(floatToHalf(5.9604645e-8f) == 0x0001);
  for (uint32_t h = 0; h < 0x7c00; h += 7)
    CHECK(floatToHalf(halfToFloat(uint16_t(h))) == h);
}

TEST_CASE("bfloat16 conversions", "[elements]") {
  CHECK(floatToBfloat16(1.0f) == 0x3f80);
  CHECK(bfloat16ToFloat(0x4040) == 3.0f);
  CHECK(floatToBfloat16(1.0f + 1.0f / 256) == 0x3f80); // tie -> even
}

TEST_CASE("reductions per type and operator", "[elements]") {
  std::vector<int32_t> a{1, -5, 7, 0}, b{2, 3, -9, 0}, d(4);
  reduceElements(d.data(), a.data(), b.data(), 16, DataType::Int32, ReduceOp::Sum);
  CHECK(d == std::vector<int32_t>{3, -2, -2, 0});
  reduceElements(d.data(), a.data(), b.data(), 16, DataType::Int32, ReduceOp::Min);
  CHECK(d == std::vector<int32_t>{1, -5, -9, 0});
  reduceElements(d.data(), a.data(), b.data(), 16, DataType::Int32, ReduceOp::Max);
  CHECK(d == std::vector<int32_t>{2, 3, 7, 0});
  std::vector<uint8_t> x{250, 1}, y{10, 2}, z(2);
  reduceElements(z.data(), x.data(), y.data(), 2, DataType::UInt8, ReduceOp::Sum);
  CHECK(z == std::vector<uint8_t>{4, 3}); // wraps mod 256
  std::vector<uint16_t> h{floatToHalf(1.5f), floatToHalf(-2.0f)}, k{floatToHalf(2.25f), floatToHalf(8.0f)}, o(2);
  reduceElements(o.data(), h.data(), k.data(), 4, DataType::Float16, ReduceOp::Sum);
  CHECK(halfToFloat(o[0]) == 3.75f);
  CHECK(halfToFloat(o[1]) == 6.0f);
  reduceElements(o.data(), h.data(), k.data(), 4, DataType::Float16, ReduceOp::Max);
  CHECK(halfToFloat(o[1]) == 8.0f);
}

TEST_CASE("ncclAvg's division and a PreMulSum's scale after the sum", "[elements]") {
  std::vector<int32_t> i{7, -7, 8, 0};
  divideElements(i.data(), 4, DataType::Int32, 4);
  CHECK(i == std::vector<int32_t>{1, -1, 2, 0}); // truncated toward zero, as NCCL's SumPostDiv
  std::vector<uint8_t> u{255, 3};
  divideElements(u.data(), 2, DataType::UInt8, 2);
  CHECK(u == std::vector<uint8_t>{127, 1});
  std::vector<float> f{6.f, 1.f};
  divideElements(f.data(), 2, DataType::Float32, 4);
  CHECK(f == std::vector<float>{1.5f, 0.25f});
  std::vector<uint16_t> h{floatToHalf(3.f)};
  scaleElements(h.data(), 1, DataType::Float16, 0.5);
  CHECK(halfToFloat(h[0]) == 1.5f);
  std::vector<int32_t> j{5, -5};
  scaleElements(j.data(), 2, DataType::Int32, 0.5);
  CHECK(j == std::vector<int32_t>{2, -2});
}
