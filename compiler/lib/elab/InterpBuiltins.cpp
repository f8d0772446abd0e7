//===- InterpBuiltins.cpp - Builtin functions, DSL constructors, methods, attributes ----===//
//
// Every DSL call of a .msccl program ends here and becomes exactly one call of the Dsl.h API
// (msccl/ir/Dsl.h); DslError becomes err_dsl at the call with the context notes. Arguments are
// converted with the parameter types of Builtins.def; a wrong type is err_arg_type naming the
// parameter and the callee.
//
//===------------------------------------------------------------------------------------===//
#include "BuiltinIndex.h"
#include "Interp.h"

#include <llvm/ADT/ArrayRef.h>

#include <stdexcept>
#include <string>

namespace msccl::elab {

using namespace msccl::ast;
using diag::DiagId;

// Arguments arrive in Builtins.def's parameter order; every position below is looked up by name
// at compile time (BuiltinIndex.h): `PARAMS(Class, method)` opens a case, `ARG(name)` is the
// position of parameter `name` of that method (a build error if Builtins.def has no such name).
#define PARAMS(Class, Method)                                                                       \
  [[maybe_unused]] constexpr auto paramPos = [](std::string_view n) {                               \
    return builtin_index::paramIndex(#Class, #Method, n);                                            \
  }
#define CTOR_PARAMS(Class) PARAMS(Class, )
#define ARG(Name) builtin_index::checked<paramPos(#Name)>()

// The .def's enum values are the IR's.
static_assert(builtin_index::builtinEnumValue("SyncType", "none") == int64_t(ir::SyncType::None));
static_assert(builtin_index::builtinEnumValue("SyncType", "before") == int64_t(ir::SyncType::Before));
static_assert(builtin_index::builtinEnumValue("SyncType", "after") == int64_t(ir::SyncType::After));
static_assert(builtin_index::builtinEnumValue("SyncType", "both") == int64_t(ir::SyncType::Both));
static_assert(builtin_index::builtinEnumValue("ReduceOperationType", "sum") == int64_t(ir::ReduceOperationType::Sum));
static_assert(builtin_index::builtinEnumValue("ReduceOperationType", "min") == int64_t(ir::ReduceOperationType::Min));
static_assert(builtin_index::builtinEnumValue("ReduceOperationType", "max") == int64_t(ir::ReduceOperationType::Max));
static_assert(builtin_index::builtinEnumValue("BufferType", "input") == int64_t(ir::BufferType::Input));
static_assert(builtin_index::builtinEnumValue("BufferType", "output") == int64_t(ir::BufferType::Output));
static_assert(builtin_index::builtinEnumValue("BufferType", "scratch") == int64_t(ir::BufferType::Scratch));
static_assert(builtin_index::builtinEnumValue("ReplicationPolicy", "interleaved") ==
              int64_t(ir::ReplicationPolicy::Interleaved));
static_assert(builtin_index::builtinEnumValue("ReplicationPolicy", "none") == int64_t(ir::ReplicationPolicy::None));

// ---- argument conversion ----------------------------------------------------------------------

void Interp::badArg(const Value &v, const ArgCtx &c, size_t p, SMLoc loc) {
  const ParamInfo &pi = (*c.params)[p];
  std::string callee = c.method ? "method `" + *c.cls + "." + *c.method + "`" : "`" + *c.cls + "`";
  fail(loc, DiagId::err_arg_type, {pi.name, callee, describe(pi.type), typeName(v)});
}

int64_t Interp::toInt(const Value &v, const ArgCtx &c, size_t p, SMLoc loc) {
  if (!v.isInt())
    badArg(v, c, p, loc);
  return v.asInt();
}
std::optional<int64_t> Interp::toOptInt(const Value &v, const ArgCtx &c, size_t p, SMLoc loc) {
  if (v.isNone())
    return std::nullopt;
  return toInt(v, c, p, loc);
}
bool Interp::toBool(const Value &v, const ArgCtx &c, size_t p, SMLoc loc) {
  if (!v.isBool())
    badArg(v, c, p, loc);
  return v.asBool();
}
const ir::Chunk &Interp::toChunk(const Value &v, const ArgCtx &c, size_t p, SMLoc loc) {
  if (v.kind() == ValueKind::Object)
    if (auto *ch = std::get_if<ir::Chunk>(&v.as<DslObj>().handle))
      return *ch;
  badArg(v, c, p, loc);
}
std::vector<ir::Chunk> Interp::toChunkList(const Value &v, const ArgCtx &c, size_t p, SMLoc loc) {
  if (v.kind() != ValueKind::List && v.kind() != ValueKind::Tuple)
    badArg(v, c, p, loc);
  std::vector<ir::Chunk> out;
  for (auto &x : v.as<ListObj>().items)
    out.push_back(toChunk(x, c, p, loc));
  return out;
}
std::vector<int64_t> Interp::toIntList(const Value &v, const ArgCtx &c, size_t p, SMLoc loc) {
  std::vector<int64_t> out;
  if (v.kind() == ValueKind::Range) {
    auto &r = v.as<RangeObj>();
    for (int64_t i = 0, n = r.length(); i < n; ++i)
      out.push_back(r.at(i));
    return out;
  }
  if (v.kind() != ValueKind::List && v.kind() != ValueKind::Tuple)
    badArg(v, c, p, loc);
  for (auto &x : v.as<ListObj>().items)
    out.push_back(toInt(x, c, p, loc));
  return out;
}
int64_t Interp::toEnum(const Value &v, EnumId e, const ArgCtx &c, size_t p, SMLoc loc) {
  if (v.kind() != ValueKind::Enum || v.enumId() != e)
    badArg(v, c, p, loc);
  return v.enumMember();
}
const ir::ThreadBlockGroup *Interp::toTbGroup(const Value &v, const ArgCtx &c, size_t p, SMLoc loc) {
  if (v.isNone())
    return nullptr;
  if (v.kind() == ValueKind::Object)
    if (auto *g = std::get_if<ir::ThreadBlockGroup>(&v.as<DslObj>().handle))
      return g;
  badArg(v, c, p, loc);
}

Value Interp::defaultValue(const DefaultValue &d) {
  switch (d.kind) {
  case DefaultValue::Int: return Value::integer(d.i);
  case DefaultValue::Bool: return Value::boolean(d.i != 0);
  case DefaultValue::Str: return makeStr(d.s);
  case DefaultValue::Enum: return Value::enumMember(d.enumId, d.i);
  default: return Value();
  }
}

void Interp::collectArgs(const std::vector<Arg> &args, const Binding &b, const std::vector<ParamInfo> &params,
                         ArgValues &out, ArgLocs &locs, SMLoc callLoc) {
  out.clear();
  locs.clear();
  out.reserve(params.size());
  locs.reserve(params.size());
  for (size_t p = 0; p < params.size(); ++p) {
    int a = b.argOf[p];
    if (a >= 0) {
      out.push_back(eval(args[static_cast<size_t>(a)].value));
      locs.push_back(args[static_cast<size_t>(a)].value->loc);
    } else {
      out.push_back(defaultValue(params[p].def));
      locs.push_back(callLoc);
    }
  }
}

// ---- builtin functions --------------------------------------------------------------------------

Value Interp::callBuiltin(const CallExpr *c) {
  auto id = static_cast<BuiltinFnId>(c->callee->index);
  std::vector<Value> a;
  a.reserve(c->args.size());
  for (auto &x : c->args)
    a.push_back(eval(x.value));
  auto argLoc = [&](size_t i) { return i < c->args.size() ? c->args[i].value->loc : c->loc; };
  auto needInt = [&](size_t i, const char *fn) {
    if (!a[i].isInt())
      fail(argLoc(i), DiagId::err_type_mismatch, {std::string("`") + fn + "` needs ints, got " + typeName(a[i])});
    return a[i].asInt();
  };
  switch (id) {
  case BuiltinFnId::Fn_range: {
    int64_t start = 0, stop, step = 1;
    if (a.size() == 1) {
      stop = needInt(0, "range");
    } else {
      start = needInt(0, "range");
      stop = needInt(1, "range");
      if (a.size() == 3)
        step = needInt(2, "range");
    }
    if (step == 0)
      fail(argLoc(2), DiagId::err_range_step_zero);
    return makeRange(start, stop, step);
  }
  case BuiltinFnId::Fn_len: {
    const Value &v = a[0];
    switch (v.kind()) {
    case ValueKind::List:
    case ValueKind::Tuple: return Value::integer(static_cast<int64_t>(v.as<ListObj>().items.size()));
    case ValueKind::Map: return Value::integer(static_cast<int64_t>(v.as<MapObj>().entries.size()));
    case ValueKind::Str: return Value::integer(static_cast<int64_t>(v.as<StrObj>().s.size()));
    case ValueKind::Range: return Value::integer(v.as<RangeObj>().length());
    case ValueKind::Object:
      if (auto *b = std::get_if<ir::Buffer>(&v.as<DslObj>().handle))
        return Value::integer(b->length());
      [[fallthrough]];
    default: fail(argLoc(0), DiagId::err_type_mismatch, {"`len` of " + typeName(v)});
    }
  }
  case BuiltinFnId::Fn_min:
  case BuiltinFnId::Fn_max: {
    const char *fn = id == BuiltinFnId::Fn_min ? "min" : "max";
    std::vector<Value> items;
    if (a.size() == 1 && (a[0].kind() == ValueKind::List || a[0].kind() == ValueKind::Tuple))
      items = a[0].as<ListObj>().items;
    else if (a.size() == 1 && a[0].kind() == ValueKind::Range) {
      auto &r = a[0].as<RangeObj>();
      for (int64_t i = 0; i < r.length(); ++i)
        items.push_back(Value::integer(r.at(i)));
    } else
      items = a;
    if (items.empty())
      fail(c->loc, DiagId::err_empty_min_max, {fn});
    int64_t best = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].isInt())
        fail(argLoc(a.size() == 1 ? 0 : i), DiagId::err_type_mismatch,
             {std::string("`") + fn + "` needs ints, got " + typeName(items[i])});
      int64_t v = items[i].asInt();
      if (i == 0 || (id == BuiltinFnId::Fn_min ? v < best : v > best))
        best = v;
    }
    return Value::integer(best);
  }
  case BuiltinFnId::Fn_abs: {
    int64_t v = needInt(0, "abs");
    if (v == INT64_MIN)
      fail(c->loc, DiagId::err_int_overflow, {"abs", std::to_string(v)});
    return Value::integer(v < 0 ? -v : v);
  }
  case BuiltinFnId::Fn_str: return makeStr(toString(a[0]));
  case BuiltinFnId::Fn_list: {
    if (a.empty())
      return makeList();
    const Value &v = a[0];
    if (v.kind() == ValueKind::List || v.kind() == ValueKind::Tuple)
      return makeList(v.as<ListObj>().items);
    if (v.kind() == ValueKind::Range) {
      auto &r = v.as<RangeObj>();
      if (r.length() > (1 << 28))
        fail(c->loc, DiagId::err_type_mismatch, {"`list` of a range with " + std::to_string(r.length()) + " elements"});
      std::vector<Value> items;
      for (int64_t i = 0; i < r.length(); ++i)
        items.push_back(Value::integer(r.at(i)));
      return makeList(std::move(items));
    }
    if (v.kind() == ValueKind::Map) {
      std::vector<Value> items;
      for (auto &kv : v.as<MapObj>().entries)
        items.push_back(kv.first);
      return makeList(std::move(items));
    }
    fail(argLoc(0), DiagId::err_not_iterable, {typeName(v)});
  }
  case BuiltinFnId::Fn_print: {
    llvm::raw_ostream &os = opts_.printStream ? *opts_.printStream : llvm::errs();
    for (size_t i = 0; i < a.size(); ++i)
      os << (i ? " " : "") << toString(a[i]);
    os << "\n";
    return Value();
  }
  case BuiltinFnId::Fn_assert:
    if (!(a[0].isBool() || a[0].isInt()) || a[0].asInt() == 0) {
      if (!a[0].isBool() && !a[0].isInt())
        fail(argLoc(0), DiagId::err_type_mismatch, {"`assert` condition must be a bool, got " + typeName(a[0])});
      fail(c->loc, DiagId::err_assert_failed, {a.size() > 1 ? toString(a[1]) : "condition is false"});
    }
    return Value();
  case BuiltinFnId::Fn_error: fail(c->loc, DiagId::err_user_error, {toString(a[0])});
  case BuiltinFnId::Fn_chunk:
  case BuiltinFnId::Fn_rank:
  case BuiltinFnId::Fn_Check: { // the mscclpplang style's (InterpStyle.cpp)
    std::vector<SMLoc> l;
    for (size_t i = 0; i < a.size(); ++i)
      l.push_back(argLoc(i));
    return styleCall(id, a, l, c->loc);
  }
  }
  return Value();
}

