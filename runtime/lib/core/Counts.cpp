//===- Counts.cpp - Run-time count matrices of AllToAllV and their resolution ------------===//
//
// See Counts.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Counts.h"

#include "msccl/runtime/Elements.h"
#include "msccl/runtime/Executor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace msccl::runtime {
using namespace msccl::plan;

uint64_t CountMatrix::rowSum(uint32_t r) const {
  uint64_t s = 0;
  for (uint32_t p = 0; p < n; ++p)
    s += at(r, p);
  return s;
}
uint64_t CountMatrix::colSum(uint32_t p) const {
  uint64_t s = 0;
  for (uint32_t r = 0; r < n; ++r)
    s += at(r, p);
  return s;
}
uint64_t CountMatrix::total() const {
  uint64_t s = 0;
  for (uint64_t c : counts)
    s += c;
  return s;
}
uint64_t CountMatrix::maxCount() const { return counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end()); }

CountMatrix parseCountsJson(const std::string &text, uint32_t n) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    throw std::invalid_argument(std::string("count matrix: invalid JSON: ") + e.what());
  }
  if (!j.is_array() || j.size() != n)
    throw std::invalid_argument("count matrix: expected an array of " + std::to_string(n) + " rows (one per rank), got " +
                                (j.is_array() ? std::to_string(j.size()) + " rows" : std::string(j.type_name())));
  CountMatrix m{n, std::vector<uint64_t>(size_t(n) * n)};
  for (uint32_t r = 0; r < n; ++r) {
    if (!j[r].is_array() || j[r].size() != n)
      throw std::invalid_argument("count matrix: row " + std::to_string(r) + ": expected " + std::to_string(n) + " counts");
    for (uint32_t p = 0; p < n; ++p) {
      const auto &v = j[r][p];
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
        throw std::invalid_argument("count matrix: [" + std::to_string(r) + "][" + std::to_string(p) +
                                    "]: expected a non-negative integer, got " + v.dump());
      m.counts[size_t(r) * n + p] = v.get<uint64_t>();
    }
  }
  return m;
}

CountMatrix makeCounts(const std::string &spec, uint32_t n, uint64_t scale) {
  CountMatrix m{n, std::vector<uint64_t>(size_t(n) * n)};
  auto set = [&](auto f) {
    for (uint32_t r = 0; r < n; ++r)
      for (uint32_t p = 0; p < n; ++p)
        m.counts[size_t(r) * n + p] = f(r, p);
  };
  if (spec == "uniform") {
    set([&](uint32_t, uint32_t) { return scale; });
  } else if (spec == "random" || spec.rfind("random:", 0) == 0) {
    uint64_t seed = 1;
    if (spec.size() > 7) {
      try {
        size_t used = 0;
        seed = std::stoull(spec.substr(7), &used);
        if (used != spec.size() - 7)
          throw std::invalid_argument("");
      } catch (const std::exception &) {
        throw std::invalid_argument("--counts " + spec + ": the seed must be a non-negative integer");
      }
    }
    std::mt19937_64 rng(seed);
    // A quarter of the pairs send nothing; the others send 1..2*scale elements.
    set([&](uint32_t, uint32_t) -> uint64_t {
      uint64_t v = rng();
      return (v & 3) == 0 ? 0 : 1 + (v >> 2) % std::max<uint64_t>(1, 2 * scale);
    });
  } else if (spec == "skewed") {
    set([&](uint32_t r, uint32_t p) { return p == (r + 1) % n ? 8 * scale : scale / 8; });
  } else if (spec == "zero") {
    set([&](uint32_t r, uint32_t p) { return (r + 2 * p) % 3 == 0 ? scale : 0; });
  } else {
    std::ifstream in(spec);
    if (!in)
      throw std::invalid_argument("--counts " + spec +
                                  ": not `uniform`, `random[:SEED]`, `skewed`, `zero` or a readable JSON matrix file");
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      return parseCountsJson(ss.str(), n);
    } catch (const std::invalid_argument &e) {
      throw std::invalid_argument(spec + ": " + e.what());
    }
  }
  return m;
}

std::string needsCountsMessage(const Plan &plan) {
  return "plan " + (plan.name ? "`" + *plan.name + "` " : std::string()) +
         "has sizes known only at run time (variable_sizes, collective \"" + plan.collective +
         "\"): it runs with a count matrix (msccl-run --counts, CountsResolver), not with a message size";
}

