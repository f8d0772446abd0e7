//===- Symbolic.cpp - Symbolic (run-time) sizes of AllToAllV plans -----------------------===//
//
// See Symbolic.h. deriveAllToAllV walks the data ops to a fixed point: an entry of the input or
// output names its blocks directly; a scratch slot takes the block of the first op that moves a
// known block into it (a later op moving a block of another size there is refused).
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/Symbolic.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace msccl::plan {

// --- Expressions --------------------------------------------------------------------------

namespace {
struct Lexer {
  const std::string &s;
  size_t pos = 0;
  [[noreturn]] void fail(const std::string &what) const {
    throw std::invalid_argument(what + " at column " + std::to_string(pos + 1) + " of `" + s + "`");
  }
  void skip() {
    while (pos < s.size() && s[pos] == ' ')
      ++pos;
  }
  bool eat(char c) {
    skip();
    if (pos < s.size() && s[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c))
      fail(std::string("expected `") + c + "`");
  }
  bool peekDigit() {
    skip();
    return pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]));
  }
  uint64_t number() {
    if (!peekDigit())
      fail("expected a number");
    uint64_t v = 0;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      if (v > (UINT64_MAX - 9) / 10)
        fail("number too large");
      v = v * 10 + uint64_t(s[pos++] - '0');
    }
    return v;
  }
  uint32_t small() {
    uint64_t v = number();
    if (v > UINT32_MAX)
      fail("index too large");
    return uint32_t(v);
  }
  bool word(const char *w) {
    skip();
    size_t n = std::char_traits<char>::length(w);
    if (s.compare(pos, n, w) == 0 && (pos + n >= s.size() || !std::isalnum(static_cast<unsigned char>(s[pos + n])))) {
      pos += n;
      return true;
    }
    return false;
  }
};

bool parseAtom(Lexer &lx, SymAtom &a) {
  if (lx.word("c")) {
    a.kind = SymAtom::Kind::Cell;
    lx.expect('[');
    a.i = lx.small();
    lx.expect(',');
    a.a = lx.small();
    lx.expect(']');
    return true;
  }
  bool row = lx.word("row");
  if (row || lx.word("col")) {
    a.kind = row ? SymAtom::Kind::Row : SymAtom::Kind::Col;
    lx.expect('[');
    a.i = lx.small();
    lx.expect(',');
    a.a = lx.small();
    lx.expect(':');
    a.b = lx.small();
    lx.expect(']');
    if (a.b < a.a)
      lx.fail("empty-range bounds reversed");
    return true;
  }
  if (lx.word("B")) {
    a.kind = SymAtom::Kind::Bound;
    return true;
  }
  return false;
}
} // namespace

SymExpr SymExpr::parse(const std::string &text) {
  Lexer lx{text};
  SymExpr e;
  do {
    SymAtom a;
    if (lx.peekDigit()) {
      uint64_t v = lx.number();
      if (lx.eat('*')) {
        if (!parseAtom(lx, a))
          lx.fail("expected `c[r,p]`, `row[r,a:b]`, `col[p,a:b]` or `B`");
        a.coef = v;
      } else {
        a.kind = SymAtom::Kind::Const;
        a.coef = v;
      }
    } else if (parseAtom(lx, a)) {
      a.coef = 1;
    } else {
      lx.fail("expected a number, `c[r,p]`, `row[r,a:b]`, `col[p,a:b]` or `B`");
    }
    if (a.coef != 0)
      e.atoms.push_back(a);
  } while (lx.eat('+'));
  lx.skip();
  if (lx.pos != text.size())
    lx.fail("unexpected text");
  return e;
}

