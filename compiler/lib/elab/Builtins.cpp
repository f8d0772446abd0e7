//===- Builtins.cpp - Tables from Builtins.def ------------------------------------------===//
#include "msccl/elab/Builtins.h"

namespace msccl::elab {

const char *describe(ParamType t) {
  switch (t) {
  case ParamType::Any: return "any value";
  case ParamType::Int: return "an int";
  case ParamType::Bool: return "a bool";
  case ParamType::Str: return "a string";
  case ParamType::IntList: return "a list of ints";
  case ParamType::Chunk: return "a chunk (buf[a:b])";
  case ParamType::ChunkList: return "a list of chunks";
  case ParamType::OptChunk: return "a chunk or none";
  case ParamType::OptInt: return "an int or none";
  case ParamType::Collective: return "a collective (AllReduce(...), ...)";
  case ParamType::TbGroup: return "a ThreadBlockGroup or none";
  case ParamType::SyncType: return "a SyncType";
  case ParamType::ReduceOperationType: return "a ReduceOperationType";
  case ParamType::BufferType: return "a BufferType";
  case ParamType::ReplicationPolicy: return "a ReplicationPolicy";
  case ParamType::List: return "a list";
  case ParamType::Map: return "a map";
  case ParamType::None: return "none";
  case ParamType::Size: return "a non-negative int (up to 2**64-1)";
  }
  return "?";
}

namespace {

DefaultValue REQ_() { return {}; }
DefaultValue NONE_() { DefaultValue d; d.kind = DefaultValue::None; return d; }
DefaultValue INT_(int64_t v) { DefaultValue d; d.kind = DefaultValue::Int; d.i = v; return d; }
DefaultValue BOOL_(bool v) { DefaultValue d; d.kind = DefaultValue::Bool; d.i = v; return d; }
DefaultValue STR_(const char *s) { DefaultValue d; d.kind = DefaultValue::Str; d.s = s; return d; }
DefaultValue ENUMV_(EnumId e, int64_t m) { DefaultValue d; d.kind = DefaultValue::Enum; d.enumId = e; d.i = m; return d; }

int64_t enumMemberValue(EnumId e, const char *member);

BuiltinTables build() {
  BuiltinTables t;
#define REQ REQ_()
#define NONE NONE_()
#define INT(v) INT_(v)
#define BOOL(v) BOOL_(v)
#define STR(s) STR_(s)
#define ENUMV(E, m) ENUMV_(EnumId::E, enumMemberValue(EnumId::E, #m))

  // Enums first (defaults refer to them).
#define MSCCL_BUILTIN_ENUM(Name, Summary) t.enums.push_back({#Name, Summary, {}});
#define MSCCL_BUILTIN_ENUM_MEMBER(Enum, Member, Value) \
  t.enums[static_cast<size_t>(EnumId::Enum)].members.push_back({#Member, Value});
#include "msccl/elab/Builtins.def"

#define MSCCL_BUILTIN_FUNCTION(Name, MinArgs, MaxArgs, Summary) t.fns.push_back({#Name, MinArgs, MaxArgs, Summary});
#define MSCCL_BUILTIN_CLASS(Name, Summary) t.classes.push_back({#Name, true, Summary, {}, {}, {}});
#define MSCCL_BUILTIN_TYPE(Name, Summary) t.classes.push_back({#Name, false, Summary, {}, {}, {}});
#include "msccl/elab/Builtins.def"

#define MSCCL_BUILTIN_CTOR_PARAM(Class, Param, Type, Default) \
  t.classes[static_cast<size_t>(ClassId::Class)].ctorParams.push_back({#Param, ParamType::Type, Default});
#define MSCCL_BUILTIN_METHOD(Class, Method, Returns, Summary)                                  \
  t.classes[static_cast<size_t>(ClassId::Class)].methods.push_back(MethodId::Class##_##Method); \
  t.methods.push_back({ClassId::Class, #Method, #Returns, Summary, {}});
#define MSCCL_BUILTIN_METHOD_PARAM(Class, Method, Param, Type, Default) \
  t.methods[static_cast<size_t>(MethodId::Class##_##Method)].params.push_back({#Param, ParamType::Type, Default});
#define MSCCL_BUILTIN_ATTR(Class, Attr, Type, Summary)                                  \
  t.classes[static_cast<size_t>(ClassId::Class)].attrs.push_back(AttrId::Class##_##Attr); \
  t.attrs.push_back({ClassId::Class, #Attr, ParamType::Type, Summary});
#define MSCCL_BUILTIN_PROGRAM_OPTION(Name, Type, Default, Summary) \
  t.options.push_back({#Name, ParamType::Type, Default, Summary});
#include "msccl/elab/Builtins.def"
#undef REQ
#undef NONE
#undef INT
#undef BOOL
#undef STR
#undef ENUMV
  return t;
}

int64_t enumMemberValue(EnumId e, const char *member) {
  // Enum values come straight from Builtins.def (ENUM_MEMBER lines).
  static const std::vector<std::pair<EnumId, std::pair<std::string, int64_t>>> members = [] {
    std::vector<std::pair<EnumId, std::pair<std::string, int64_t>>> m;
#define MSCCL_BUILTIN_ENUM_MEMBER(Enum, Member, Value) m.push_back({EnumId::Enum, {#Member, Value}});
#include "msccl/elab/Builtins.def"
    return m;
  }();
  for (auto &m : members)
    if (m.first == e && m.second.first == member)
      return m.second.second;
  return 0;
}

} // namespace

const BuiltinTables &builtins() {
  static const BuiltinTables t = build();
  return t;
}

} // namespace msccl::elab