// ---- DSL constructors -----------------------------------------------------------------------------

Value Interp::construct(const CallExpr *c) {
  auto cls = static_cast<ClassId>(c->callee->index);
  const ClassInfo &ci = builtins().cls(cls);
  ArgValues a;
  ArgLocs locs;
  collectArgs(c->args, c->binding, ci.ctorParams, a, locs, c->loc);
  ArgCtx ac{&ci.name, nullptr, &ci.ctorParams, c->loc};
  if (program_ && (cls == ClassId::MemoryChannel || cls == ClassId::PortChannel))
    program_->setSource(c->loc); // the channel's creation, for diagnostics that name it
  auto I = [&](size_t i) { return toInt(a[i], ac, i, locs[i]); };
  auto B = [&](size_t i) { return toBool(a[i], ac, i, locs[i]); };
  try {
    switch (cls) {
// The collectives table's DSL classes (Collectives.def, Dsl = Yes): Kind(num_ranks,
// chunk_factor, inplace), chunk counts from the row.
#define MSCCL_DSL_CLASS_Yes(Kind)                                                                  \
  case ClassId::Kind: {                                                                            \
    CTOR_PARAMS(Kind);                                                                             \
    return makeDsl(cls, ir::Collective::make(runtime::CollectiveKind::Kind, I(ARG(num_ranks)),     \
                                             I(ARG(chunk_factor)), B(ARG(inplace))));              \
  }
#define MSCCL_DSL_CLASS_No(Kind)
#define MSCCL_COLLECTIVE(Kind, Name, R, B, I, O, P, T, Out, Nccl, Dsl, ...) MSCCL_DSL_CLASS_##Dsl(Kind)
#include "msccl/runtime/Collectives.def"
#undef MSCCL_DSL_CLASS_Yes
#undef MSCCL_DSL_CLASS_No
    case ClassId::AllToAllV: {
      CTOR_PARAMS(AllToAllV);
      return makeDsl(cls, ir::Collective::allToAllV(I(ARG(num_ranks)), I(ARG(max_block))));
    }
    case ClassId::TestCollective: {
      CTOR_PARAMS(TestCollective);
      return makeDsl(cls, ir::Collective::testCollective(I(ARG(num_ranks)), I(ARG(input_size)), I(ARG(output_size))));
    }
    case ClassId::Rank: {
      CTOR_PARAMS(Rank);
      return makeDsl(cls, program(c->loc).rank(I(ARG(rank))));
    }
    case ClassId::Buffer: {
      CTOR_PARAMS(Buffer);
      return makeDsl(cls, program(c->loc).scratchBuffer(I(ARG(rank)), I(ARG(size))));
    }
    case ClassId::MemoryChannel: {
      CTOR_PARAMS(MemoryChannel);
      return makeDsl(cls, program(c->loc).memoryChannel(I(ARG(dst_rank)), I(ARG(src_rank))));
    }
    case ClassId::PortChannel: {
      CTOR_PARAMS(PortChannel);
      return makeDsl(cls, program(c->loc).portChannel(I(ARG(dst_rank)), I(ARG(src_rank))));
    }
    case ClassId::SwitchChannel: {
      CTOR_PARAMS(SwitchChannel);
      constexpr size_t r = ARG(rank_list), t = ARG(buffer_type);
      auto ranks = toIntList(a[r], ac, r, locs[r]);
      auto bt = static_cast<ir::BufferType>(toEnum(a[t], EnumId::BufferType, ac, t, locs[t]));
      return makeDsl(cls, program(c->loc).switchChannel(ranks, bt));
    }
    case ClassId::Semaphore: {
      CTOR_PARAMS(Semaphore);
      return makeDsl(cls, program(c->loc).semaphore(I(ARG(rank)), I(ARG(initial_value))));
    }
    case ClassId::ThreadBlockGroup: {
      CTOR_PARAMS(ThreadBlockGroup);
      constexpr size_t l = ARG(tb_list);
      return makeDsl(cls, ir::ThreadBlockGroup(toIntList(a[l], ac, l, locs[l])));
    }
    case ClassId::LoopIterationContext: {
      CTOR_PARAMS(LoopIterationContext);
      return makeDsl(cls, LoopContext{I(ARG(unit)), I(ARG(num_chunks))});
    }
    default: break;
    }
  } catch (const ir::DslError &e) {
    failDsl(c->loc, e);
  }
  fail(c->loc, DiagId::err_not_callable);
}

