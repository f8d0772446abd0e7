//===- Builtins.h - Typed view of Builtins.def ------------------------------------------===//
//
// Enumerations and tables generated from Builtins.def (the one list of builtin functions, DSL
// classes, methods, attributes, enums and program options). The checks phase and the elaborator
// look names up here; nothing else in the compiler lists builtin names.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace msccl::elab {

enum class BuiltinFnId : uint8_t {
#define MSCCL_BUILTIN_FUNCTION(Name, MinArgs, MaxArgs, Summary) Fn_##Name,
#include "msccl/elab/Builtins.def"
};

/// DSL classes and value types (constructible or not).
enum class ClassId : uint8_t {
#define MSCCL_BUILTIN_CLASS(Name, Summary) Name,
#define MSCCL_BUILTIN_TYPE(Name, Summary) Name,
#include "msccl/elab/Builtins.def"
};

enum class MethodId : uint16_t {
#define MSCCL_BUILTIN_METHOD(Class, Method, Returns, Summary) Class##_##Method,
#include "msccl/elab/Builtins.def"
};

enum class AttrId : uint16_t {
#define MSCCL_BUILTIN_ATTR(Class, Attr, Type, Summary) Class##_##Attr,
#include "msccl/elab/Builtins.def"
};

enum class EnumId : uint8_t {
#define MSCCL_BUILTIN_ENUM(Name, Summary) Name,
#include "msccl/elab/Builtins.def"
};

enum class OptionId : uint8_t {
#define MSCCL_BUILTIN_PROGRAM_OPTION(Name, Type, Default, Summary) Opt_##Name,
#include "msccl/elab/Builtins.def"
};

/// Static parameter types (Builtins.def "Type").
enum class ParamType : uint8_t {
  Any, Int, Bool, Str, IntList, Chunk, ChunkList, OptChunk, OptInt, Collective, TbGroup,
  SyncType, ReduceOperationType, BufferType, ReplicationPolicy, List, Map, None, Size
};
/// "an int", "a Chunk (buf[a:b])", ... for messages.
const char *describe(ParamType t);

struct DefaultValue {
  enum Kind : uint8_t { Required, None, Int, Bool, Str, Enum } kind = Required;
  int64_t i = 0;
  std::string s;
  EnumId enumId{};
};

struct ParamInfo {
  std::string name;
  ParamType type;
  DefaultValue def;
};

struct FnInfo {
  std::string name;
  int minArgs, maxArgs; ///< maxArgs -1: any number
  std::string summary;
};

struct MethodInfo {
  ClassId cls;
  std::string name;
  std::string returns;
  std::string summary;
  std::vector<ParamInfo> params;
};

struct AttrInfo {
  ClassId cls;
  std::string name;
  ParamType type;
  std::string summary;
};

struct ClassInfo {
  std::string name;
  bool constructible;
  std::string summary;
  std::vector<ParamInfo> ctorParams;
  std::vector<MethodId> methods;
  std::vector<AttrId> attrs;
};

struct EnumInfo {
  std::string name;
  std::string summary;
  std::vector<std::pair<std::string, int64_t>> members;
};

struct OptionInfo {
  std::string name;
  ParamType type;
  DefaultValue def;
  std::string summary;
};

/// The tables, indexed by the enumerations above.
struct BuiltinTables {
  std::vector<FnInfo> fns;
  std::vector<ClassInfo> classes;
  std::vector<MethodInfo> methods;
  std::vector<AttrInfo> attrs;
  std::vector<EnumInfo> enums;
  std::vector<OptionInfo> options;

  const FnInfo &fn(BuiltinFnId id) const { return fns[static_cast<size_t>(id)]; }
  const ClassInfo &cls(ClassId id) const { return classes[static_cast<size_t>(id)]; }
  const MethodInfo &method(MethodId id) const { return methods[static_cast<size_t>(id)]; }
  const AttrInfo &attr(AttrId id) const { return attrs[static_cast<size_t>(id)]; }
  const EnumInfo &enumInfo(EnumId id) const { return enums[static_cast<size_t>(id)]; }
  const OptionInfo &option(OptionId id) const { return options[static_cast<size_t>(id)]; }
};

/// The process-wide tables (built once, immutable).
const BuiltinTables &builtins();

} // namespace msccl::elab
