//===- Elaborate.cpp - Params, -D, program options, the program body --------------------===//
#include "msccl/elab/Elaborate.h"
#include "msccl/ir/IR.h"

#include "Interp.h"
#include "msccl/frontend/Parser.h"

namespace msccl::elab {

using namespace msccl::ast;
using diag::DiagId;

namespace {

void report(diag::DiagEngine &diag, const EvalError &e) {
  diag.report(e.loc, e.id, e.args);
  for (auto &n : e.notes)
    diag.report(n.loc, n.id, n.args);
}

/// -D / option text -> Value (int with suffixes, true/false/none, string, `Enum.member` or a
/// bare enum member name when `enumHint` is given).
bool parseValueText(const std::string &text, Value &out, std::string &error, const EnumInfo *enumHint = nullptr,
                    EnumId enumId = EnumId::SyncType) {
  if (enumHint) {
    llvm::StringRef t = llvm::StringRef(text).trim();
    if (t.startswith(enumHint->name + "."))
      t = t.drop_front(enumHint->name.size() + 1);
    for (auto &m : enumHint->members)
      if (m.first == t) {
        out = Value::enumMember(enumId, m.second);
        return true;
      }
  }
  frontend::LiteralValue lv;
  if (!frontend::parseLiteral(text, lv, error))
    return false;
  switch (lv.kind) {
  case frontend::LiteralValue::Int: out = Value::integer(lv.i); break;
  case frontend::LiteralValue::U64: out = Value::u64(static_cast<uint64_t>(lv.i)); break;
  case frontend::LiteralValue::Bool: out = Value::boolean(lv.i != 0); break;
  case frontend::LiteralValue::None: out = Value(); break;
  case frontend::LiteralValue::Str: out = makeStr(lv.s); break;
  }
  return true;
}

class OptionReader {
public:
  OptionReader(Interp &in) : in_(in) {}

  /// Converts one option value; `loc` may be invalid (command line).
  void apply(ir::ProgramOptions &po, OptionId id, const Value &v, SMLoc loc, const std::string &progName) {
    const OptionInfo &oi = builtins().option(id);
    auto bad = [&]() {
      in_.fail(loc, DiagId::err_bad_program_option, {oi.name, "must be " + std::string(describe(oi.type)) + ", got " + typeName(v) +
                                                      (v.kind() == ValueKind::Str ? " \"" + toString(v) + "\"" : "")});
    };
    auto needInt = [&]() { if (!v.isInt()) bad(); return v.asInt(); };
    auto needBool = [&]() { if (!v.isBool()) bad(); return v.asBool(); };
    auto needSize = [&]() -> uint64_t {
      if (v.kind() == ValueKind::U64) return v.asU64();
      if (!v.isInt() || v.asInt() < 0) bad();
      return static_cast<uint64_t>(v.asInt());
    };
    switch (id) {
    case OptionId::Opt_name:
      if (v.isNone()) po.name = progName;
      else if (v.kind() == ValueKind::Str) po.name = v.as<StrObj>().s;
      else bad();
      break;
    case OptionId::Opt_collective:
      if (v.kind() != ValueKind::Object || !std::holds_alternative<CollectiveBox>(v.as<DslObj>().handle)) bad();
      po.collective = *std::get<CollectiveBox>(v.as<DslObj>().handle);
      break;
    case OptionId::Opt_num_ranks: po.numRanks = v.isNone() ? -1 : needInt(); break;
    case OptionId::Opt_instances:
      po.instances = needInt();
      if (po.instances > ir::kMaxInstances) // negative: ir::Program reports it as the DSL does
        in_.fail(loc, DiagId::err_bad_program_option,
                 {oi.name, "must be at most " + std::to_string(ir::kMaxInstances) + ", got " + std::to_string(po.instances)});
      break;
    case OptionId::Opt_protocol:
      if (v.kind() != ValueKind::Str) bad();
      po.protocol = v.as<StrObj>().s;
      break;
    case OptionId::Opt_instr_fusion: po.instrFusion = needBool(); break;
    case OptionId::Opt_auto_sync: po.autoSync = needBool(); break;
    case OptionId::Opt_replication_policy:
      if (v.kind() != ValueKind::Enum || v.enumId() != EnumId::ReplicationPolicy) bad();
      policy = v.enumMember();
      policySet = true;
      if (policy <= int64_t(ir::ReplicationPolicy::None))
        po.replicationPolicy = static_cast<ir::ReplicationPolicy>(v.enumMember());
      break;
    case OptionId::Opt_style: {
      // "current" or the name of a style the caller plugged in (ElabOptions::styles).
      std::string names = "\"current\"";
      bool known = v.kind() == ValueKind::Str && v.as<StrObj>().s == "current";
      for (const Style *st : in_.options().styles) {
        names += " or \"" + std::string(st->name()) + "\"";
        known = known || (v.kind() == ValueKind::Str && v.as<StrObj>().s == st->name());
      }
      if (!known)
        in_.fail(loc, DiagId::err_bad_program_option, {oi.name, "must be " + names + ", got " + toString(v, true)});
      style = v.as<StrObj>().s;
      break;
    }
    case OptionId::Opt_reuse_resources: po.reuseResources = needBool(); break;
    case OptionId::Opt_num_threads_per_block: po.numThreadsPerBlock = needInt(); break;
    case OptionId::Opt_use_double_scratch_buffer: po.useDoubleScratchBuffer = needBool(); break;
    case OptionId::Opt_buffer_alignment: po.bufferAlignment = needInt(); break;
    case OptionId::Opt_min_message_size: po.minMessageSize = needSize(); break;
    case OptionId::Opt_max_message_size: po.maxMessageSize = v.isNone() ? UINT64_MAX : needSize(); break;
    }
  }

