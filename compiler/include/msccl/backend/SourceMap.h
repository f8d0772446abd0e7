//===- SourceMap.h - Plan op path -> .msccl call site ------------------------------------===//
//
// Consumes: what lowering records per plan op (the ir::Op::source and ir::Op::fusedSources of
//   the IR op it lowered, nested for pipelines) and the program's ir::SourceTable.
// Produces: for every plan op path, e.g. `gpus[0].threadblocks[1].ops[3]` or, inside a
//   pipeline, `gpus[0].threadblocks[1].ops[3].ops[0]` (the path of plan::Plan / the JSON plan,
//   threadblock and op positions in their lists), the .msccl call that created the op: file,
//   line, column and the dynamic context it ran in (loop values, fn calls, `with` pipelines),
//   plus the calls of the ops fusion merged into it. `mscclc --source-map FILE` writes it as
//   JSON (format: docs/source-map.md); tools that check plans (a plan verifier, msccl-run's
//   deadlock reports) look ops up with lookupSource().
// Guarantees: every plan op of a program compiled from a .msccl file is in the map; ops that
//   have no location (built through the C++ API) are absent. Replicated instances of an op
//   share its location. Lowering fills the map while it streams; memory: about 50 bytes per
//   plan op, only when a map was asked for.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/IR.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace msccl::backend {

/// One frame of the context around a call, as the notes of an elaboration error name it.
struct SourceFrame {
  std::string kind;   ///< "for", "call", "with" or "param".
  std::string file;
  unsigned line = 0, col = 0; ///< 1-based; the `for`/call/`with` statement, the param's first use.
  std::string name;   ///< for: the loop variables ("gpu", "(a, b)"); call: the fn; param: its name.
  std::string value;  ///< for: their values ("3", "(1, 2)"); empty otherwise.
};

/// Where a plan op comes from.
struct SourceLocation {
  std::string file;
  unsigned line = 0, col = 0;          ///< 1-based line and column of the DSL call.
  std::vector<SourceFrame> context;    ///< Outermost first.
  std::vector<SourceLocation> fused;   ///< The ops fusion merged into this one, in order.
};

/// What lowering records for one plan op.
struct OpSourceEntry {
  uint32_t source = 0;                 ///< ir::SourceTable::ops id (0 = unknown).
  ir::SourceIdList fused;
  std::vector<OpSourceEntry> inner;    ///< A pipeline's ops.
};

class SourceMap {
public:
  /// A map whose locations are resolved through `sm` (the compilation's llvm::SourceMgr, which
  /// must outlive the map). Call setSources() before looking anything up.
  explicit SourceMap(const llvm::SourceMgr *sm = nullptr) : sm_(sm) {}

  /// The op at `opPath` (`gpus[G].threadblocks[T].ops[I]` followed by `.ops[J]` per pipeline
  /// level; no spaces). nullopt when the path is malformed, names no op, or the op has no location.
  std::optional<SourceLocation> lookupSource(std::string_view opPath) const;
  /// The same by positions: gpu, threadblock, then the op index at each pipeline level.
  std::optional<SourceLocation> lookupSource(size_t gpu, size_t tb, llvm::ArrayRef<size_t> ops) const;
  /// What lowering recorded for that op (its source ids); null when the map names no such op.
  const OpSourceEntry *entry(size_t gpu, size_t tb, llvm::ArrayRef<size_t> ops) const;

  /// Writes the map as JSON (docs/source-map.md): {"version": 1, "ops": {PATH: LOCATION, ...}},
  /// paths in plan order.
  void writeJson(llvm::raw_ostream &os) const;

  // --- Filled by lowering (Lower.h) ---
  /// The entries of gpu `gpu`'s threadblocks (in plan order), created on first use.
  std::vector<std::vector<OpSourceEntry>> &gpu(size_t gpu);
  /// The source table the entries' ids refer to (the program's, copied or moved in).
  void setSources(ir::SourceTable sources) { table_ = std::move(sources); }
  const ir::SourceTable &sources() const { return table_; }
  /// The resolved location of source id `id` (nullopt for 0 or an id without a valid SMLoc).
  std::optional<SourceLocation> resolve(uint32_t id, const ir::SourceIdList *fused = nullptr) const;

private:
  const llvm::SourceMgr *sm_;
  ir::SourceTable table_;
  std::vector<std::vector<std::vector<OpSourceEntry>>> gpus_; ///< [gpu][tb][op]
};

} // namespace msccl::backend