std::string SymExpr::str() const {
  std::string out;
  for (const SymAtom &a : atoms) {
    if (!out.empty())
      out += " + ";
    if (a.kind == SymAtom::Kind::Const) {
      out += std::to_string(a.coef);
      continue;
    }
    if (a.coef != 1)
      out += std::to_string(a.coef) + "*";
    switch (a.kind) {
    case SymAtom::Kind::Cell: out += "c[" + std::to_string(a.i) + "," + std::to_string(a.a) + "]"; break;
    case SymAtom::Kind::Row: out += "row[" + std::to_string(a.i) + "," + std::to_string(a.a) + ":" + std::to_string(a.b) + "]"; break;
    case SymAtom::Kind::Col: out += "col[" + std::to_string(a.i) + "," + std::to_string(a.a) + ":" + std::to_string(a.b) + "]"; break;
    case SymAtom::Kind::Bound: out += "B"; break;
    case SymAtom::Kind::Const: break;
    }
  }
  return out.empty() ? "0" : out;
}

SymExpr::Normal SymExpr::normal() const {
  Normal n;
  for (const SymAtom &a : atoms)
    switch (a.kind) {
    case SymAtom::Kind::Const: n.constant += a.coef; break;
    case SymAtom::Kind::Bound: n.bound += a.coef; break;
    case SymAtom::Kind::Cell: n.cells[{a.i, a.a}] += a.coef; break;
    case SymAtom::Kind::Row:
      for (uint32_t p = a.a; p < a.b; ++p)
        n.cells[{a.i, p}] += a.coef;
      break;
    case SymAtom::Kind::Col:
      for (uint32_t q = a.a; q < a.b; ++q)
        n.cells[{q, a.i}] += a.coef;
      break;
    }
  return n;
}

uint32_t SymExpr::ranksNamed() const {
  uint32_t m = 0;
  for (const SymAtom &a : atoms)
    switch (a.kind) {
    case SymAtom::Kind::Cell: m = std::max({m, a.i + 1, a.a + 1}); break;
    case SymAtom::Kind::Row:
    case SymAtom::Kind::Col: m = std::max({m, a.i + 1, a.b}); break;
    default: break;
    }
  return m;
}

// --- Derivation ---------------------------------------------------------------------------

namespace {
SymAtom cell(uint32_t r, uint32_t p) { return SymAtom{SymAtom::Kind::Cell, 1, r, p, 0}; }
SymAtom row(uint32_t r, uint64_t a, uint64_t b) { return SymAtom{SymAtom::Kind::Row, 1, r, uint32_t(a), uint32_t(b)}; }
SymAtom col(uint32_t p, uint64_t a, uint64_t b) { return SymAtom{SymAtom::Kind::Col, 1, p, uint32_t(a), uint32_t(b)}; }
SymExpr one(SymAtom a) {
  SymExpr e;
  if (a.coef != 0 && (a.kind == SymAtom::Kind::Const || a.kind == SymAtom::Kind::Cell || a.kind == SymAtom::Kind::Bound || a.b > a.a))
    e.atoms.push_back(a);
  return e;
}

struct Deriver {
  Plan &plan;
  const uint32_t n;
  std::vector<SymIssue> issues;
  // Block a scratch slot (rank, slot) holds: the cell (r, p).
  std::map<std::pair<uint32_t, uint64_t>, std::pair<uint32_t, uint32_t>> slots;

  explicit Deriver(Plan &p) : plan(p), n(uint32_t(p.gpus.size())) {}

  std::string opPath(size_t g, size_t t, size_t o) const {
    return "gpus[" + std::to_string(g) + "].threadblocks[" + std::to_string(t) + "].ops[" + std::to_string(o) + "]";
  }
  void issue(size_t g, size_t t, size_t o, std::string path, std::string msg) {
    for (const SymIssue &i : issues)
      if (i.path == path && i.message == msg)
        return;
    issues.push_back(SymIssue{int32_t(g), int32_t(t), int32_t(o), std::move(path), std::move(msg)});
  }

