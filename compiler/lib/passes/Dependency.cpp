//===- Dependency.cpp - mirror of internal/buffer_access.py ------------------------------===//
#include "msccl/passes/Dependency.h"

#include <algorithm>

namespace msccl::passes {

using namespace msccl::ir;

namespace {
enum class Access : uint8_t { Read, Write };

struct DataAccess {
  size_t opId;
  int64_t start, end; // inclusive; end = start + size - 1
  BufferType type;
  Access access;
};

/// One SortedDict entry: the key object (op id, interval, key's own access type) and the value.
struct Record {
  size_t opId;
  int64_t start, end;
  Access keyAccess;
  Access value;
};

bool overlaps(int64_t aStart, int64_t aEnd, int64_t bStart, int64_t bEnd) { return aStart <= bEnd && bStart <= aEnd; }

class BuffersAccess {
public:
  void clear() {
    for (auto &v : intervals_) v.clear();
  }

  /// compute_data_access: returns whether `a` conflicts with a recorded access.
  bool compute(const DataAccess &a) {
    auto &keys = intervals_[unsigned(a.type)];
    size_t idx = lowerBound(keys, a);
    bool conflict = false;
    while (!keys.empty() && overlaps(a.start, a.end, keys[idx].start, keys[idx].end)) {
      Record c = keys[idx];
      if (c.opId != a.opId && (a.access != Access::Read || c.keyAccess != Access::Read)) {
        clear();
        conflict = true;
        break;
      }
      keys.erase(keys.begin() + std::ptrdiff_t(idx));
      if (c.end > a.end) set(keys, Record{c.opId, a.end + 1, c.end, c.value, c.value});
      if (c.start < a.start) set(keys, Record{c.opId, c.start, a.start - 1, c.value, c.value});
      idx = lowerBound(keys, a);
    }
    set(keys, Record{a.opId, a.start, a.end, a.access, a.access});
    return conflict;
  }

private:
  /// lower_bound(0, len-1): first position whose end >= a.start, assuming sorted ends.
  static size_t lowerBound(const std::vector<Record> &keys, const DataAccess &a) {
    int64_t lo = 0, hi = int64_t(keys.size()) - 1;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2; // (lo + hi) // 2 for lo, hi >= 0
      if (a.start <= keys[size_t(mid)].end) hi = mid;
      else lo = mid + 1;
    }
    return size_t(lo < 0 ? 0 : lo);
  }
  /// SortedDict __setitem__: an equal (start, end) key keeps its key object, only the value changes.
  static void set(std::vector<Record> &keys, const Record &r) {
    auto it = std::lower_bound(keys.begin(), keys.end(), r, [](const Record &x, const Record &y) {
      return x.start != y.start ? x.start < y.start : x.end < y.end;
    });
    if (it != keys.end() && it->start == r.start && it->end == r.end) {
      it->value = r.value;
      return;
    }
    keys.insert(it, r);
  }
  std::vector<Record> intervals_[3];
};

using plan::isPacketReduce; // the op table (plan/OpTable.h)

DataAccess access(size_t id, const LocalChunk &c, Access a) { return DataAccess{id, c.index, c.index + c.size - 1, c.type, a}; }

/// local_data_access(sync_purpose=True) of one op, with operation id `id`: its local src
/// entries read and its local dst entries written, as far as the op table says they count
/// (plan::syncAccess); a pipeline's inner ops all under its id.
void localDataAccess(const Op &op, size_t id, std::vector<DataAccess> &out) {
  if (plan::opShape(op.kind) == plan::OpShape::Pipeline) {
    for (auto &inner : op.ops) localDataAccess(inner, id, out);
    return;
  }
  for (size_t i = 0; i < op.localSrc.size(); ++i) // local entries come first in src_buff
    if (plan::syncAccess(op.kind, true, i)) out.push_back(access(id, op.localSrc[i], Access::Read));
  for (size_t i = 0; i < op.localDst.size(); ++i) // packet destinations are localPktDst, never accesses
    if (plan::syncAccess(op.kind, false, i)) out.push_back(access(id, op.localDst[i], Access::Write));
  // A switch op keeps its one local entry in userChunk: glre's dst_buff[0], gstore's and
  // gstorepkt's src_buff[0]; the other side is the switch channel, which syncAccess does not
  // count, and neither gstorepkt's packets; glres has no local entry (both sides switch).
  if (plan::isSwitchOp(op.kind)) {
    const LocalChunk user{op.userChunk.buffer, op.userChunk.index, op.userChunk.size};
    if (plan::syncAccess(op.kind, true, 0)) out.push_back(access(id, user, Access::Read));
    if (plan::syncAccess(op.kind, false, 0)) out.push_back(access(id, user, Access::Write));
  }
}
} // namespace

void resolveDataDependency(std::vector<Op> &ops) {
  BuffersAccess record;
  std::vector<Op> out;
  out.reserve(ops.size() + ops.size() / 4);
  std::vector<DataAccess> accesses;
  Op nop;
  nop.kind = OpKind::Nop;
  for (size_t id = 0; id < ops.size(); ++id) {
    Op &op = ops[id];
    if (op.kind == OpKind::Nop || op.kind == OpKind::Barrier) {
      record.clear();
    } else {
      if (op.kind == OpKind::Pipeline) resolveDataDependency(op.ops);
      accesses.clear();
      localDataAccess(op, id, accesses);
      bool added = false;
      for (auto &a : accesses)
        if (record.compute(a) && !added) {
          nop.source = op.source; // the nop is there because of this op
          out.push_back(nop);
          added = true;
        }
    }
    out.push_back(std::move(op));
  }
  ops = std::move(out);
}


} // namespace msccl::passes
