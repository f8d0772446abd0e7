//===- BuiltinIndex.h - Compile-time lookups into Builtins.def ------------------------===//
//
// The elaborator converts a DSL call's arguments by parameter position (InterpBuiltins.cpp).
// Positions are never written by hand: `MSCCL_PARAM(Class, method, param)` is the position of
// `param` among the parameters of `Class.method` in Builtins.def (likewise MSCCL_CTOR_PARAM for
// constructors), computed at compile time from the .def itself. Renaming, removing or
// reordering a parameter in Builtins.def either keeps every call right or stops the build.
// `builtinEnumValue("SyncType", "before")` is a member's value, so static_asserts can tie the
// .def's enum values to the IR's (InterpBuiltins.cpp).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace msccl::elab::builtin_index {

struct ParamRow {
  std::string_view cls, method, param; ///< method "" for a constructor parameter
};
struct EnumRow {
  std::string_view enumName, member;
  int64_t value;
};

inline constexpr ParamRow kParams[] = {
#define MSCCL_BUILTIN_CTOR_PARAM(Class, Param, Type, Default) {#Class, "", #Param},
#define MSCCL_BUILTIN_METHOD_PARAM(Class, Method, Param, Type, Default) {#Class, #Method, #Param},
#include "msccl/elab/Builtins.def"
};
inline constexpr EnumRow kEnumMembers[] = {
#define MSCCL_BUILTIN_ENUM_MEMBER(Enum, Member, Value) {#Enum, #Member, Value},
#include "msccl/elab/Builtins.def"
};

inline constexpr size_t npos = ~size_t(0);

/// Position of `param` among the parameters of `cls.method` (method "": the constructor), or npos.
constexpr size_t paramIndex(std::string_view cls, std::string_view method, std::string_view param) {
  size_t k = 0;
  for (const ParamRow &r : kParams) {
    if (r.cls != cls || r.method != method)
      continue;
    if (r.param == param)
      return k;
    ++k;
  }
  return npos;
}

/// The value of `member` of the builtin enum `enumName`, or -1.
constexpr int64_t builtinEnumValue(std::string_view enumName, std::string_view member) {
  for (const EnumRow &r : kEnumMembers)
    if (r.enumName == enumName && r.member == member)
      return r.value;
  return -1;
}

/// Forces compile-time evaluation and a readable error for a name not in Builtins.def.
template <size_t I> constexpr size_t checked() {
  static_assert(I != npos, "no such parameter in Builtins.def");
  return I;
}

} // namespace msccl::elab::builtin_index

/// The position of parameter `Param` of method `Class.Method` in Builtins.def (a constant).
#define MSCCL_PARAM(Class, Method, Param)                                                            \
  (::msccl::elab::builtin_index::checked<::msccl::elab::builtin_index::paramIndex(#Class, #Method, #Param)>())
/// The position of constructor parameter `Param` of `Class` in Builtins.def (a constant).
#define MSCCL_CTOR_PARAM(Class, Param)                                                               \
  (::msccl::elab::builtin_index::checked<::msccl::elab::builtin_index::paramIndex(#Class, "", #Param)>())
