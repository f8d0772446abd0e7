//===- Collective.cpp - Message sizes, test data and verification of collectives ---------===//
//
// See Collective.h. Expected values are computed in double from inputValue, which is exact.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Collective.h"

#include "msccl/runtime/Counts.h"
#include "msccl/runtime/Elements.h"
#include "msccl/runtime/UnevenChunks.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace msccl::runtime {
using namespace msccl::plan;

namespace {
constexpr bool Yes_ = true, No_ = false; // the Dsl column
enum class BusBw : uint8_t { TwoNm1OverN, Nm1OverN, One };
enum class Traffic : uint8_t { RsAg, Gather, Scatter, Exchange, Whole, Unknown };
enum class Output : uint8_t { SumAll, SumBlock, Gather, Transpose, FromPrev, FromRoot, RootSum, Unknown };
struct CollectiveRow {
  CollectiveKind kind;
  std::string_view name;
  Reduces reduces;
  BusBw busBw;
  Blocks in, out;
  InPlace inPlace;
  Traffic traffic;
  Output output;
  std::string_view nccl;
  DslClass dsl;
};
constexpr CollectiveRow kCollectives[] = {
#define MSCCL_COLLECTIVE(Kind, Name, R, B, I, O, P, T, Out, Nccl, Dsl, DslIn, DslOut)                              \
  {CollectiveKind::Kind, Name, Reduces::R, BusBw::B, Blocks::I, Blocks::O, InPlace::P, Traffic::T, Output::Out, Nccl, \
   DslClass{Dsl##_, DslChunks::DslIn, DslChunks::DslOut}},
#include "msccl/runtime/Collectives.def"
};
const CollectiveRow &row(CollectiveKind kind) { return kCollectives[size_t(kind)]; }
} // namespace

CollectiveKind collectiveKind(const std::string &c) {
  for (const CollectiveRow &r : kCollectives)
    if (r.kind != CollectiveKind::Other && r.name == c)
      return r.kind;
  return CollectiveKind::Other;
}

std::string_view collectiveName(CollectiveKind kind) { return row(kind).name; }

DslClass collectiveDslClass(CollectiveKind kind) { return row(kind).dsl; }

Reduces collectiveReduces(CollectiveKind kind) { return row(kind).reduces; }

BufferBlocks collectiveBlocks(CollectiveKind kind) { return {row(kind).in, row(kind).out}; }

InPlace collectiveInPlace(CollectiveKind kind) { return row(kind).inPlace; }

CollectiveTraffic collectiveTraffic(CollectiveKind kind, uint32_t nranks, uint32_t nodes, bool switchReduces) {
  if (nranks < 2)
    return {};
  const double n = nranks, N = std::max<uint32_t>(nodes, 1), g = n / N;
  const double part = (n - 1) / n, nodePart = N > 1 ? (N - 1) / N : 0;
  switch (row(kind).traffic) {
  // AllReduce: a reduce-scatter and an all-gather's worth each way (Patarasuk and Yuan). With
  // in-switch reduction, S each way: every other rank's output depends on every element of this
  // rank's input and a transfer carries one element's (partial) value, so each element leaves
  // the rank at least once, its own block's too (as the sum, or as its term of it); likewise
  // every element of its output needs something from outside. Not (n-1)/n: a rank that keeps
  // its own block back must still send that block's sum out.
  case Traffic::RsAg: return {switchReduces ? 1.0 : 2 * part, 2 * nodePart};
  // AllGather (S = the output): every rank receives the n-1 blocks it lacks, every node the
  // other nodes' parts. ReduceScatter (S = the input): every rank sends the n-1 blocks others
  // reduce, every node the other nodes' parts, reduced inside the node first.
  case Traffic::Gather:
  case Traffic::Scatter: return {part, nodePart};
  // AllToAll: every rank sends a block to each peer; each of a node's g ranks sends the blocks of
  // the n - g ranks elsewhere.
  case Traffic::Exchange: return {part, N > 1 ? g * (n - g) / n : 0};
  // The root (the sender) moves the whole message once, and once out of its node.
  case Traffic::Whole: return {1, N > 1 ? 1.0 : 0.0};
  case Traffic::Unknown: break;
  }
  return {};
}

std::vector<double> cutTraffic(CollectiveKind kind, uint32_t nranks, uint32_t inside, bool rootInside) {
  if (inside == 0 || inside >= nranks)
    return {};
  const double n = nranks, a = inside;
  switch (row(kind).traffic) {
  // AllReduce with reductions on GPUs: its reduce-scatter's share, then its all-gather's.
  case Traffic::RsAg: return {(n - a) / n, a / n};
  // AllGather: the outside needs the inside's blocks. ReduceScatter: the outside's blocks need
  // the inside's terms (summed inside first).
  case Traffic::Gather: return {a / n};
  case Traffic::Scatter: return {(n - a) / n};
  // AllToAll: every inside rank's block for every outside rank.
  case Traffic::Exchange: return {a * (n - a) / n};
  // The root's message reaches the outside once.
  case Traffic::Whole: return {rootInside ? 1.0 : 0.0};
  case Traffic::Unknown: break;
  }
  return {};
}

InPlaceLayout inPlaceLayout(CollectiveKind kind, uint32_t rank, uint64_t in, uint64_t out) {
  switch (row(kind).inPlace) {
  case InPlace::InputInOutput: return {uint64_t(rank) * in, 0, out};
  case InPlace::OutputInInput: return {0, uint64_t(rank) * out, in};
  case InPlace::Same:
  case InPlace::Unknown: break;
  }
  return {0, 0, std::max(in, out)};
}

std::string_view inPlaceRule(CollectiveKind kind) {
  switch (row(kind).inPlace) {
  case InPlace::InputInOutput: return "send == recv + rank * send_bytes";
  case InPlace::OutputInInput: return "recv == send + rank * recv_bytes";
  case InPlace::Same:
  case InPlace::Unknown: break;
  }
  return "send == recv";
}

OutputSource outputSource(CollectiveKind kind, uint32_t n, uint32_t rank, uint64_t in, uint64_t out, uint64_t u) {
  OutputSource s;
  auto one = [&](uint32_t from, uint64_t index, uint64_t run) {
    s.from = OutputSource::From::OneRank, s.rank = from, s.index = index, s.run = std::max<uint64_t>(run, 1);
    return s;
  };
  auto all = [&](uint64_t index) {
    s.from = OutputSource::From::AllRanks, s.index = index, s.run = std::max<uint64_t>(out - u, 1);
    return s;
  };
  switch (row(kind).output) {
  case Output::SumAll: return all(u);
  case Output::SumBlock: return all(uint64_t(rank) * out + u);
  case Output::Gather: return in == 0 ? s : one(uint32_t(u / in), u % in, in - u % in);
  case Output::Transpose: {
    const uint64_t block = n ? out / n : 0;
    return block == 0 ? s : one(uint32_t(u / block), uint64_t(rank) * block + u % block, block - u % block);
  }
  case Output::FromPrev: return one(n ? (rank + n - 1) % n : 0, u, out - u);
  case Output::FromRoot: return one(0, u, out - u);
  case Output::RootSum: return rank == 0 ? all(u) : s;
  case Output::Unknown: break;
  }
  return s;
}

bool outputShapeFits(CollectiveKind kind, uint32_t n, uint64_t in, uint64_t out, uint64_t align) {
  switch (row(kind).output) {
  case Output::Gather: return in > 0 && out == in * n;
  case Output::SumBlock: return in == out * n;
  case Output::Transpose: return in == out && out % (uint64_t(n) * std::max<uint64_t>(align, 1)) == 0;
  case Output::SumAll: case Output::FromPrev: case Output::FromRoot: case Output::RootSum: return in == out;
  case Output::Unknown: break;
  }
  return true;
}

bool outputDefinedOn(CollectiveKind kind, uint32_t rank) {
  const Output o = row(kind).output;
  return o != Output::Unknown && (o != Output::RootSum || rank == 0);
}

bool outputSameForAllRanks(CollectiveKind kind) {
  const Output o = row(kind).output;
  return o == Output::SumAll || o == Output::Gather || o == Output::FromRoot;
}

std::string_view ncclEntryPoint(CollectiveKind kind) { return row(kind).nccl; }

double busBandwidthFactor(CollectiveKind kind, uint32_t n) {
  if (n == 0)
    return 1;
  switch (row(kind).busBw) {
  case BusBw::TwoNm1OverN: return 2.0 * (n - 1) / n;
  case BusBw::Nm1OverN: return double(n - 1) / n;
  case BusBw::One: return 1;
  }
  return 1;
}

std::optional<MessageSizes> messageSizesFor(const Plan &plan, uint64_t size, std::string *whyNot) {
  return messageSizesFor(plan, size, 1, whyNot);
}

std::optional<MessageSizes> messageSizesFor(const Plan &plan, uint64_t size, uint64_t elementBytes,
                                            std::string *whyNot) {
  auto fail = [&](const std::string &s) -> std::optional<MessageSizes> {
    if (whyNot)
      *whyNot = s;
    return std::nullopt;
  };
  if (plan.gpus.empty())
    return fail("the plan has no gpus");
  if (plan.variableSizes)
    return fail(needsCountsMessage(plan));
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
  uint64_t unit = 0; // validatePlan bounds both factors; a plan that skipped it must not divide by a wrapped 0
  if (__builtin_mul_overflow(denom, A, &unit))
    return fail(std::string(what) + " (" + std::to_string(denom) + ") x buffer_alignment (" + std::to_string(A) +
                ") does not fit in 64 bits: no message size fits the plan");
  if (size % unit != 0) {
    const std::string even = "size " + std::to_string(size) + " B is not a multiple of " + what + " (" +
                             std::to_string(denom) + ") x buffer_alignment (" + std::to_string(A) + ")";
    if (g.inputChunks == 0 && g.outputChunks == 0)
      return fail(even);
    return unevenMessageSizes(plan, size, elementBytes, even, whyNot); // our extension: UnevenChunks.h
  }
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

namespace {
uint64_t inputPeriod(uint32_t nranks, DataType type) {
  uint64_t n = std::max<uint32_t>(nranks, 1);
  switch (type) {
  case DataType::Float16: return std::max<uint64_t>(2, 2048 / n);
  case DataType::BFloat16: return std::max<uint64_t>(2, 256 / n);
  case DataType::UInt8: return std::max<uint64_t>(2, 255 / n);
  default: return 4096;
  }
}

uint64_t inputHash(uint32_t rank, uint64_t index) {
  return uint64_t(rank) * 977 + index * 131 + (index / 128) * 29 + (index / 4096) * 7;
}

} // namespace

double inputValue(uint32_t rank, uint64_t index, uint32_t nranks, DataType type) {
  return double(1 + inputHash(rank, index) % (inputPeriod(nranks, type) - 1));
}

namespace {
/// dst[k] = inputHash(rank, first + k) mod m for k in [0, count), one division per aligned run
/// of 128 indices: inside such a run h grows by 131 per index, so element k of the run is
/// (h0 + step[k]) mod m with step[k] = 131 k mod m < m - a loop the compiler vectorises.
void residues(int32_t *__restrict dst, uint32_t rank, uint64_t first, uint64_t count, int32_t m,
              const int32_t *__restrict step) {
  // int32 throughout (values < 2^13): SSE2 has signed compares and int -> float conversions.
  // h at the aligned start of each run; one division, then from run to run h grows by
  // 128 * 131 + 29, plus 7 when the new run starts a multiple of 4096.
  const int32_t dRun = int32_t((128 * 131 + 29) % m), d7 = 7 % m;
  int32_t h0 = int32_t(inputHash(rank, first / 128 * 128) % uint64_t(m));
  for (uint64_t done = 0; done < count;) {
    const uint64_t i = first + done;
    const uint64_t o = i % 128, len = std::min<uint64_t>(count - done, 128 - o);
    const int32_t *__restrict st = step + o;
    int32_t *__restrict d = dst + done;
    for (int32_t k = 0; k < int32_t(len); ++k) {
      int32_t v = h0 + st[k];
      d[k] = v - (v >= m ? m : 0);
    }
    done += len;
    h0 += dRun;
    h0 -= h0 >= m ? m : 0;
    if ((first + done) % 4096 == 0) {
      h0 += d7;
      h0 -= h0 >= m ? m : 0;
    }
  }
}
} // namespace

void fillInputAt(void *host, uint64_t offset, uint64_t bytes, uint32_t rank, uint32_t nranks, DataType type) {
  const uint64_t es = dataTypeBytes(type);
  const uint64_t first = offset / es, count = bytes / es;
  const int32_t m = int32_t(inputPeriod(nranks, type) - 1);
  int32_t step[128];
  for (int32_t k = 0; k < 128; ++k)
    step[k] = int32_t(int64_t(k) * 131 % m);
  // Every value is one of m small integers: 1- and 2-byte types convert through a table.
  std::vector<uint8_t> table(uint64_t(m) * es);
  for (int32_t k = 0; k < m; ++k)
    storeElement(table.data(), size_t(k), type, double(k + 1));
  constexpr uint64_t kPiece = 4096;
  int32_t v[kPiece];
  for (uint64_t done = 0; done < count; done += kPiece) {
    const uint64_t len = std::min(kPiece, count - done);
    residues(v, rank, first + done, len, m, step);
    uint8_t *out = static_cast<uint8_t *>(host) + done * es;
    switch (type) {
    case DataType::Float32: {
      float *__restrict d = reinterpret_cast<float *>(out);
      for (uint64_t k = 0; k < len; ++k)
        d[k] = float(v[k] + 1);
      break;
    }
    case DataType::Int32:
    case DataType::UInt32: {
      int32_t *__restrict d = reinterpret_cast<int32_t *>(out);
      for (uint64_t k = 0; k < len; ++k)
        d[k] = v[k] + 1;
      break;
    }
    case DataType::Float16:
    case DataType::BFloat16: {
      uint16_t *__restrict d = reinterpret_cast<uint16_t *>(out);
      const uint16_t *t = reinterpret_cast<const uint16_t *>(table.data());
      for (uint64_t k = 0; k < len; ++k)
        d[k] = t[v[k]];
      break;
    }
    case DataType::UInt8:
      for (uint64_t k = 0; k < len; ++k)
        out[k] = table[v[k]];
      break;
    }
  }
}

void fillInput(void *host, uint64_t bytes, uint32_t rank, uint32_t nranks, DataType type) {
  fillInputAt(host, 0, bytes, rank, nranks, type);
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

OutputChecker::OutputChecker(CollectiveKind kind, uint32_t nranks, uint64_t inputBytes, uint64_t outputBytes,
                             DataType type, ReduceOp op)
    : kind_(kind), n_(nranks), inCount_(inputBytes / dataTypeBytes(type)),
      outCount_(outputBytes / dataTypeBytes(type)), type_(type), op_(op) {
  result_.checked = kind != CollectiveKind::Other;
  // inputValue(r, i) = 1 + ((977 r mod m) + x) mod m with x = inputHash(0, i) mod m, m =
  // period - 1: the reduction over the ranks of element i is a function of x alone, tabulated
  // here once (m <= 4095 entries) instead of generating every rank's input per element. Other
  // collectives copy one rank's input: the value of residue x is x + 1.
  m_ = int32_t(inputPeriod(nranks, type) - 1);
  for (int32_t k = 0; k < 128; ++k)
    step_[size_t(k)] = int32_t(int64_t(k) * 131 % m_);
  const bool reducing = collectiveReduces(kind) == Reduces::Yes;
  valueOf_.resize(size_t(m_));
  for (int32_t x = 0; x < m_; ++x) {
    double acc = double(1 + x);
    if (reducing) {
      for (uint32_t r = 1; r < nranks; ++r)
        acc = reduceValues(acc, double(1 + (int64_t(r) * 977 % m_ + x) % m_), op);
      if (type == DataType::UInt8)
        acc = double(uint64_t(acc) % 256);
    }
    valueOf_[size_t(x)] = acc;
  }
  valueBytes_.resize(size_t(m_) * dataTypeBytes(type));
  for (int32_t x = 0; x < m_; ++x)
    storeElement(valueBytes_.data(), size_t(x), type, valueOf_[size_t(x)]);
}

/// residue_[0, count) = the residue (index into valueOf_) of the end state of elements
/// [first, first + count) of rank `rank`, -1 where an element has no source; expectedBytes_ =
/// the same as elements of the type. Generated run by run: a run is a stretch whose source
/// index advances by one per element.
void OutputChecker::expectedValues(uint32_t rank, uint64_t first, uint64_t count) {
  residue_.resize(count);
  const uint32_t n = n_;
  int32_t *res = residue_.data();
  auto gen = [&](uint64_t at, uint32_t r, uint64_t index, uint64_t len) {
    residues(res + at, r, index, len, m_, step_.data());
  };
  // Run by run of elements with one source (Collectives.def Output). A reduction over every
  // rank is a function of rank 0's residue (valueOf_ holds it).
  for (uint64_t done = 0; done < count;) {
    const OutputSource src = outputSource(kind_, n, rank, inCount_, outCount_, first + done);
    if (src.from == OutputSource::From::Undefined) { // no element has a source: nothing can be right
      std::fill(residue_.begin() + int64_t(done), residue_.end(), -1);
      break;
    }
    const uint64_t len = std::min(count - done, src.run);
    gen(done, src.from == OutputSource::From::AllRanks ? 0 : src.rank, src.index, len);
    done += len;
  }
  const uint64_t es = dataTypeBytes(type_);
  expectedBytes_.resize(count * es);
  auto gather = [&](auto tag) {
    using T = decltype(tag);
    const T *table = reinterpret_cast<const T *>(valueBytes_.data());
    T *d = reinterpret_cast<T *>(expectedBytes_.data());
    for (uint64_t i = 0; i < count; ++i)
      d[i] = res[i] < 0 ? T(0) : table[res[i]];
  };
  switch (es) {
  case 1: gather(uint8_t()); break;
  case 2: gather(uint16_t()); break;
  default: gather(uint32_t()); break;
  }
}

void OutputChecker::check(uint32_t rank, uint64_t offset, const void *got, uint64_t bytes) {
  if (!outputDefinedOn(kind_, rank)) // Other; Reduce: the root's alone
    return;
  const uint64_t es = dataTypeBytes(type_);
  const uint64_t first = offset / es, count = bytes / es;
  result_.elements += count;
  const bool sameForAllRanks = outputSameForAllRanks(kind_);
  if (!haveBlock_ || blockFirst_ != first || blockCount_ != count || (!sameForAllRanks && blockRank_ != rank)) {
    expectedValues(rank, first, count);
    haveBlock_ = true;
    blockRank_ = rank;
    blockFirst_ = first;
    blockCount_ = count;
  }
  if (std::memcmp(got, expectedBytes_.data(), count * es) == 0)
    return;
  const bool isFloat16 = type_ == DataType::Float16 || type_ == DataType::BFloat16;
  for (uint64_t i = 0; i < count; ++i) {
    double exp = residue_[i] < 0 ? -1.0 : valueOf_[size_t(residue_[i])];
    double g = loadElement(got, i, type_);
    bool ok = isFloat16 ? std::fabs(g - exp) <= 1e-2 * std::fabs(exp) : g == exp;
    if (ok)
      continue;
    if (result_.wrong == 0 || int64_t(rank) < result_.firstRank ||
        (int64_t(rank) == result_.firstRank && first + i < result_.firstIndex)) {
      result_.firstRank = rank;
      result_.firstIndex = first + i;
      result_.expected = exp;
      result_.got = g;
    }
    result_.wrong++;
  }
}

VerifyResult verifyOutputs(CollectiveKind kind, const std::vector<const void *> &outputs, uint64_t inputBytes,
                           uint64_t outputBytes, DataType type, ReduceOp op) {
  OutputChecker checker(kind, uint32_t(outputs.size()), inputBytes, outputBytes, type, op);
  const uint64_t es = dataTypeBytes(type);
  const uint64_t total = outputBytes / es * es;
  for (uint64_t off = 0; off < total; off += OutputChecker::kBlockBytes)
    for (uint32_t r = 0; r < outputs.size(); ++r)
      checker.check(r, off, static_cast<const uint8_t *>(outputs[r]) + off,
                    std::min<uint64_t>(OutputChecker::kBlockBytes, total - off));
  return checker.result();
}

VerifyResult verifyRankOutput(CollectiveKind kind, uint32_t rank, uint32_t nranks, const void *output,
                              uint64_t inputBytes, uint64_t outputBytes, DataType type, ReduceOp op) {
  OutputChecker checker(kind, nranks, inputBytes, outputBytes, type, op);
  const uint64_t es = dataTypeBytes(type);
  const uint64_t total = outputBytes / es * es;
  for (uint64_t off = 0; off < total; off += OutputChecker::kBlockBytes)
    checker.check(rank, off, static_cast<const uint8_t *>(output) + off,
                  std::min<uint64_t>(OutputChecker::kBlockBytes, total - off));
  return checker.result();
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

std::optional<uint64_t> parseMessageSize(const std::string &s) {
  if (s.empty())
    return std::nullopt;
  size_t pos = 0;
  unsigned long long v;
  try {
    v = std::stoull(s, &pos);
  } catch (...) {
    return std::nullopt;
  }
  const std::string suf = s.substr(pos);
  uint64_t mul = 1;
  if (suf == "" || suf == "B") mul = 1;
  else if (suf == "K" || suf == "k" || suf == "KiB") mul = 1ull << 10;
  else if (suf == "M" || suf == "m" || suf == "MiB") mul = 1ull << 20;
  else if (suf == "G" || suf == "g" || suf == "GiB") mul = 1ull << 30;
  else return std::nullopt;
  return v * mul;
}

std::string messageSizeText(uint64_t b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (v == double(uint64_t(v)))
    std::snprintf(buf, sizeof buf, "%llu %s", (unsigned long long)v, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

} // namespace msccl::runtime