// ---- methods ----------------------------------------------------------------------------------------

static ClassId classOf(const Value &v, bool &ok) {
  ok = true;
  switch (v.kind()) {
  case ValueKind::List: return ClassId::list;
  case ValueKind::Map: return ClassId::map;
  case ValueKind::Object: return v.as<DslObj>().cls;
  default: ok = false; return ClassId::list;
  }
}

Value Interp::methodCall(const MethodCallExpr *m) {
  Value self = eval(m->object);
  bool ok;
  ClassId cls = classOf(self, ok);
  const auto &b = builtins();
  if (!ok)
    fail(m->loc, DiagId::err_unknown_method, {typeName(self), names().str(m->method), ""});
  // Call-site cache: the last receiver class and its binding.
  MethodId id{};
  if (m->cachedMethod >= 0 && b.method(static_cast<MethodId>(m->cachedMethod)).cls == cls) {
    id = static_cast<MethodId>(m->cachedMethod);
  } else {
    const std::string &name = names().str(m->method);
    const MethodInfo *found = nullptr;
    for (MethodId x : b.cls(cls).methods)
      if (b.method(x).name == name) {
        found = &b.method(x);
        id = x;
      }
    if (!found) {
      std::vector<std::string> cands;
      for (MethodId x : b.cls(cls).methods)
        cands.push_back(b.method(x).name);
      fail(m->loc, DiagId::err_unknown_method, {b.cls(cls).name, name, diag::didYouMean(name, cands)});
    }
    std::vector<ParamSig> sig;
    for (auto &p : found->params)
      sig.push_back({const_cast<Interner &>(names()).intern(p.name), p.def.kind == DefaultValue::Required});
    Binding bnd;
    std::string desc = "method `" + b.cls(cls).name + "." + found->name + "`";
    std::optional<EvalError> err;
    bindArguments(m->args, sig, desc, names(), m->loc, bnd, [&](SMLoc l, DiagId d, std::vector<std::string> a) {
      if (!err)
        err = EvalError{l, d, std::move(a), {}};
    });
    if (err)
      fail(err->loc, err->id, err->args);
    m->cachedMethod = static_cast<int>(id);
    m->cachedBinding = std::move(bnd);
  }
  ArgValues args;
  ArgLocs locs;
  collectArgs(m->args, m->cachedBinding, b.method(id).params, args, locs, m->loc);
  return callMethod(id, self, args, locs, m->loc);
}

