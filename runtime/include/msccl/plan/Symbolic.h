//===- Symbolic.h - Symbolic (run-time) sizes of AllToAllV plans -------------------------===//
//
// Consumes a plan whose buffer entries are block ranges of an AllToAllV (input block p of rank r
// is counts[r][p] elements, output block p of rank r is counts[p][r] elements, scratch slot k is
// `block_bound` elements and holds one block); produces, checks and evaluates the affine
// expressions that give every entry's offset and length in elements for any count matrix
// (plan#10.8).
//
// Expression grammar (the `index_expr` / `size_expr` strings of a plan):
//   expr := term ('+' term)*          a sum of terms; "0" is the empty sum
//   term := INT | [INT '*'] atom      non-negative integer coefficients
//   atom := 'c[' r ',' p ']'          counts[r][p]
//         | 'row[' r ',' a ':' b ']'  counts[r][a] + ... + counts[r][b-1]   (a prefix sum when a = 0)
//         | 'col[' p ',' a ':' b ']'  counts[a][p] + ... + counts[b-1][p]
//         | 'B'                       variable_sizes.block_bound
// Every value is in elements of the call's data type.
//
// deriveAllToAllV is the compiler's step (and msccl-verify's reference): it writes the
// expressions of every entry from the block ranges, following which block a scratch slot holds
// through the plan's ops; it refuses what cannot be sized that way (a scratch access of more than
// one slot, a slot that holds blocks of two sizes, an op whose entries differ in size for some
// matrix, a glre or pipeline op). checkAllToAllV proves a plan's own expressions are those.
//
// Mirrors: nothing in MSCCL++ (its PR #629 substitutes text macros in a JSON template).
//
//===------------------------------------------------------------------------------------===//
#pragma once
#include "msccl/plan/Plan.h"
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace msccl::plan {

/// One atom of an expression times its coefficient.
struct SymAtom {
  enum class Kind : uint8_t { Const, Cell, Row, Col, Bound };
  Kind kind = Kind::Const;
  uint64_t coef = 0;         ///< Multiplier (Const: the value).
  uint32_t i = 0, a = 0, b = 0; ///< Cell: (r=i, p=a); Row: row i, [a,b); Col: column i, rows [a,b).
};

/// A parsed expression: a sum of atoms.
struct SymExpr {
  std::vector<SymAtom> atoms;
  /// Parses the grammar above. Throws std::invalid_argument("...at column N") when malformed.
  static SymExpr parse(const std::string &text);
  std::string str() const;   ///< Canonical spelling ("0" when empty).
  /// Canonical form for equality: coefficient per cell (r, p), of B and the constant; ranges are
  /// expanded, so `row[0,0:2]` equals `c[0,0] + c[0,1]`.
  struct Normal {
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> cells;
    uint64_t bound = 0, constant = 0;
    bool operator==(const Normal &o) const { return cells == o.cells && bound == o.bound && constant == o.constant; }
  };
  Normal normal() const;
  /// Largest rank index the expression names + 1 (0 when it names none).
  uint32_t ranksNamed() const;
};

/// Something deriveAllToAllV or checkAllToAllV refuses, with the op it is about.
struct SymIssue {
  int32_t rank = -1, tb = -1, op = -1;
  std::string path;    ///< JSON path ("" for the plan), e.g. "gpus[1].threadblocks[0].ops[2].src_buff[0]".
  std::string message; ///< Lower-case, self-contained.
};

/// Writes index_expr/size_expr on every buffer entry of `plan` (which must have variableSizes)
/// and returns the problems (empty: every entry is sized and every op's entries agree for every
/// matrix). gpu sizes stay in blocks (input/output: one chunk per block; scratch: one per slot).
std::vector<SymIssue> deriveAllToAllV(Plan &plan);

/// Checks that `plan` (with variableSizes) is an AllToAllV plan whose expressions are exactly those
/// deriveAllToAllV writes, so that its block-level behaviour (verified as an AllToAll with one
/// chunk per block) carries over to every count matrix. Empty: proved.
std::vector<SymIssue> checkAllToAllV(const Plan &plan);

/// The block-level image of a symbolic AllToAllV plan: the same plan as an "alltoall" with one
/// chunk per block and no expressions (what the chunk-granular verifier runs).
Plan blockImage(const Plan &plan);

} // namespace msccl::plan
