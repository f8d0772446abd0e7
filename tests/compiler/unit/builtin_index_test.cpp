// BuiltinIndex.h: the compile-time positions the elaborator converts DSL arguments by agree with
// the run-time tables built from the same Builtins.def (which the checks phase binds keywords with).
#include "../../../compiler/lib/elab/BuiltinIndex.h"
#include "msccl/elab/Builtins.h"

#include <catch2/catch.hpp>

using namespace msccl::elab;

TEST_CASE("every method and constructor parameter has its table position", "[builtins]") {
  const BuiltinTables &b = builtins();
  size_t checked = 0;
  for (const MethodInfo &m : b.methods) {
    const std::string &cls = b.classes[size_t(m.cls)].name;
    for (size_t k = 0; k < m.params.size(); ++k, ++checked)
      CHECK(builtin_index::paramIndex(cls, m.name, m.params[k].name) == k);
  }
  for (const ClassInfo &c : b.classes)
    for (size_t k = 0; k < c.ctorParams.size(); ++k, ++checked)
      CHECK(builtin_index::paramIndex(c.name, "", c.ctorParams[k].name) == k);
  CHECK(checked > 100);
  CHECK(builtin_index::paramIndex("Rank", "copy", "no_such_param") == builtin_index::npos);
  CHECK(builtin_index::paramIndex("Rank", "no_such_method", "tb") == builtin_index::npos);
  static_assert(MSCCL_PARAM(Rank, reduce, dst_chunk) == 4);
  static_assert(MSCCL_CTOR_PARAM(MemoryChannel, src_rank) == 1);
}

TEST_CASE("enum member values agree with the tables", "[builtins]") {
  for (const EnumInfo &e : builtins().enums)
    for (const auto &[member, value] : e.members)
      CHECK(builtin_index::builtinEnumValue(e.name, member) == value);
  CHECK(builtin_index::builtinEnumValue("SyncType", "sometimes") == -1);
}