namespace {

using Handle = decltype(DslObj::handle);

/// The arguments of one method call, converted by position with the parameter types of
/// Builtins.def: I int, OI optional int, C chunk, OC optional chunk, G threadblock group,
/// S SyncType, R ReduceOperationType, B bool, CL chunk list, IL int list.
struct MethodArgs {
  Interp &in;
  llvm::ArrayRef<Value> a;
  llvm::ArrayRef<SMLoc> locs;
  const Interp::ArgCtx &ac;
  int64_t I(size_t i) const { return in.toInt(a[i], ac, i, locs[i]); }
  std::optional<int64_t> OI(size_t i) const { return in.toOptInt(a[i], ac, i, locs[i]); }
  const ir::Chunk &C(size_t i) const { return in.toChunk(a[i], ac, i, locs[i]); }
  std::optional<ir::Chunk> OC(size_t i) const {
    if (a[i].isNone())
      return std::nullopt;
    return in.toChunk(a[i], ac, i, locs[i]);
  }
  const ir::ThreadBlockGroup *G(size_t i) const { return in.toTbGroup(a[i], ac, i, locs[i]); }
  ir::SyncType S(size_t i) const {
    return static_cast<ir::SyncType>(in.toEnum(a[i], EnumId::SyncType, ac, i, locs[i]));
  }
  ir::ReduceOperationType R(size_t i) const {
    return static_cast<ir::ReduceOperationType>(in.toEnum(a[i], EnumId::ReduceOperationType, ac, i, locs[i]));
  }
  bool B(size_t i) const { return in.toBool(a[i], ac, i, locs[i]); }
  std::vector<ir::Chunk> CL(size_t i) const { return in.toChunkList(a[i], ac, i, locs[i]); }
  std::vector<int64_t> IL(size_t i) const { return in.toIntList(a[i], ac, i, locs[i]); }
};

// One function per method family, with one case per Builtins.def method, opened with
// PARAMS(Class, method) for its parameter names. A DslError they throw reaches callMethod.

/// callMethod hands each method to its family's function below; one that reaches a family without
/// a case for it is a compiler bug (the family would otherwise return none without a word).
std::logic_error misrouted(MethodId id, const char *family) {
  return std::logic_error("internal: method " + std::to_string(int(id)) + " was handed to the " + family +
                          " methods, which have no case for it");
}

/// list and map: append; keys, values, items, get.
Value containerMethod(MethodId id, const Value &self, llvm::ArrayRef<Value> a) {
  switch (id) {
  case MethodId::list_append: {
    PARAMS(list, append); self.as<ListObj>().items.push_back(a[ARG(x)]); return Value(); }
  case MethodId::map_keys:
  case MethodId::map_values:
  case MethodId::map_items: {
    std::vector<Value> out;
    for (auto &kv : self.as<MapObj>().entries)
      out.push_back(id == MethodId::map_keys     ? kv.first
                    : id == MethodId::map_values ? kv.second
                                                 : makeTuple({kv.first, kv.second}));
    return makeList(std::move(out));
  }
  case MethodId::map_get: {
    PARAMS(map, get);
    Value *v = self.as<MapObj>().find(a[ARG(key)]);
    return v ? *v : a[ARG(default)];
  }
  default:
    break;
  }
  throw misrouted(id, "container");
}

/// Rank: its buffers, local copies and reductions, barrier.
Value rankMethod(MethodId id, const Handle &h, const MethodArgs &x) {
  switch (id) {
  case MethodId::Rank_get_input_buffer: {
    PARAMS(Rank, get_input_buffer);
    return makeDsl(ClassId::Buffer, std::get<ir::Rank>(h).getInputBuffer());
  }
  case MethodId::Rank_get_output_buffer: {
    PARAMS(Rank, get_output_buffer);
    return makeDsl(ClassId::Buffer, std::get<ir::Rank>(h).getOutputBuffer());
  }
  case MethodId::Rank_copy: {
    PARAMS(Rank, copy);
    std::get<ir::Rank>(h).copy(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.OI(ARG(tb)), x.G(ARG(tb_group)));
    return Value();
  }
  case MethodId::Rank_copy_packets: {
    PARAMS(Rank, copy_packets);
    std::get<ir::Rank>(h).copyPackets(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.OI(ARG(tb)), x.G(ARG(tb_group)));
    return Value();
  }
  case MethodId::Rank_unpack_packets: {
    PARAMS(Rank, unpack_packets);
    std::get<ir::Rank>(h).unpackPackets(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.OI(ARG(tb)), x.G(ARG(tb_group)));
    return Value();
  }
  case MethodId::Rank_reduce: {
    PARAMS(Rank, reduce);
    std::get<ir::Rank>(h).reduce(x.C(ARG(src_chunk)), x.CL(ARG(other_chunks)), x.OI(ARG(tb)), x.G(ARG(tb_group)),
                                 x.OC(ARG(dst_chunk)), x.R(ARG(reduce_op)), x.B(ARG(packet)));
    return Value();
  }
  case MethodId::Rank_barrier: {
    PARAMS(Rank, barrier); std::get<ir::Rank>(h).barrier(x.IL(ARG(tb_list))); return Value(); }
  default:
    break;
  }
  throw misrouted(id, "rank");
}

/// MemoryChannel: signal, wait, get, put (packets), reduce.
Value memoryChannelMethod(MethodId id, const Handle &h, const MethodArgs &x) {
  switch (id) {
  case MethodId::MemoryChannel_signal: {
    PARAMS(MemoryChannel, signal);
    std::get<ir::MemoryChannel>(h).signal(x.I(ARG(tb)), x.S(ARG(data_sync)), x.B(ARG(relaxed)));
    return Value();
  }
  case MethodId::MemoryChannel_wait: {
    PARAMS(MemoryChannel, wait);
    std::get<ir::MemoryChannel>(h).wait(x.I(ARG(tb)), x.S(ARG(data_sync)), x.B(ARG(relaxed)));
    return Value();
  }
  case MethodId::MemoryChannel_get: {
    PARAMS(MemoryChannel, get);
    std::get<ir::MemoryChannel>(h).get(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.OI(ARG(tb)), x.G(ARG(tb_group)));
    return Value();
  }
  case MethodId::MemoryChannel_put: {
    PARAMS(MemoryChannel, put);
    std::get<ir::MemoryChannel>(h).put(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.OI(ARG(tb)), x.G(ARG(tb_group)));
    return Value();
  }
  case MethodId::MemoryChannel_put_packets: {
    PARAMS(MemoryChannel, put_packets);
    std::get<ir::MemoryChannel>(h).putPackets(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.OI(ARG(tb)),
                                              x.G(ARG(tb_group)));
    return Value();
  }
  case MethodId::MemoryChannel_read_put_packets: {
    PARAMS(MemoryChannel, read_put_packets);
    std::get<ir::MemoryChannel>(h).readPutPackets(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.OI(ARG(tb)),
                                                  x.G(ARG(tb_group)));
    return Value();
  }
  case MethodId::MemoryChannel_reduce: {
    PARAMS(MemoryChannel, reduce);
    std::get<ir::MemoryChannel>(h).reduce(x.C(ARG(local_src_chunk)), x.CL(ARG(remote_src_chunks)), x.OI(ARG(tb)),
                                          x.G(ARG(tb_group)), x.OC(ARG(local_dst_chunk)), x.R(ARG(reduce_op)));
    return Value();
  }
  default:
    break;
  }
  throw misrouted(id, "memoryChannel");
}

/// PortChannel: signal, wait, flush, the puts.
Value portChannelMethod(MethodId id, const Handle &h, const MethodArgs &x) {
  switch (id) {
  case MethodId::PortChannel_signal: {
    PARAMS(PortChannel, signal);
    std::get<ir::PortChannel>(h).signal(x.I(ARG(tb)), x.S(ARG(data_sync)));
    return Value();
  }
  case MethodId::PortChannel_wait: {
    PARAMS(PortChannel, wait); std::get<ir::PortChannel>(h).wait(x.I(ARG(tb)), x.S(ARG(data_sync))); return Value(); }
  case MethodId::PortChannel_flush: {
    PARAMS(PortChannel, flush); std::get<ir::PortChannel>(h).flush(x.I(ARG(tb)), x.S(ARG(data_sync))); return Value(); }
  case MethodId::PortChannel_put: {
    PARAMS(PortChannel, put);
    std::get<ir::PortChannel>(h).put(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.I(ARG(tb)));
    return Value();
  }
  case MethodId::PortChannel_put_with_signal: {
    PARAMS(PortChannel, put_with_signal);
    std::get<ir::PortChannel>(h).putWithSignal(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.I(ARG(tb)));
    return Value();
  }
  case MethodId::PortChannel_put_with_signal_and_flush: {
    PARAMS(PortChannel, put_with_signal_and_flush);
    std::get<ir::PortChannel>(h).putWithSignalAndFlush(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.I(ARG(tb)));
    return Value();
  }
  case MethodId::PortChannel_put_packets: {
    PARAMS(PortChannel, put_packets);
    std::get<ir::PortChannel>(h).putPackets(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.I(ARG(tb)));
    return Value();
  }
  case MethodId::PortChannel_read_put_packets: {
    PARAMS(PortChannel, read_put_packets);
    std::get<ir::PortChannel>(h).readPutPackets(x.C(ARG(dst_chunk)), x.C(ARG(src_chunk)), x.OI(ARG(tb)),
                                                x.G(ARG(tb_group)));
    return Value();
  }
  default:
    break;
  }
  throw misrouted(id, "portChannel");
}

/// SwitchChannel.at_rank and the rank view's reduce and broadcasts.
Value switchChannelMethod(MethodId id, const Handle &h, const MethodArgs &x) {
  switch (id) {
  case MethodId::SwitchChannel_at_rank: {
    PARAMS(SwitchChannel, at_rank);
    return makeDsl(ClassId::SwitchChannelRankView, std::get<ir::SwitchChannel>(h).atRank(x.I(ARG(rank))));
  }
  case MethodId::SwitchChannelRankView_reduce: {
    PARAMS(SwitchChannelRankView, reduce);
    std::get<ir::SwitchChannelRankView>(h).reduce(x.I(ARG(buffer_offset)), x.I(ARG(size)), x.C(ARG(dst_chunk)),
                                                  x.I(ARG(tb)), x.R(ARG(reduce_op)));
    return Value();
  }
  case MethodId::SwitchChannelRankView_broadcast: {
    PARAMS(SwitchChannelRankView, broadcast);
    std::get<ir::SwitchChannelRankView>(h).broadcast(x.C(ARG(src_chunk)), x.I(ARG(buffer_offset)), x.I(ARG(size)),
                                                     x.I(ARG(tb)));
    return Value();
  }
  case MethodId::SwitchChannelRankView_broadcast_packets: {
    PARAMS(SwitchChannelRankView, broadcast_packets);
    std::get<ir::SwitchChannelRankView>(h).broadcastPackets(x.C(ARG(src_chunk)), x.I(ARG(buffer_offset)),
                                                            x.I(ARG(size)), x.I(ARG(tb)));
    return Value();
  }
  default:
    break;
  }
  throw misrouted(id, "switchChannel");
}

/// ThreadBlockGroup.numtb and the Semaphore's acquire and release.
Value syncMethod(MethodId id, const Handle &h, const MethodArgs &x) {
  switch (id) {
  case MethodId::ThreadBlockGroup_numtb: {
    PARAMS(ThreadBlockGroup, numtb);
    return Value::integer(std::get<ir::ThreadBlockGroup>(h).numtb());
  }
  case MethodId::Semaphore_acquire: {
    PARAMS(Semaphore, acquire); std::get<ir::Semaphore>(h).acquire(x.I(ARG(tb)), x.S(ARG(data_sync))); return Value(); }
  case MethodId::Semaphore_release: {
    PARAMS(Semaphore, release); std::get<ir::Semaphore>(h).release(x.I(ARG(tb)), x.S(ARG(data_sync))); return Value(); }
  default:
    break;
  }
  throw misrouted(id, "sync");
}

} // namespace

