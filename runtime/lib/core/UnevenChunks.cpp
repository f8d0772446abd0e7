//===- UnevenChunks.cpp - Plans at every element count: chunks of unequal sizes ----------===//
//
// See UnevenChunks.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/UnevenChunks.h"

#include "msccl/plan/OpTable.h"
#include "msccl/runtime/Executor.h"

#include <algorithm>

namespace msccl::runtime {
using namespace msccl::plan;

namespace {

/// The largest power of two dividing v (0 for 0).
uint64_t lowBit(uint64_t v) { return v & (~v + 1); }

/// (rank, buffer, chunk) nodes, joined by the ops; input and output chunks carry their block
/// position, scratch chunks none (-1) until joined.
class ChunkClasses {
public:
  ChunkClasses(const Plan &plan, uint64_t K) : plan_(plan) {
    for (const Gpu &g : plan.gpus) {
      base_.push_back(parent_.size());
      for (uint64_t k = 0; k < g.inputChunks; ++k)
        add(int64_t(k % K));
      for (uint64_t k = 0; k < g.outputChunks; ++k)
        add(int64_t(k % K));
      for (uint64_t k = 0; k < g.scratchChunks; ++k)
        add(-1);
    }
  }

  /// The node of chunk `k` of `type` on `rank`; nullopt when the plan has no such chunk.
  std::optional<size_t> node(uint32_t rank, BufferType type, uint64_t k) const {
    const Gpu &g = plan_.gpus.at(rank);
    const uint64_t count = type == BufferType::Input ? g.inputChunks
                           : type == BufferType::Output ? g.outputChunks
                                                        : g.scratchChunks;
    if (k >= count)
      return std::nullopt;
    const uint64_t at = type == BufferType::Input ? 0 : type == BufferType::Output ? g.inputChunks
                                                                                    : g.inputChunks + g.outputChunks;
    return base_[rank] + at + k;
  }

  size_t find(size_t x) {
    while (parent_[x] != x)
      x = parent_[x] = parent_[parent_[x]];
    return x;
  }

  /// Joins a and b; false when their classes hold different block positions (`a`/`b` then name
  /// the positioned chunks of each side).
  bool join(size_t a, size_t b, size_t &whoA, size_t &whoB) {
    a = find(a), b = find(b);
    if (a == b)
      return true;
    if (pos_[a] >= 0 && pos_[b] >= 0 && pos_[a] != pos_[b]) {
      whoA = witness_[a], whoB = witness_[b];
      return false;
    }
    if (pos_[a] < 0)
      std::swap(a, b); // keep the positioned root
    parent_[b] = a;
    return true;
  }

  int64_t position(size_t x) { return pos_[find(x)]; }

  std::string describe(size_t x) const {
    uint32_t r = uint32_t(std::upper_bound(base_.begin(), base_.end(), x) - base_.begin() - 1);
    const Gpu &g = plan_.gpus[r];
    uint64_t k = x - base_[r];
    const char *type = "input";
    if (k >= g.inputChunks) {
      k -= g.inputChunks, type = "output";
      if (k >= g.outputChunks)
        k -= g.outputChunks, type = "scratch";
    }
    return "rank " + std::to_string(r) + "'s " + type + " chunk " + std::to_string(k);
  }

private:
  void add(int64_t pos) {
    witness_.push_back(parent_.size());
    parent_.push_back(parent_.size());
    pos_.push_back(pos);
  }

