//===- Ast.cpp - Interner and operator spellings ----------------------------------------===//
#include "msccl/frontend/Ast.h"

namespace msccl::ast {

Sym Interner::intern(llvm::StringRef s) {
  auto it = map_.try_emplace(s, static_cast<Sym>(names_.size()));
  if (it.second)
    names_.push_back(s.str());
  return it.first->second;
}

const char *spelling(BinOp op) {
  switch (op) {
  case BinOp::Add: return "+";
  case BinOp::Sub: return "-";
  case BinOp::Mul: return "*";
  case BinOp::Div: return "/";
  case BinOp::Mod: return "%";
  case BinOp::Pow: return "**";
  case BinOp::BitAnd: return "&";
  case BinOp::BitOr: return "|";
  case BinOp::BitXor: return "^";
  case BinOp::Shl: return "<<";
  case BinOp::Shr: return ">>";
  }
  return "?";
}

const char *spelling(CmpOp op) {
  switch (op) {
  case CmpOp::Eq: return "==";
  case CmpOp::Ne: return "!=";
  case CmpOp::Lt: return "<";
  case CmpOp::Le: return "<=";
  case CmpOp::Gt: return ">";
  case CmpOp::Ge: return ">=";
  case CmpOp::In: return "in";
  case CmpOp::NotIn: return "not in";
  }
  return "?";
}

} // namespace msccl::ast