Value Interp::callMethod(MethodId id, const Value &self, ArgValues &a, const ArgLocs &locs, SMLoc loc) {
  if (program_ && self.kind() == ValueKind::Object)
    program_->setSource(loc); // the ops this DSL call adds come from here
  const auto &b = builtins();
  const MethodInfo &mi = b.method(id);
  ArgCtx ac{&b.cls(mi.cls).name, &mi.name, &mi.params, loc};
  const MethodArgs x{*this, a, locs, ac};
  static const Handle kNoHandle{LoopContext{0, 0}};
  const auto &h = self.kind() == ValueKind::Object ? self.as<DslObj>().handle : kNoHandle;
  // Every Builtins.def method is named here (-Werror=switch), handed to its family.
  try {
    switch (id) {
    case MethodId::ChunkRef_put: case MethodId::ChunkRef_put_packet: case MethodId::ChunkRef_get:
    case MethodId::ChunkRef_signal: case MethodId::ChunkRef_flush: case MethodId::ChunkRef_wait:
    case MethodId::ChunkRef_copy: case MethodId::ChunkRef_copy_packet: case MethodId::ChunkRef_reduce:
    case MethodId::ChunkRef_reduce_packet: case MethodId::ChunkRef_group_load_reduce:
    case MethodId::ChunkRef_group_store: case MethodId::ChunkRef_split: case MethodId::ChunkRef_group:
    case MethodId::RankRef_barrier: return styleMethod(id, self, a, locs, loc); // InterpStyle.cpp
    case MethodId::list_append: case MethodId::map_keys: case MethodId::map_values: case MethodId::map_items:
    case MethodId::map_get: return containerMethod(id, self, a);
    case MethodId::Rank_get_input_buffer: case MethodId::Rank_get_output_buffer: case MethodId::Rank_copy:
    case MethodId::Rank_copy_packets: case MethodId::Rank_unpack_packets: case MethodId::Rank_reduce:
    case MethodId::Rank_barrier: return rankMethod(id, h, x);
    case MethodId::MemoryChannel_signal: case MethodId::MemoryChannel_wait: case MethodId::MemoryChannel_get:
    case MethodId::MemoryChannel_put: case MethodId::MemoryChannel_put_packets:
    case MethodId::MemoryChannel_read_put_packets: case MethodId::MemoryChannel_reduce:
      return memoryChannelMethod(id, h, x);
    case MethodId::PortChannel_signal: case MethodId::PortChannel_wait: case MethodId::PortChannel_flush:
    case MethodId::PortChannel_put: case MethodId::PortChannel_put_with_signal:
    case MethodId::PortChannel_put_with_signal_and_flush: case MethodId::PortChannel_put_packets:
    case MethodId::PortChannel_read_put_packets: return portChannelMethod(id, h, x);
    case MethodId::SwitchChannel_at_rank: case MethodId::SwitchChannelRankView_reduce:
    case MethodId::SwitchChannelRankView_broadcast: case MethodId::SwitchChannelRankView_broadcast_packets:
      return switchChannelMethod(id, h, x);
    case MethodId::ThreadBlockGroup_numtb: case MethodId::Semaphore_acquire:
    case MethodId::Semaphore_release: return syncMethod(id, h, x);
    }
  } catch (const ir::DslError &e) {
    failDsl(loc, e);
  }
  return Value();
}

