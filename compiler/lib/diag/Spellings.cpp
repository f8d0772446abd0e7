//===- Spellings.cpp - The old -> new spelling table (Spellings.def) as data ------------===//
#include "msccl/diag/Spellings.h"

#include <string>

namespace msccl::diag {

const std::vector<Spelling> &spellings() {
  static const std::vector<Spelling> rows = {
#define MSCCL_SPELLING(K, Old, A, Today, Extra, FixIt)                                              \
  Spelling{Spelling::Kind::K, Old, Spelling::Action::A, Today, Extra, FixIt},
#include "msccl/diag/Spellings.def"
  };
  return rows;
}

const Spelling *findSpelling(Spelling::Kind kind, std::string_view old) {
  for (const Spelling &s : spellings())
    if (s.kind == kind && s.old == old)
      return &s;
  return nullptr;
}

std::string quoteOld(const Spelling &s) {
  std::string o(s.old);
  switch (s.kind) {
  case Spelling::Kind::Method: return "`." + o + "(...)`";
  case Spelling::Kind::Keyword: return "`" + o + " = ...`";
  case Spelling::Kind::Syntax: return "`with ... " + o + " NAME`";
  default: return "`" + o + "`";
  }
}

} // namespace msccl::diag
