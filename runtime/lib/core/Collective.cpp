//===- Collective.cpp - Message sizes, test data and verification of collectives ---------===//
//
// See Collective.h. Expected values are computed in double from inputValue, which is exact.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Collective.h"

#include "msccl/runtime/Elements.h"

#include <algorithm>
#include <cmath>

namespace msccl::runtime {
using namespace msccl::plan;

CollectiveKind collectiveKind(const std::string &c) {
  if (c == "allreduce") return CollectiveKind::AllReduce;
  if (c == "allgather") return CollectiveKind::AllGather;
  if (c == "reducescatter") return CollectiveKind::ReduceScatter;
  if (c == "alltoall") return CollectiveKind::AllToAll;
  if (c == "sendrecv") return CollectiveKind::SendRecv;
  return CollectiveKind::Other;
}

double busBandwidthFactor(CollectiveKind kind, uint32_t n) {
  if (n == 0)
    return 1;
  switch (kind) {
  case CollectiveKind::AllReduce: return 2.0 * (n - 1) / n;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll: return double(n - 1) / n;
  default: return 1;
  }
}

std::optional<MessageSizes> messageSizesFor(const Plan &plan, uint64_t size, std::string *whyNot) {
  auto fail = [&](const std::string &s) -> std::optional<MessageSizes> {
    if (whyNot)
      *whyNot = s;
    return std::nullopt;
  };
  if (plan.gpus.empty())
    return fail("the plan has no gpus");
  const Gpu &g = plan.gpus[0];
  uint64_t denom = std::max(g.inputChunks, g.outputChunks);
  const char *what = "max(input_chunks, output_chunks)";
  if (denom == 0) {
    denom = g.scratchChunks;
    what = "scratch_chunks";
  }
  const uint64_t A = plan.bufferAlignment ? plan.bufferAlignment : 1;
  if (denom == 0) {
    // No chunks at all: the size is irrelevant; keep S as S_in.
    return MessageSizes{size, 0};
  }
  if (size % (denom * A) != 0)
    return fail("size " + std::to_string(size) + " B is not a multiple of " + what + " (" + std::to_string(denom) +
                ") x buffer_alignment (" + std::to_string(A) + ")");
  uint64_t c = size / denom;
  MessageSizes ms;
  if (g.inputChunks == 0 && g.outputChunks == 0)
    ms.inputBytes = size; // scratch-only plan: S_in carries the size (Layout.h)
  else {
    ms.inputBytes = c * g.inputChunks;
    ms.outputBytes = c * g.outputChunks;
  }
  uint64_t m = plan.collective == "allgather" ? ms.outputBytes : ms.inputBytes;
  if (m < plan.minMessageSize)
    return fail("message size " + std::to_string(m) + " B is below the plan's min_message_size " +
                std::to_string(plan.minMessageSize));
  if (m > plan.maxMessageSize)
    return fail("message size " + std::to_string(m) + " B is above the plan's max_message_size " +
                std::to_string(plan.maxMessageSize));
  return ms;
}

double inputValue(uint32_t rank, uint64_t index, uint32_t nranks, DataType type) {
  uint64_t n = std::max<uint32_t>(nranks, 1);
  uint64_t period;
  switch (type) {
  case DataType::Float16: period = std::max<uint64_t>(2, 2048 / n); break;
  case DataType::BFloat16: period = std::max<uint64_t>(2, 256 / n); break;
  case DataType::UInt8: period = std::max<uint64_t>(2, 255 / n); break;
  default: period = 4096; break;
  }
  uint64_t h = uint64_t(rank) * 977 + index * 131 + (index / 128) * 29 + (index / 4096) * 7;
  return double(1 + h % (period - 1));
}

void fillInput(void *host, uint64_t bytes, uint32_t rank, uint32_t nranks, DataType type) {
  uint64_t count = bytes / dataTypeBytes(type);
  for (uint64_t i = 0; i < count; ++i)
    storeElement(host, i, type, inputValue(rank, i, nranks, type));
}

std::string VerifyResult::describe() const {
  if (!checked)
    return "not verified";
  std::string s = std::to_string(wrong) + " wrong of " + std::to_string(elements);
  if (wrong) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "; first: rank %lld element %llu expected %.6g got %.6g", (long long)firstRank,
                  (unsigned long long)firstIndex, expected, got);
    s += buf;
  }
  return s;
}