  /// Which rank and buffer an entry of an op on gpu g, threadblock t addresses.
  std::optional<std::pair<uint32_t, BufferType>> target(size_t g, const Threadblock &tb, const Op &op, const BufferRef &b) {
    if (b.loc == BufferRef::Loc::Local)
      return std::make_pair(uint32_t(g), b.type);
    if (b.loc == BufferRef::Loc::Switch)
      return std::nullopt;
    ChannelType ct = op.channelType.value_or(ChannelType::Memory);
    uint32_t k = b.id;
    for (const RemoteBufferRefs &rr : tb.remoteBufferRefs) {
      if (rr.accessChannelType != ct)
        continue;
      if (k < rr.remoteBufferIds.size()) {
        uint32_t id = rr.remoteBufferIds[k];
        if (id >= plan.gpus[g].remoteBuffers.size())
          return std::nullopt;
        const RemoteBuffer &rb = plan.gpus[g].remoteBuffers[id];
        return std::make_pair(rb.rank, rb.type);
      }
      k -= uint32_t(rr.remoteBufferIds.size());
    }
    return std::nullopt;
  }

  /// The cells an entry holds, in order (nullopt: a scratch slot whose block is not known yet).
  std::optional<std::vector<std::pair<uint32_t, uint32_t>>> cells(uint32_t rank, BufferType type, const BufferRef &b) {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    if (type == BufferType::Input) {
      for (uint64_t k = b.index; k < b.index + b.size; ++k)
        out.push_back({rank, uint32_t(k)});
    } else if (type == BufferType::Output) {
      for (uint64_t k = b.index; k < b.index + b.size; ++k)
        out.push_back({uint32_t(k), rank});
    } else {
      auto it = slots.find({rank, b.index});
      if (it == slots.end())
        return std::nullopt;
      out.push_back(it->second);
    }
    return out;
  }

  // One pass over the data ops; returns whether a scratch slot learned its block.
  bool pass(bool final) {
    bool learned = false;
    for (size_t g = 0; g < plan.gpus.size(); ++g) {
      Gpu &gpu = plan.gpus[g];
      for (size_t t = 0; t < gpu.threadblocks.size(); ++t) {
        Threadblock &tb = gpu.threadblocks[t];
        for (size_t o = 0; o < tb.ops.size(); ++o) {
          Op &op = tb.ops[o];
          const std::string path = opPath(g, t, o);
          OpShape shape = opShape(op.type);
          if (shape == OpShape::Pipeline || shape == OpShape::GroupLoadReduce) {
            if (final)
              issue(g, t, o, path, "`" + std::string(opName(op.type)) + "` cannot be sized at run time (variable-size plans take no pipelines or glre)");
            continue;
          }
          if (shape != OpShape::Data)
            continue;
          learned |= dataOp(g, tb, o, op, path, final);
        }
      }
    }
    return learned;
  }

  bool dataOp(size_t g, Threadblock &tb, size_t o, Op &op, const std::string &path, bool final) {
    struct Entry {
      BufferRef *ref;
      std::string path;
      uint32_t rank = 0;
      BufferType type = BufferType::Input;
      bool ok = false;
    };
    std::vector<Entry> entries;
    entries.reserve(op.src.size() + op.dst.size());
    const size_t t = size_t(&tb - plan.gpus[g].threadblocks.data());
    for (int side = 0; side < 2; ++side) {
      auto &refs = side == 0 ? op.src : op.dst;
      for (size_t i = 0; i < refs.size(); ++i) {
        Entry e{&refs[i], path + (side == 0 ? ".src_buff[" : ".dst_buff[") + std::to_string(i) + "]"};
        auto tgt = target(g, tb, op, refs[i]);
        if (!tgt) {
          if (final)
            issue(g, t, o, e.path, "this entry's buffer cannot be sized at run time (switch channel or unresolved remote buffer)");
        } else {
          e.rank = tgt->first;
          e.type = tgt->second;
          e.ok = true;
          if (e.type == BufferType::Scratch && refs[i].size != 1 && final)
            issue(g, t, o, e.path, "a scratch access of " + std::to_string(refs[i].size) +
                                       " slots cannot be sized at run time (scratch slots are `block_bound` elements apart: access one block at a time)");
          if (e.type != BufferType::Scratch && e.rank >= n) {
            e.ok = false;
          }
        }
        entries.push_back(std::move(e));
      }
    }
    // Entries that move the same data: src[i] with dst[i] when the op pairs them (fused puts,
    // copies), else all of them (a reduction of several sources into one destination).
    std::vector<std::vector<Entry *>> groups;
    if (op.src.size() == op.dst.size()) {
      for (size_t i = 0; i < op.src.size(); ++i)
        groups.push_back({&entries[i], &entries[op.src.size() + i]});
    } else {
      groups.emplace_back();
      for (Entry &e : entries)
        groups.back().push_back(&e);
    }
    bool learned = false;
    for (auto &group : groups)
      learned |= dataGroup(g, t, o, path, group, final);
    return learned;
  }