  const Plan &plan_;
  std::vector<size_t> base_, parent_, witness_;
  std::vector<int64_t> pos_;
};

struct Cut {
  uint64_t K = 0;         // chunks per block
  uint64_t q = 1;         // granule (bytes)
  uint64_t units = 0;     // granules per block
  uint64_t sizeAt(int64_t w) const { return w < 0 ? largest() : (units / K + (uint64_t(w) < units % K ? 1 : 0)) * q; }
  uint64_t largest() const { return (units + K - 1) / K * q; }
};

/// Joins the chunks every op pairs, as its row's Length rule says the handler pairs them
/// (OpTable.h): BySrc0, every used entry against src_buff[0] over src_buff[0]'s chunks;
/// PairsByDst/PairsBySrc, entry i of one side against entry i of the other over the dst's / src's
/// chunks. Ignored entries (Ign) take no part. Throws `refuse(...)` on a conflict.
template <class Refuse>
void joinOps(const LoweredPlan &unit, const ResolvedPlan &resolved, ChunkClasses &classes, Refuse refuse) {
  for (uint32_t r = 0; r < unit.gpus.size(); ++r)
    for (const LoweredTb &tb : unit.gpus[r].threadblocks)
      for (const LoweredOp &op : tb.ops) {
        const OpRow row = opRow(op.type);
        auto used = [&](bool src, size_t k) { return !((src ? row.src : row.dst).role(k) & oprole::Ign); };
        // Join `a` and `b` over `a`'s first `count` chunks (b must have as many).
        auto join = [&](const LoweredEntry &a, const LoweredEntry &b, uint64_t count) {
          if (b.size < count)
            throw refuse(op.path + " (" + std::string(opName(op.type)) + ") pairs an entry of " +
                         std::to_string(count) + " chunks with one of " + std::to_string(b.size));
          for (uint64_t t = 0; t < count; ++t) {
            std::optional<size_t> first;
            for (const LoweredEntry *e : {&a, &b}) {
              std::vector<uint32_t> owners{e->where.rank};
              if (e->where.kind == Location::Kind::Switch)
                owners = resolved.gpus[r].switchChannels.at(e->where.switchChannel).ranks;
              for (uint32_t owner : owners) {
                std::optional<size_t> n = classes.node(owner, e->where.type, e->index + t);
                if (!n)
                  throw ExecutionError(ErrorKind::InvalidPlan, op.path + ": entry chunk " +
                                                                   std::to_string(e->index + t) + " lies past rank " +
                                                                   std::to_string(owner) + "'s buffer");
                size_t x = 0, y = 0;
                if (first && !classes.join(*first, *n, x, y))
                  throw refuse(op.path + " (" + std::string(opName(op.type)) + ") joins " + classes.describe(x) +
                               " and " + classes.describe(y) +
                               ", which sit at different positions of their blocks and so differ in size");
                if (!first)
                  first = n;
              }
            }
          }
        };
        switch (row.length) {
        case OpLength::NoLength:
          break;
        case OpLength::BySrc0:
          if (op.src.empty())
            break;
          for (size_t k = 0; k < op.src.size(); ++k)
            if (used(true, k))
              join(op.src[0], op.src[k], op.src[0].size);
          for (size_t k = 0; k < op.dst.size(); ++k)
            if (used(false, k))
              join(op.src[0], op.dst[k], op.src[0].size);
          break;
        case OpLength::PairsByDst:
        case OpLength::PairsBySrc:
          for (size_t k = 0; k < std::min(op.src.size(), op.dst.size()); ++k) {
            const bool byDst = row.length == OpLength::PairsByDst;
            const LoweredEntry &lead = byDst ? op.dst[k] : op.src[k], &other = byDst ? op.src[k] : op.dst[k];
            if (used(true, k) && used(false, k))
              join(lead, other, lead.size);
          }
          break;
        }
      }
}

} // namespace

std::optional<std::string> evenChunksRefusal(const Plan &plan, uint64_t in, uint64_t out) {
  const uint64_t A = plan.bufferAlignment;
  if (plan.gpus.empty() || plan.variableSizes || A == 0)
    return std::nullopt;
  for (uint32_t r = 0; r < plan.gpus.size(); ++r) {
    const Gpu &g = plan.gpus[r];
    const uint64_t Ni = g.inputChunks, No = g.outputChunks;
    if (Ni == 0 && No == 0)
      continue;
    const bool divides = in % A == 0 && out % A == 0 && (Ni == 0 || (in / A) % Ni == 0) &&
                         (No == 0 || (out / A) % No == 0) && (Ni == 0 || No == 0 || in / Ni == out / No);
    if (divides)
      continue;
    try {
      computeChunkLayout(plan, r, in, out);
    } catch (const ExecutionError &e) {
      return e.summary();
    }
    return "rank " + std::to_string(r) + ": the sizes do not divide into its chunks";
  }
  return std::nullopt;
}

std::vector<ChunkLayout> unevenChunkLayouts(const Plan &plan, const ResolvedPlan &resolved, uint64_t in,
                                            uint64_t out, uint64_t elementBytes, const std::string &evenWhy) {
  auto refuse = [&](const std::string &why) {
    return ExecutionError(ErrorKind::InvalidSize, evenWhy + "; nor can it be cut into uneven chunks: " + why);
  };
  const uint32_t n = uint32_t(plan.gpus.size());
  if (n == 0)
    throw refuse("the plan has no gpus");
  const BufferBlocks blocks = collectiveBlocks(collectiveKind(plan.collective));
  if (blocks.input == Blocks::Unknown || blocks.output == Blocks::Unknown)
    throw refuse("collective \"" + plan.collective + "\" has no block rule (Collectives.def)");
  const uint64_t inBlocks = blocks.input == Blocks::One ? 1 : n, outBlocks = blocks.output == Blocks::One ? 1 : n;
  const uint64_t Ni = plan.gpus[0].inputChunks, No = plan.gpus[0].outputChunks;
  for (const Gpu &g : plan.gpus)
    if (g.inputChunks != Ni || g.outputChunks != No)
      throw refuse("its ranks differ in input_chunks or output_chunks");
  if (Ni == 0 && No == 0)
    throw refuse("it has no input or output chunks");
  if (plan.reuseResources && std::any_of(plan.gpus.begin(), plan.gpus.end(), [](const Gpu &g) { return g.scratchChunks; }))
    throw refuse("it reuses resources (reuse_resources), whose scratch slots assume equal chunks");
  if (Ni % inBlocks || No % outBlocks || (Ni && No && Ni / inBlocks != No / outBlocks))
    throw refuse("input_chunks " + std::to_string(Ni) + " and output_chunks " + std::to_string(No) +
                 " do not split into " + std::to_string(inBlocks) + " and " + std::to_string(outBlocks) +
                 " blocks of equal chunk counts");
  if ((Ni && in % inBlocks) || (No && out % outBlocks) || (Ni && No && in / inBlocks != out / outBlocks))
    throw refuse("input " + std::to_string(in) + " B and output " + std::to_string(out) + " B are not " +
                 std::to_string(inBlocks) + " and " + std::to_string(outBlocks) + " " + plan.collective +
                 " blocks of one size");
  const uint64_t m = rangeCheckedSize(plan, in, out);
  if (m < plan.minMessageSize || m > plan.maxMessageSize)
    throw refuse(std::to_string(m) + " B is outside [min_message_size " + std::to_string(plan.minMessageSize) +
                 ", max_message_size " + std::to_string(plan.maxMessageSize) + "]");
  Cut cut;
  cut.K = Ni ? Ni / inBlocks : No / outBlocks;
  const uint64_t B = Ni ? in / inBlocks : out / outBlocks;
  if (elementBytes > 1 && B % elementBytes)
    throw refuse("its " + plan.collective + " blocks of " + std::to_string(B) + " B are not whole " +
                 std::to_string(elementBytes) + "-byte elements");
  cut.q = std::min<uint64_t>(std::max<uint64_t>(plan.bufferAlignment, 1), B ? lowBit(B) : UINT64_MAX);
  cut.units = B / cut.q;

  // Every entry in chunks: lower once with one-byte chunks.
  std::vector<ChunkLayout> unitLayouts(n);
  for (uint32_t r = 0; r < n; ++r) {
    ChunkLayout &u = unitLayouts[r];
    u.alignment = 1, u.chunkBytes = 1, u.hasChunkBytes = true;
    u.inputBytes = Ni, u.outputBytes = No;
  }
  const LoweredPlan unit = lowerPlanWith(plan, resolved, std::move(unitLayouts));
  const bool packets = std::any_of(unit.gpus.begin(), unit.gpus.end(), [](const LoweredGpu &g) { return g.usesPackets; });
  if (packets && cut.q < 8)
    throw refuse("its packet ops need blocks of a multiple of 8 bytes (an LL16 payload), and " + std::to_string(B) +
                 " B is not");
  ChunkClasses classes(plan, cut.K);
  joinOps(unit, resolved, classes, refuse);

  std::vector<ChunkLayout> layouts(n);
  for (uint32_t r = 0; r < n; ++r) {
    auto offsets = std::make_shared<ChunkOffsets>();
    auto prefix = [&](std::vector<uint64_t> &at, BufferType type, uint64_t count) {
      at.assign(count + 1, 0);
      for (uint64_t k = 0; k < count; ++k)
        at[k + 1] = at[k] + cut.sizeAt(classes.position(*classes.node(r, type, k)));
    };
    prefix(offsets->input, BufferType::Input, Ni);
    prefix(offsets->output, BufferType::Output, No);
    prefix(offsets->scratch, BufferType::Scratch, plan.gpus[r].scratchChunks);
    ChunkLayout &l = layouts[r];
    l.alignment = cut.q;
    l.chunkBytes = cut.largest();
    l.hasChunkBytes = true;
    l.inputBytes = in, l.outputBytes = out;
    l.offsets = std::move(offsets);
  }
  // A switch entry on scratch addresses one offset on every member.
  for (uint32_t r = 0; r < n; ++r)
    for (const LoweredTb &tb : unit.gpus[r].threadblocks)
      for (const LoweredOp &op : tb.ops)
        for (const auto *side : {&op.src, &op.dst})
          for (const LoweredEntry &e : *side) {
            if (e.where.kind != Location::Kind::Switch || e.where.type != BufferType::Scratch)
              continue;
            const auto &members = resolved.gpus[r].switchChannels.at(e.where.switchChannel).ranks;
            for (uint32_t mbr : members) {
              const auto &a = layouts[members.front()].offsets->scratch, &b = layouts[mbr].offsets->scratch;
              if (a[e.index] != b[e.index] || a[e.index + e.size] != b[e.index + e.size])
                throw refuse(op.path + ": its switch entry on scratch would start at different bytes on ranks " +
                             std::to_string(members.front()) + " and " + std::to_string(mbr));
            }
          }
  return layouts;
}

std::optional<MessageSizes> unevenMessageSizes(const Plan &plan, uint64_t size, uint64_t elementBytes,
                                               const std::string &evenWhy, std::string *whyNot) {
  auto fail = [&](const std::string &s) -> std::optional<MessageSizes> {
    if (whyNot)
      *whyNot = s;
    return std::nullopt;
  };
  if (plan.gpus.empty())
    return fail(evenWhy);
  const uint64_t Ni = plan.gpus[0].inputChunks, No = plan.gpus[0].outputChunks, denom = std::max(Ni, No);
  if (denom == 0)
    return fail(evenWhy);
  const unsigned __int128 in = (unsigned __int128)size * Ni, out = (unsigned __int128)size * No;
  if (in % denom || out % denom)
    return fail(evenWhy + "; nor can it be cut into uneven chunks: " + std::to_string(size) +
                " B does not split in the ratio of input_chunks " + std::to_string(Ni) + " to output_chunks " +
                std::to_string(No));
  MessageSizes ms{uint64_t(in / denom), uint64_t(out / denom)};
  try {
    ResolvedPlan resolved = resolvePlan(plan);
    unevenChunkLayouts(plan, resolved, ms.inputBytes, ms.outputBytes, elementBytes, evenWhy);
  } catch (const ExecutionError &e) {
    return fail(e.summary());
  }
  return ms;
}

} // namespace msccl::runtime