VerifyResult verifyRankOutput(CollectiveKind kind, uint32_t r, uint32_t n, const void *output, uint64_t inputBytes,
                              uint64_t outputBytes, DataType type, ReduceOp op) {
  VerifyResult res;
  if (kind == CollectiveKind::Other)
    return res;
  res.checked = true;
  const uint64_t es = dataTypeBytes(type);
  const uint64_t outCount = outputBytes / es, inCount = inputBytes / es;
  const bool isFloat16 = type == DataType::Float16 || type == DataType::BFloat16;
  auto reduceAt = [&](uint64_t index) {
    double acc = inputValue(0, index, n, type);
    for (uint32_t q = 1; q < n; ++q)
      acc = reduceValues(acc, inputValue(q, index, n, type), op);
    if (type == DataType::UInt8)
      acc = double(uint64_t(acc) % 256);
    return acc;
  };
  for (uint64_t i = 0; i < outCount; ++i) {
    double exp = 0;
    switch (kind) {
    case CollectiveKind::AllReduce: exp = reduceAt(i); break;
    case CollectiveKind::AllGather: exp = inputValue(uint32_t(i / inCount), i % inCount, n, type); break;
    case CollectiveKind::ReduceScatter: exp = reduceAt(uint64_t(r) * outCount + i); break;
    case CollectiveKind::AllToAll: {
      uint64_t block = outCount / n;
      uint64_t s = i / block, j = i % block;
      exp = inputValue(uint32_t(s), uint64_t(r) * block + j, n, type);
      break;
    }
    case CollectiveKind::SendRecv: exp = inputValue((r + n - 1) % n, i, n, type); break;
    case CollectiveKind::Other: break;
    }
    double got = loadElement(output, i, type);
    bool ok = isFloat16 ? std::fabs(got - exp) <= 1e-2 * std::fabs(exp) : got == exp;
    res.elements++;
    if (!ok) {
      if (res.wrong == 0) {
        res.firstRank = r;
        res.firstIndex = i;
        res.expected = exp;
        res.got = got;
      }
      res.wrong++;
    }
  }
  return res;
}

VerifyResult verifyOutputs(CollectiveKind kind, const std::vector<const void *> &outputs, uint64_t inputBytes,
                           uint64_t outputBytes, DataType type, ReduceOp op) {
  VerifyResult res;
  if (kind == CollectiveKind::Other)
    return res;
  res.checked = true;
  const uint32_t n = uint32_t(outputs.size());
  for (uint32_t r = 0; r < n; ++r) {
    VerifyResult one = verifyRankOutput(kind, r, n, outputs[r], inputBytes, outputBytes, type, op);
    if (one.wrong && res.wrong == 0) {
      res.firstRank = one.firstRank;
      res.firstIndex = one.firstIndex;
      res.expected = one.expected;
      res.got = one.got;
    }
    res.wrong += one.wrong;
    res.elements += one.elements;
  }
  return res;
}

std::optional<ReduceOp> planReduceOp(const Plan &plan, bool *conflict) {
  std::optional<ReduceOp> found;
  bool clash = false;
  std::vector<const Op *> stack;
  for (const Gpu &g : plan.gpus)
    for (const Threadblock &tb : g.threadblocks)
      for (const Op &op : tb.ops)
        stack.push_back(&op);
  while (!stack.empty()) {
    const Op *op = stack.back();
    stack.pop_back();
    for (const Op &inner : op->ops)
      stack.push_back(&inner);
    if (op->reduceOp) {
      if (found && *found != *op->reduceOp)
        clash = true;
      found = op->reduceOp;
    }
  }
  if (conflict)
    *conflict = clash;
  if (clash)
    return std::nullopt;
  return found;
}

} // namespace msccl::runtime
