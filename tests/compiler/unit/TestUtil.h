// Small helpers shared by the unit tests.
#pragma once

#include "msccl/ir/IR.h"

#include <string>
#include <vector>

namespace msccl::test {

/// One string per op: printOp, with pipelines as "pipeline{inner; inner}".
inline std::string describe(const ir::Op &op) {
  if (op.kind != ir::OpKind::Pipeline) return ir::printOp(op);
  std::string s = "pipeline{";
  for (size_t i = 0; i < op.ops.size(); ++i) s += (i ? "; " : "") + describe(op.ops[i]);
  return s + "}";
}
/// Op names only (pipelines as "pipeline{a,b}").
inline std::string names(const std::vector<ir::Op> &ops) {
  std::string s;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i) s += ' ';
    s += std::string(ir::opKindName(ops[i].kind));
    if (ops[i].kind == ir::OpKind::Pipeline) s += "{" + names(ops[i].ops) + "}";
  }
  return s;
}
inline ir::ProgramOptions testOptions(int64_t ranks, int64_t in, int64_t out) {
  ir::ProgramOptions o;
  o.name = "t";
  o.collective = ir::Collective::testCollective(ranks, in, out);
  return o;
}

} // namespace msccl::test