CountsResolver::CountsResolver(const Plan &symbolic) : concrete_(symbolic) {
  if (!symbolic.variableSizes)
    throw ExecutionError(ErrorKind::InvalidPlan, "plan has no `variable_sizes`: it runs with a message size, not counts");
  const uint32_t n = uint32_t(concrete_.gpus.size());
  bound_ = symbolic.variableSizes->blockBound;
  std::vector<std::string> bad;
  for (size_t g = 0; g < concrete_.gpus.size(); ++g) {
    Gpu &gpu = concrete_.gpus[g];
    usesScratch_ |= gpu.scratchChunks > 0;
    gpu.scratchChunks *= bound_; // slots -> elements (one chunk = one element once resolved)
    for (size_t t = 0; t < gpu.threadblocks.size(); ++t)
      for (size_t o = 0; o < gpu.threadblocks[t].ops.size(); ++o) {
        Op &op = gpu.threadblocks[t].ops[o];
        std::string path = "gpus[" + std::to_string(g) + "].threadblocks[" + std::to_string(t) + "].ops[" + std::to_string(o) + "]";
        if (opShape(op.type) == OpShape::Pipeline || opShape(op.type) == OpShape::GroupLoadReduce)
          bad.push_back(path + ": `" + std::string(opName(op.type)) + "` cannot be sized at run time");
        for (int side = 0; side < 2; ++side) {
          auto &refs = side == 0 ? op.src : op.dst;
          for (size_t i = 0; i < refs.size(); ++i) {
            std::string rp = path + (side == 0 ? ".src_buff[" : ".dst_buff[") + std::to_string(i) + "]";
            BufferRef &b = refs[i];
            if (b.indexExpr.empty() || b.sizeExpr.empty()) {
              bad.push_back(rp + ": entry has no `index_expr`/`size_expr`");
              continue;
            }
            try {
              Slot s{&b, SymExpr::parse(b.indexExpr), SymExpr::parse(b.sizeExpr)};
              if (s.index.ranksNamed() > n || s.size.ranksNamed() > n)
                bad.push_back(rp + ": expression names a rank beyond the plan's " + std::to_string(n));
              else
                slots_.push_back(std::move(s));
            } catch (const std::invalid_argument &e) {
              bad.push_back(rp + ": " + e.what());
            }
          }
        }
      }
  }
  if (!bad.empty())
    throw ExecutionError(ErrorKind::InvalidPlan, "malformed variable-size plan", bad);
  concrete_.variableSizes.reset();
  concrete_.minMessageSize = 0;
  concrete_.maxMessageSize = UINT64_MAX;
}

const Plan &CountsResolver::resolve(const CountMatrix &m, DataType type) {
  const uint32_t n = uint32_t(concrete_.gpus.size());
  if (m.n != n || m.counts.size() != size_t(n) * n)
    throw ExecutionError(ErrorKind::InvalidSize, "count matrix is " + std::to_string(m.n) + "x" + std::to_string(m.n) +
                                                     " but the plan has " + std::to_string(n) + " ranks");
  if (usesScratch_ && m.maxCount() > bound_)
    throw ExecutionError(ErrorKind::InvalidSize, "a count of " + std::to_string(m.maxCount()) +
                                                     " elements exceeds the plan's block_bound " + std::to_string(bound_) +
                                                     " (its scratch slots hold at most that many)");
  const size_t w = n + 1;
  rowPre_.assign(size_t(n) * w, 0);
  colPre_.assign(size_t(n) * w, 0);
  uint64_t maxIn = 1, maxOut = 1;
  for (uint32_t r = 0; r < n; ++r)
    for (uint32_t p = 0; p < n; ++p)
      rowPre_[r * w + p + 1] = rowPre_[r * w + p] + m.at(r, p);
  for (uint32_t p = 0; p < n; ++p)
    for (uint32_t r = 0; r < n; ++r)
      colPre_[p * w + r + 1] = colPre_[p * w + r] + m.at(r, p);
  for (uint32_t r = 0; r < n; ++r) {
    maxIn = std::max(maxIn, rowPre_[r * w + n]);
    maxOut = std::max(maxOut, colPre_[r * w + n]);
  }
  auto eval = [&](const SymExpr &e) {
    uint64_t v = 0;
    for (const SymAtom &a : e.atoms)
      switch (a.kind) {
      case SymAtom::Kind::Const: v += a.coef; break;
      case SymAtom::Kind::Bound: v += a.coef * bound_; break;
      case SymAtom::Kind::Cell: v += a.coef * m.counts[size_t(a.i) * n + a.a]; break;
      case SymAtom::Kind::Row: v += a.coef * (rowPre_[a.i * w + a.b] - rowPre_[a.i * w + a.a]); break;
      case SymAtom::Kind::Col: v += a.coef * (colPre_[a.i * w + a.b] - colPre_[a.i * w + a.a]); break;
      }
    return v;
  };
  for (Slot &s : slots_) {
    s.ref->index = eval(s.index);
    s.ref->size = eval(s.size);
  }
  for (Gpu &gpu : concrete_.gpus) {
    gpu.inputChunks = maxIn;
    gpu.outputChunks = maxOut;
  }
  const uint64_t es = dataTypeBytes(type);
  concrete_.bufferAlignment = es;
  sizes_ = MessageSizes{maxIn * es, maxOut * es};
  return concrete_;
}

void mergeVerify(VerifyResult &all, const VerifyResult &part) {
  all.checked = all.checked || part.checked;
  all.elements += part.elements;
  if (part.wrong && (all.wrong == 0 || part.firstRank < all.firstRank)) {
    all.firstRank = part.firstRank;
    all.firstIndex = part.firstIndex;
    all.expected = part.expected;
    all.got = part.got;
  }
  all.wrong += part.wrong;
}

VerifyResult verifyAllToAllVRank(const CountMatrix &m, uint32_t rank, const void *output, DataType type) {
  VerifyResult res;
  res.checked = true;
  uint64_t at = 0;
  for (uint32_t p = 0; p < m.n; ++p) {
    uint64_t from = 0;
    for (uint32_t q = 0; q < rank; ++q)
      from += m.at(p, q);
    const uint64_t c = m.at(p, rank);
    for (uint64_t k = 0; k < c; ++k, ++at) {
      double want = inputValue(p, from + k, m.n, type);
      double got = loadElement(output, at, type);
      ++res.elements;
      if (got != want) {
        if (res.wrong++ == 0) {
          res.firstRank = rank;
          res.firstIndex = at;
          res.expected = want;
          res.got = got;
        }
      }
    }
  }
  return res;
}

} // namespace msccl::runtime