  template <typename Entry>
  bool dataGroup(size_t g, size_t t, size_t o, const std::string &path, std::vector<Entry *> &group, bool final) {
    std::optional<std::vector<std::pair<uint32_t, uint32_t>>> blocks;
    for (Entry *ep : group) {
      Entry &e = *ep;
      if (e.ok && (e.type != BufferType::Scratch || e.ref->size == 1))
        if ((blocks = cells(e.rank, e.type, *e.ref)))
          break;
    }
    bool learned = false;
    if (!blocks) {
      if (final)
        issue(g, t, o, path, "no entry of this op has a size known at run time (it reads and writes only scratch slots no op fills)");
      return false;
    }
    SymExpr::Normal want;
    for (auto [r, p] : *blocks)
      want.cells[{r, p}] += 1;
    for (Entry *ep : group) {
      Entry &e = *ep;
      if (!e.ok)
        continue;
      BufferRef &b = *e.ref;
      if (e.type == BufferType::Scratch) {
        if (b.size != 1)
          continue;
        auto key = std::make_pair(e.rank, b.index);
        if (!slots.count(key) && blocks->size() == 1) {
          slots[key] = blocks->front();
          learned = true;
        }
      }
      auto mine = cells(e.rank, e.type, b);
      if (!mine)
        continue;
      SymExpr::Normal got;
      for (auto [r, p] : *mine)
        got.cells[{r, p}] += 1;
      if (final && !(got == want)) {
        // Spell both sizes for the message.
        auto sizeOf = [&](const std::vector<std::pair<uint32_t, uint32_t>> &cs) {
          SymExpr s;
          for (auto [r, p] : cs)
            s.atoms.push_back(cell(r, p));
          return s.str();
        };
        issue(g, t, o, e.path, "this entry holds `" + sizeOf(*mine) + "` elements but the op moves `" + sizeOf(*blocks) +
                                   "`: the sizes differ for some count matrix");
      }
      if (final)
        write(e.rank, e.type, b, *mine);
    }
    return learned;
  }

  void write(uint32_t rank, BufferType type, BufferRef &b, const std::vector<std::pair<uint32_t, uint32_t>> &cs) {
    if (type == BufferType::Input) {
      b.indexExpr = one(row(rank, 0, b.index)).str();
      b.sizeExpr = (b.size == 1 ? one(cell(rank, uint32_t(b.index))) : one(row(rank, b.index, b.index + b.size))).str();
    } else if (type == BufferType::Output) {
      b.indexExpr = one(col(rank, 0, b.index)).str();
      b.sizeExpr = (b.size == 1 ? one(cell(uint32_t(b.index), rank)) : one(col(rank, b.index, b.index + b.size))).str();
    } else {
      SymAtom bound{SymAtom::Kind::Bound, b.index, 0, 0, 0};
      b.indexExpr = one(bound).str();
      b.sizeExpr = one(cell(cs.front().first, cs.front().second)).str();
    }
  }

  void run() {
    if (!plan.variableSizes) {
      issues.push_back(SymIssue{-1, -1, -1, "", "the plan has no `variable_sizes`"});
      return;
    }
    for (size_t g = 0; g < plan.gpus.size(); ++g) {
      const Gpu &gpu = plan.gpus[g];
      std::string gp = "gpus[" + std::to_string(g) + "]";
      if (gpu.inputChunks != n || gpu.outputChunks != n)
        issues.push_back(SymIssue{int32_t(g), -1, -1, gp, "an AllToAllV plan has one chunk per block: input_chunks and output_chunks must be the rank count " + std::to_string(n)});
      if (gpu.scratchChunks > 0 && plan.variableSizes->blockBound == 0)
        issues.push_back(SymIssue{int32_t(g), -1, -1, gp, "scratch needs `variable_sizes.block_bound` (the largest count the plan takes)"});
    }
    if (!issues.empty())
      return;
    // Clear old expressions, learn scratch slots to a fixed point, then write and check.
    for (Gpu &gpu : plan.gpus)
      for (Threadblock &tb : gpu.threadblocks)
        for (Op &op : tb.ops)
          for (auto *refs : {&op.src, &op.dst})
            for (BufferRef &b : *refs)
              b.indexExpr.clear(), b.sizeExpr.clear();
    size_t rounds = 0;
    while (pass(false) && ++rounds < 1u << 20) {
    }
    pass(true);
  }
};
} // namespace