  /// `style` and the raw ReplicationPolicy member (duplicated / packed exist only in the
  /// mscclpplang style, which reads them through StyleOptions), and whether the program set it.
  std::string style = "current";
  int64_t policy = 0;
  bool policySet = false;

private:
  Interp &in_;
};

/// The plan the program lowers to: every op, threadblock, channel and semaphore of the IR,
/// `instances` times. Throws err_plan_too_large above `limit`.
void checkPlanSize(const ir::Program &program, SMLoc loc, uint64_t limit) {
  const ir::ProgramIR &irp = program.ir();
  uint64_t perInstance = 0;
  for (const ir::GpuIR &g : irp.gpus) {
    perInstance += g.threadblocks.size() + g.memoryConnectedTo.size() + g.portConnectedTo.size() +
                   g.switchChannels.size() + g.semaphores.size();
    for (const ir::ThreadBlockIR &tb : g.threadblocks)
      perInstance += tb.packed.count + tb.ops.size();
  }
  uint64_t instances = uint64_t(std::max<int64_t>(irp.options.instances, 0));
  unsigned __int128 total = (unsigned __int128)perInstance * instances;
  if (total <= limit)
    return;
  throw EvalError{loc, DiagId::err_plan_too_large,
                  {std::to_string(uint64_t(total)), std::to_string(perInstance), std::to_string(instances),
                   std::to_string(limit)},
                  {}};
}

} // namespace

ElabResult elaborate(const Unit &unit, diag::DiagEngine &diag, const ElabOptions &opts) {
  ElabResult result;
  Interp in(unit, diag, opts);
  const Interner &names = unit.ctx->names;
  const ProgramDecl *prog = unit.program;
  if (!prog)
    return result;

  // -D overrides replace param initializers.
  bool ok = true;
  for (auto &d : opts.defines) {
    size_t i = 0;
    while (i < unit.params.size() && names.str(unit.params[i]->name) != d.first)
      ++i;
    if (i == unit.params.size() && opts.skipUnknownDefines)
      continue; // a define for other programs of the same directory
    if (i == unit.params.size()) {
      std::vector<std::string> cands;
      for (auto *p : unit.params)
        cands.push_back(names.str(p->name));
      diag.report(SMLoc(), DiagId::err_define_unknown_param, {d.first, diag::didYouMean(d.first, cands)});
      ok = false;
      continue;
    }
    Value v;
    std::string err;
    if (!parseValueText(d.second, v, err)) {
      diag.report(SMLoc(), DiagId::err_bad_define_value, {d.first, err});
      ok = false;
      continue;
    }
    in.setParam(static_cast<uint32_t>(i), v);
  }
  if (!ok)
    return result;

  try {
    // Program options: defaults, then the program's, then the command line's.
    ir::ProgramOptions po;
    po.name = names.str(prog->name);
    OptionReader reader(in);
    const auto &table = builtins().options;
    auto optionIndex = [&](const std::string &n) -> int {
      for (size_t k = 0; k < table.size(); ++k)
        if (table[k].name == n)
          return static_cast<int>(k);
      return -1;
    };
    for (auto &o : prog->options) {
      int k = optionIndex(names.str(o.name));
      Value v = in.evalGlobal(o.value);
      reader.apply(po, static_cast<OptionId>(k), v, o.value->loc, names.str(prog->name));
    }
    for (auto &ov : opts.optionOverrides) {
      int k = optionIndex(ov.first);
      if (k < 0) {
        std::vector<std::string> cands;
        for (auto &t : table)
          cands.push_back(t.name);
        diag.report(SMLoc(), DiagId::err_bad_option_override,
                    {ov.first + "=" + ov.second, "no program option `" + ov.first + "`" + diag::didYouMean(ov.first, cands)});
        return result;
      }
      if (table[k].type == ParamType::Collective) {
        diag.report(SMLoc(), DiagId::err_bad_option_override, {ov.first + "=" + ov.second, "the collective cannot be overridden"});
        return result;
      }
      Value v;
      std::string err;
      const EnumInfo *hint = table[k].type == ParamType::ReplicationPolicy ? &builtins().enumInfo(EnumId::ReplicationPolicy) : nullptr;
      if (!parseValueText(ov.second, v, err, hint, EnumId::ReplicationPolicy)) {
        diag.report(SMLoc(), DiagId::err_bad_option_override, {ov.first + "=" + ov.second, err});
        return result;
      }
      reader.apply(po, static_cast<OptionId>(k), v, SMLoc(), names.str(prog->name));
    }

    if (reader.style != "current") { // a plugged-in style (Style.h): its program, its builtins
      const Style *style = nullptr;
      for (const Style *st : opts.styles)
        if (st->name() == reader.style)
          style = st;
      try {
        result.style = style->begin(StyleOptions{po, reader.policy, reader.policySet});
      } catch (const StyleError &e) {
        in.failDsl(prog->loc, e.what());
      }
      in.setStyle(style, result.style.get());
      in.runBody(prog->body, prog->numSlots);
      return result;
    }
    if (reader.policySet && reader.policy > int64_t(ir::ReplicationPolicy::None))
      in.failDsl(prog->loc, "replication policies `duplicated` and `packed` belong to the mscclpplang style");
    try {
      result.program = std::make_unique<ir::Program>(po);
    } catch (const ir::DslError &e) {
      in.failDsl(prog->loc, e);
    }
    result.program->setMaxPlanSize(opts.maxPlanSize);
    in.setProgram(result.program.get());
    in.runBody(prog->body, prog->numSlots);
    checkPlanSize(*result.program, prog->loc, opts.maxPlanSize);
    result.program->ir().sources.shrinkToFit(); // no more op locations come

  } catch (const EvalError &e) {
    report(diag, e);
    result.program.reset();
    result.style.reset();
  }
  return result;
}

} // namespace msccl::elab