// ---- attributes ----------------------------------------------------------------------------------------

Value Interp::attr(const AttrExpr *x) {
  if (x->enumId >= 0)
    return Value::enumMember(static_cast<EnumId>(x->enumId), x->member);
  Value obj = eval(x->object);
  const std::string &name = names().str(x->name);
  if (obj.kind() == ValueKind::Object) {
    auto &o = obj.as<DslObj>();
    const auto &b = builtins();
    std::optional<AttrId> id;
    for (AttrId a : b.cls(o.cls).attrs)
      if (b.attr(a).name == name)
        id = a;
    if (!id) {
      std::vector<std::string> cands;
      for (AttrId a : b.cls(o.cls).attrs)
        cands.push_back(b.attr(a).name);
      fail(x->loc, DiagId::err_unknown_attribute, {b.cls(o.cls).name, name, diag::didYouMean(name, cands)});
    }
    auto bufferEnum = [](ir::BufferType t) { return Value::enumMember(EnumId::BufferType, static_cast<int64_t>(t)); };
    const auto &h = o.handle;
    switch (*id) { // one case per Builtins.def attribute (-Wswitch names a missing one)
    case AttrId::Rank_rank: return Value::integer(std::get<ir::Rank>(h).rank());
    case AttrId::Buffer_rank: return Value::integer(std::get<ir::Buffer>(h).rank);
    case AttrId::Buffer_offset: return Value::integer(std::get<ir::Buffer>(h).offset);
    case AttrId::Buffer_size: return Value::integer(std::get<ir::Buffer>(h).end);
    case AttrId::Buffer_buffer_type: return bufferEnum(std::get<ir::Buffer>(h).type);
    case AttrId::Chunk_rank: return Value::integer(std::get<ir::Chunk>(h).rank);
    case AttrId::Chunk_buffer: return bufferEnum(std::get<ir::Chunk>(h).buffer);
    case AttrId::Chunk_index: return Value::integer(std::get<ir::Chunk>(h).index);
    case AttrId::Chunk_size: return Value::integer(std::get<ir::Chunk>(h).size);
    case AttrId::MemoryChannel_src_rank: return Value::integer(std::get<ir::MemoryChannel>(h).srcRank());
    case AttrId::MemoryChannel_dst_rank: return Value::integer(std::get<ir::MemoryChannel>(h).dstRank());
    case AttrId::PortChannel_src_rank: return Value::integer(std::get<ir::PortChannel>(h).srcRank());
    case AttrId::PortChannel_dst_rank: return Value::integer(std::get<ir::PortChannel>(h).dstRank());
    case AttrId::ChunkRef_rank: case AttrId::ChunkRef_buffer: case AttrId::ChunkRef_index:
    case AttrId::ChunkRef_size: return styleAttr(*id, obj, x->loc); // InterpStyle.cpp
    case AttrId::ThreadBlockGroup_tb_list: {
      std::vector<Value> items;
      for (int64_t tb : std::get<ir::ThreadBlockGroup>(h).tbList)
        items.push_back(Value::integer(tb));
      return makeList(std::move(items));
    }
    }
  }
  fail(x->loc, DiagId::err_unknown_attribute, {typeName(obj), name, ""});
}

} // namespace msccl::elab