std::vector<SymIssue> deriveAllToAllV(Plan &plan) {
  Deriver d(plan);
  d.run();
  return std::move(d.issues);
}

std::vector<SymIssue> checkAllToAllV(const Plan &plan) {
  std::vector<SymIssue> issues;
  if (plan.collective != "alltoallv")
    issues.push_back(SymIssue{-1, -1, -1, "collective", "a plan with `variable_sizes` must be an \"alltoallv\" (got \"" + plan.collective + "\")"});
  if (plan.inplace)
    issues.push_back(SymIssue{-1, -1, -1, "inplace", "an AllToAllV plan cannot be in place (input and output blocks differ in size)"});
  Plan derived = plan;
  std::vector<SymIssue> d = deriveAllToAllV(derived);
  issues.insert(issues.end(), d.begin(), d.end());
  if (!d.empty())
    return issues;
  // The plan's own expressions must equal the derived ones (as affine forms).
  for (size_t g = 0; g < plan.gpus.size(); ++g)
    for (size_t t = 0; t < plan.gpus[g].threadblocks.size(); ++t)
      for (size_t o = 0; o < plan.gpus[g].threadblocks[t].ops.size(); ++o) {
        const Op &mine = plan.gpus[g].threadblocks[t].ops[o];
        const Op &want = derived.gpus[g].threadblocks[t].ops[o];
        for (int side = 0; side < 2; ++side) {
          const auto &a = side == 0 ? mine.src : mine.dst;
          const auto &b = side == 0 ? want.src : want.dst;
          for (size_t i = 0; i < a.size(); ++i) {
            std::string path = "gpus[" + std::to_string(g) + "].threadblocks[" + std::to_string(t) + "].ops[" +
                               std::to_string(o) + "]" + (side == 0 ? ".src_buff[" : ".dst_buff[") + std::to_string(i) + "]";
            for (int f = 0; f < 2; ++f) {
              const std::string &have = f == 0 ? a[i].indexExpr : a[i].sizeExpr;
              const std::string &should = f == 0 ? b[i].indexExpr : b[i].sizeExpr;
              const char *key = f == 0 ? "index_expr" : "size_expr";
              if (have.empty()) {
                issues.push_back(SymIssue{int32_t(g), int32_t(t), int32_t(o), path, std::string("missing `") + key + "` (expected `" + should + "`)"});
                continue;
              }
              try {
                if (!(SymExpr::parse(have).normal() == SymExpr::parse(should).normal()))
                  issues.push_back(SymIssue{int32_t(g), int32_t(t), int32_t(o), path + "." + key,
                                            "`" + have + "` is not the entry's " + (f == 0 ? "offset" : "length") + " `" + should + "`"});
              } catch (const std::invalid_argument &e) {
                issues.push_back(SymIssue{int32_t(g), int32_t(t), int32_t(o), path + "." + key, e.what()});
              }
            }
          }
        }
      }
  return issues;
}

Plan blockImage(const Plan &plan) {
  Plan p = plan;
  p.collective = "alltoall";
  p.variableSizes.reset();
  for (Gpu &gpu : p.gpus)
    for (Threadblock &tb : gpu.threadblocks)
      for (Op &op : tb.ops)
        for (auto *refs : {&op.src, &op.dst})
          for (BufferRef &b : *refs)
            b.indexExpr.clear(), b.sizeExpr.clear();
  return p;
}

} // namespace msccl::plan
