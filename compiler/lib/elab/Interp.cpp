//===- Interp.cpp - Statements, expressions, arithmetic ---------------------------------===//
#include "Interp.h"

namespace msccl::elab {

using namespace msccl::ast;
using diag::DiagId;

Interp::Interp(const Unit &u, diag::DiagEngine &d, const ElabOptions &o)
    : unit_(u), diag_(d), opts_(o), params_(u.params.size()), paramState_(u.params.size(), 0) {}

void Interp::fail(SMLoc loc, DiagId id, std::vector<std::string> args) {
  EvalError e{loc, id, std::move(args), {}};
  for (auto it = ctx_.rbegin(); it != ctx_.rend(); ++it) {
    switch (it->kind) {
    case Ctx::For: {
      auto *f = static_cast<const ForStmt *>(it->node);
      std::string vars, vals;
      for (size_t i = 0; i < f->vars.size(); ++i) {
        vars += (i ? ", " : "") + names().str(f->vars[i].name);
        vals += (i ? ", " : "") + toString(it->frame[f->vars[i].slot], true);
      }
      if (f->vars.size() > 1) {
        vars = "(" + vars + ")";
        vals = "(" + vals + ")";
      }
      e.notes.push_back({f->loc, DiagId::note_in_for, {vars + " = " + vals}});
      break;
    }
    case Ctx::Call: {
      auto *c = static_cast<const CallExpr *>(it->node);
      e.notes.push_back({c->loc, DiagId::note_in_call, {names().str(c->callee->name)}});
      break;
    }
    case Ctx::With:
      e.notes.push_back({static_cast<const WithStmt *>(it->node)->loc, DiagId::note_in_with, {}});
      break;
    case Ctx::Param: {
      auto *p = static_cast<const ParamDecl *>(it->node);
      e.notes.push_back({it->loc, DiagId::note_in_param, {names().str(p->name)}});
      break;
    }
    }
  }
  throw e;
}

uint32_t Interp::sourceRecord(ir::SourceTable &t, SMLoc loc) {
  // Frames entered (or loops advanced) since the last record are not recorded; they are innermost.
  size_t keep = ctx_.size();
  while (keep > 0 && !ctx_[keep - 1].recorded)
    --keep;
  newFrames_.clear();
  frameTexts_.clear();
  frameTexts_.reserve(ctx_.size() - keep); // NewFrame::text points here
  auto site = [&](const void *node, ir::SourceContext::Kind kind, SMLoc l, const std::string &name) {
    auto [it, inserted] = sourceSites_.try_emplace(node, 0);
    if (inserted)
      it->second = t.addSite(kind, l, name);
    return it->second;
  };
  for (size_t i = keep; i < ctx_.size(); ++i) {
    Ctx &c = ctx_[i];
    ir::SourceTable::NewFrame nf;
    switch (c.kind) {
    case Ctx::For: {
      auto *f = static_cast<const ForStmt *>(c.node);
      if (!sourceSites_.count(f)) {
        std::string vars;
        for (size_t k = 0; k < f->vars.size(); ++k)
          vars += (k ? ", " : "") + names().str(f->vars[k].name);
        site(f, ir::SourceContext::For, f->loc, f->vars.size() > 1 ? "(" + vars + ")" : vars);
      }
      nf.site = sourceSites_[f];
      const Value &v0 = c.frame[f->vars[0].slot];
      if (f->vars.size() == 1 && v0.isInt()) {
        nf.value = v0.asInt();
      } else {
        std::string vals;
        for (size_t k = 0; k < f->vars.size(); ++k)
          vals += (k ? ", " : "") + toString(c.frame[f->vars[k].slot], true);
        frameTexts_.push_back(f->vars.size() > 1 ? "(" + vals + ")" : vals);
        nf.text = &frameTexts_.back();
      }
      break;
    }
    case Ctx::Call: {
      auto *call = static_cast<const CallExpr *>(c.node);
      nf.site = site(call, ir::SourceContext::Call, call->loc, names().str(call->callee->name));
      break;
    }
    case Ctx::With:
      nf.site = site(c.node, ir::SourceContext::With, static_cast<const WithStmt *>(c.node)->loc, "");
      break;
    case Ctx::Param: // the use differs from one evaluation to the next: a site each time (rare)
      nf.site = t.addSite(ir::SourceContext::Param, c.loc, names().str(static_cast<const ParamDecl *>(c.node)->name));
      break;
    }
    newFrames_.push_back(nf);
    c.recorded = true;
  }
  return t.add(loc, keep, newFrames_);
}

void Interp::failDsl(llvm::SMLoc loc, const ir::DslError &e) {
  auto *big = dynamic_cast<const ir::PlanTooLarge *>(&e);
  if (!big)
    failDsl(loc, std::string(e.what()));
  uint64_t instances = program_ ? uint64_t(std::max<int64_t>(program_->options().instances, 1)) : 1;
  unsigned __int128 total = (unsigned __int128)big->perInstance * instances;
  uint64_t shown = total > UINT64_MAX ? UINT64_MAX : uint64_t(total);
  fail(loc, diag::DiagId::err_plan_too_large,
       {"at least " + std::to_string(shown), std::to_string(big->perInstance), std::to_string(instances),
        std::to_string(opts_.maxPlanSize)});
}

ir::Program &Interp::program(SMLoc loc) {
  if (!program_ && style_) // a program of a plugged-in style: today's DSL classes do not exist there
    failDsl(loc, "today's DSL classes (Rank, Buffer, MemoryChannel, PortChannel, SwitchChannel, Semaphore, ...) "
                 "do not exist in a program of style \"" + std::string(style_->name()) +
                     "\": write `chunk(rank, buffer, index, size)` and its methods (docs/mscclpplang.md), or "
                     "drop `style = \"" + std::string(style_->name()) + "\"`");
  if (!program_)
    failDsl(loc, std::string(ir::kNoProgramInContext));
  return *program_;
}

// ---- params and bodies ----------------------------------------------------------------------

Value Interp::param(uint32_t i, SMLoc use) {
  if (paramState_[i] == 2)
    return params_[i];
  const ParamDecl *p = unit_.params[i];
  if (paramState_[i] == 1)
    fail(p->loc, DiagId::err_param_cycle, {names().str(p->name)});
  paramState_[i] = 1;
  ctx_.push_back({Ctx::Param, p, nullptr, use.isValid() ? use : p->loc});
  Value *saved = fp_;
  fp_ = nullptr;
  params_[i] = eval(p->value);
  fp_ = saved;
  ctx_.pop_back();
  paramState_[i] = 2;
  return params_[i];
}

Value Interp::evalGlobal(const Expr *e) {
  Value *saved = fp_;
  fp_ = nullptr;
  Value v = eval(e);
  fp_ = saved;
  return v;
}

void Interp::runBody(const Block &body, uint32_t numSlots) {
  std::vector<Value> frame(numSlots);
  fp_ = frame.data();
  exec(body);
  fp_ = nullptr;
}

// ---- statements -----------------------------------------------------------------------------

Interp::Flow Interp::exec(const Block &b) {
  for (const Stmt *s : b.stmts) {
    Flow f = exec(s);
    if (f != Flow::Normal)
      return f;
  }
  return Flow::Normal;
}

static bool truthy(const Value &v) {
  switch (v.kind()) {
  case ValueKind::None: return false;
  case ValueKind::Bool:
  case ValueKind::Int:
  case ValueKind::U64: return v.asInt() != 0;
  case ValueKind::Str: return !v.as<StrObj>().s.empty();
  case ValueKind::List:
  case ValueKind::Tuple: return !v.as<ListObj>().items.empty();
  case ValueKind::Map: return !v.as<MapObj>().entries.empty();
  case ValueKind::Range: return v.as<RangeObj>().length() != 0;
  default: return true;
  }
}

void Interp::unpack(const std::vector<Binder> &names, const Value &v, SMLoc loc) {
  if (v.kind() != ValueKind::Tuple && v.kind() != ValueKind::List)
    fail(loc, DiagId::err_type_mismatch, {"cannot unpack " + typeName(v) + " into " + std::to_string(names.size()) + " names"});
  auto &items = v.as<ListObj>().items;
  if (items.size() != names.size())
    fail(loc, DiagId::err_unpack_count, {std::to_string(items.size()), std::to_string(names.size())});
  for (size_t i = 0; i < names.size(); ++i)
    fp_[names[i].slot] = items[i];
}

Interp::Flow Interp::exec(const Stmt *s) {
  switch (s->kind) {
  case StmtKind::Let: {
    auto *x = static_cast<const LetStmt *>(s);
    if (x->tuple)
      unpack(x->names, eval(x->value), x->value->loc);
    else
      fp_[x->names[0].slot] = eval(x->value);
    return Flow::Normal;
  }
  case StmtKind::Assign: assign(static_cast<const AssignStmt *>(s)); return Flow::Normal;
  case StmtKind::For: return execFor(static_cast<const ForStmt *>(s));
  case StmtKind::If: {
    auto *x = static_cast<const IfStmt *>(s);
    return truthy(eval(x->cond)) ? exec(x->then) : exec(x->otherwise);
  }
  case StmtKind::With: {
    auto *x = static_cast<const WithStmt *>(s);
    Value c = eval(x->context);
    const LoopContext *lc = nullptr;
    if (c.kind() == ValueKind::Object)
      lc = std::get_if<LoopContext>(&c.as<DslObj>().handle);
    if (!lc)
      fail(x->context->loc, DiagId::err_with_not_loop, {typeName(c)});
    ir::Program &p = program(x->context->loc);
    try {
      p.enterPipeline(lc->unit, lc->numChunks);
    } catch (const ir::DslError &e) {
      failDsl(x->context->loc, e);
    }
    ctx_.push_back({Ctx::With, x, fp_});
    Flow f = exec(x->body);
    ctx_.pop_back();
    try {
      p.setSource(x->loc); // the pipeline ops come from the `with` statement
      p.exitPipeline();
    } catch (const ir::DslError &e) {
      failDsl(x->context->loc, e);
    }
    return f;
  }
  case StmtKind::Return: {
    auto *x = static_cast<const ReturnStmt *>(s);
    retVal_ = x->value ? eval(x->value) : Value();
    return Flow::Return;
  }
  case StmtKind::Break: return Flow::Break;
  case StmtKind::Continue: return Flow::Continue;
  case StmtKind::Expr: eval(static_cast<const ExprStmt *>(s)->expr); return Flow::Normal;
  }
  return Flow::Normal;
}

void Interp::bindLoopVars(const ForStmt *f, const Value &item) {
  if (f->tuple)
    unpack(f->vars, item, f->iter->loc);
  else
    fp_[f->vars[0].slot] = item;
}

Interp::Flow Interp::execFor(const ForStmt *f) {
  Value it = eval(f->iter);
  ctx_.push_back({Ctx::For, f, fp_});
  Flow result = Flow::Normal;
  auto body = [&]() -> bool { // false: stop the loop
    ctx_.back().recorded = false; // new loop values: a new frame in the next op's source record
    tick(f->loc);
    Flow fl = exec(f->body);
    if (fl == Flow::Break)
      return false;
    if (fl == Flow::Return) {
      result = Flow::Return;
      return false;
    }
    return true;
  };
  switch (it.kind()) {
  case ValueKind::Range: {
    const RangeObj &r = it.as<RangeObj>();
    int64_t n = r.length();
    for (int64_t i = 0; i < n; ++i) {
      if (f->tuple)
        bindLoopVars(f, Value::integer(r.at(i)));
      else
        fp_[f->vars[0].slot] = Value::integer(r.at(i));
      if (!body())
        break;
    }
    break;
  }
  case ValueKind::List:
  case ValueKind::Tuple: {
    const auto &items = it.as<ListObj>().items;
    for (size_t i = 0; i < items.size(); ++i) {
      bindLoopVars(f, items[i]);
      if (!body())
        break;
    }
    break;
  }
  case ValueKind::Map: {
    std::vector<Value> keys;
    for (auto &kv : it.as<MapObj>().entries)
      keys.push_back(kv.first);
    for (auto &k : keys) {
      bindLoopVars(f, k);
      if (!body())
        break;
    }
    break;
  }
  case ValueKind::Str: {
    std::string s = it.as<StrObj>().s;
    for (char ch : s) {
      bindLoopVars(f, makeStr(std::string(1, ch)));
      if (!body())
        break;
    }
    break;
  }
  default:
    ctx_.pop_back();
    fail(f->iter->loc, DiagId::err_not_iterable, {typeName(it)});
  }
  ctx_.pop_back();
  return result;
}

void Interp::assign(const AssignStmt *a) {
  Value v = eval(a->value);
  auto combine = [&](const Value &old) -> Value {
    switch (a->op) {
    case AssignOp::Set: return v;
    case AssignOp::Add: return binary(BinOp::Add, old, v, a->opLoc);
    case AssignOp::Sub: return binary(BinOp::Sub, old, v, a->opLoc);
    case AssignOp::Mul: return binary(BinOp::Mul, old, v, a->opLoc);
    }
    return v;
  };
  if (a->target->kind == ExprKind::Name) {
    auto *n = static_cast<const NameExpr *>(a->target);
    Value &slot = fp_[n->index];
    if (a->op == AssignOp::Add && slot.kind() == ValueKind::List && v.kind() == ValueKind::List && &slot != &v) {
      // `xs += ys` extends in place, as in Python.
      auto &dst = slot.as<ListObj>().items;
      std::vector<Value> src = v.as<ListObj>().items;
      dst.insert(dst.end(), src.begin(), src.end());
      return;
    }
    slot = combine(slot);
    return;
  }
  auto *ix = static_cast<const IndexExpr *>(a->target);
  Value obj = eval(ix->object);
  Value key;
  if (ix->indices.size() == 1) {
    key = eval(ix->indices[0]);
  } else {
    std::vector<Value> parts;
    parts.reserve(ix->indices.size());
    for (auto *e : ix->indices)
      parts.push_back(eval(e));
    key = makeTuple(std::move(parts));
  }
  if (obj.kind() == ValueKind::Map) {
    auto &m = obj.as<MapObj>();
    if (key.kind() == ValueKind::List || key.kind() == ValueKind::Map)
      fail(ix->indices[0]->loc, DiagId::err_unhashable, {typeName(key)});
    if (a->op == AssignOp::Set) {
      m.set(key, std::move(v));
    } else {
      Value *old = m.find(key);
      if (!old)
        fail(a->target->loc, DiagId::err_key_not_found, {toString(key, true)});
      Value nv = combine(*old);
      m.set(key, std::move(nv));
    }
    return;
  }
  if (obj.kind() == ValueKind::List) {
    auto &items = obj.as<ListObj>().items;
    if (!key.isInt())
      fail(ix->indices[0]->loc, DiagId::err_type_mismatch, {"list index must be an int, got " + typeName(key)});
    int64_t i = key.asInt(), n = static_cast<int64_t>(items.size());
    if (i < -n || i >= n)
      fail(ix->indices[0]->loc, DiagId::err_index_out_of_range, {std::to_string(i), "list", std::to_string(n)});
    Value &slot = items[static_cast<size_t>(i < 0 ? i + n : i)];
    slot = combine(slot);
    return;
  }
  fail(a->target->loc, DiagId::err_type_mismatch, {typeName(obj) + " does not support item assignment"});
}

// ---- expressions ----------------------------------------------------------------------------

Value Interp::eval(const Expr *e) {
  switch (e->kind) {
  case ExprKind::Int: {
    auto *x = static_cast<const IntExpr *>(e);
    return x->u64 ? Value::u64(static_cast<uint64_t>(x->value)) : Value::integer(x->value);
  }
  case ExprKind::Str: return makeStr(static_cast<const StrExpr *>(e)->value);
  case ExprKind::Bool: return Value::boolean(static_cast<const BoolExpr *>(e)->value);
  case ExprKind::None: return Value();
  case ExprKind::Name: {
    auto *n = static_cast<const NameExpr *>(e);
    if (n->ref == RefKind::Local)
      return fp_[n->index];
    return param(n->index, n->loc);
  }
  case ExprKind::Unary: {
    auto *x = static_cast<const UnaryExpr *>(e);
    Value v = eval(x->operand);
    if (!v.isInt() && !v.isBool())
      fail(e->loc, DiagId::err_bad_operand, {x->negate ? "-" : "+", typeName(v)});
    if (!x->negate)
      return Value::integer(v.asInt());
    if (v.asInt() == INT64_MIN)
      fail(e->loc, DiagId::err_int_overflow, {"-", "-(" + std::to_string(v.asInt()) + ")"});
    return Value::integer(-v.asInt());
  }
  case ExprKind::Binary: {
    auto *x = static_cast<const BinaryExpr *>(e);
    Value a = eval(x->lhs);
    Value b = eval(x->rhs);
    return binary(x->op, a, b, e->loc);
  }
  case ExprKind::Logical: {
    auto *x = static_cast<const LogicalExpr *>(e);
    Value a = eval(x->lhs);
    if (truthy(a) != x->isAnd)
      return a;
    return eval(x->rhs);
  }
  case ExprKind::Not: return Value::boolean(!truthy(eval(static_cast<const NotExpr *>(e)->operand)));
  case ExprKind::Compare: {
    auto *x = static_cast<const CompareExpr *>(e);
    Value lhs = eval(x->operands[0]);
    for (size_t i = 0; i < x->ops.size(); ++i) {
      Value rhs = eval(x->operands[i + 1]);
      if (!compare(x->ops[i], lhs, rhs, x->opLocs[i]))
        return Value::boolean(false);
      lhs = std::move(rhs);
    }
    return Value::boolean(true);
  }
  case ExprKind::Ternary: {
    auto *x = static_cast<const TernaryExpr *>(e);
    return truthy(eval(x->cond)) ? eval(x->then) : eval(x->otherwise);
  }
  case ExprKind::Call: {
    auto *c = static_cast<const CallExpr *>(e);
    switch (c->callee->ref) {
    case RefKind::Fn: return callFn(c);
    case RefKind::Builtin: return callBuiltin(c);
    default: return construct(c);
    }
  }
  case ExprKind::MethodCall: return methodCall(static_cast<const MethodCallExpr *>(e));
  case ExprKind::Index: {
    auto *x = static_cast<const IndexExpr *>(e);
    Value obj = eval(x->object);
    if (x->indices.size() == 1)
      return index(obj, eval(x->indices[0]), x->indices[0]->loc);
    return indexTuple(x, obj);
  }
  case ExprKind::Slice: return slice(static_cast<const SliceExpr *>(e));
  case ExprKind::Attr: return attr(static_cast<const AttrExpr *>(e));
  case ExprKind::List:
  case ExprKind::Tuple: {
    auto *x = static_cast<const SeqExpr *>(e);
    std::vector<Value> items;
    items.reserve(x->elems.size());
    for (auto *i : x->elems)
      items.push_back(eval(i));
    return e->kind == ExprKind::List ? makeList(std::move(items)) : makeTuple(std::move(items));
  }
  case ExprKind::Map: {
    auto *x = static_cast<const MapExpr *>(e);
    Value m = makeMap();
    for (auto &kv : x->entries) {
      Value k = eval(kv.first);
      if (k.kind() == ValueKind::List || k.kind() == ValueKind::Map)
        fail(kv.first->loc, DiagId::err_unhashable, {typeName(k)});
      m.as<MapObj>().set(k, eval(kv.second));
    }
    return m;
  }
  }
  return Value();
}

// Out of line: its key buffer would otherwise enlarge the frame of every eval() call.
LLVM_ATTRIBUTE_NOINLINE Value Interp::indexTuple(const IndexExpr *x, const Value &obj) {
  if (obj.kind() == ValueKind::Map && x->indices.size() <= 8) {
    // m[a, b]: look the tuple key up without allocating it.
    Value parts[8];
    for (size_t i = 0; i < x->indices.size(); ++i)
      parts[i] = eval(x->indices[i]);
    if (Value *v = obj.as<MapObj>().findTuple(parts, x->indices.size()))
      return *v;
    fail(x->indices[0]->loc, DiagId::err_key_not_found,
         {toString(makeTuple(std::vector<Value>(parts, parts + x->indices.size())), true)});
  }
  std::vector<Value> parts;
  for (auto *i : x->indices)
    parts.push_back(eval(i));
  return index(obj, makeTuple(std::move(parts)), x->indices[0]->loc);
}

static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}
static int64_t floorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

Value Interp::binary(BinOp op, const Value &a, const Value &b, SMLoc loc) {
  auto isNum = [](const Value &v) { return v.kind() == ValueKind::Int || v.kind() == ValueKind::Bool; };
  if (isNum(a) && isNum(b)) {
    int64_t x = a.asInt(), y = b.asInt(), r = 0;
    auto overflow = [&]() {
      fail(loc, DiagId::err_int_overflow, {spelling(op), std::to_string(x) + " " + spelling(op) + " " + std::to_string(y)});
    };
    switch (op) {
    case BinOp::Add: if (__builtin_add_overflow(x, y, &r)) overflow(); return Value::integer(r);
    case BinOp::Sub: if (__builtin_sub_overflow(x, y, &r)) overflow(); return Value::integer(r);
    case BinOp::Mul: if (__builtin_mul_overflow(x, y, &r)) overflow(); return Value::integer(r);
    case BinOp::Div:
    case BinOp::Mod:
      if (y == 0)
        fail(loc, DiagId::err_division_by_zero, {op == BinOp::Div ? "integer division" : "integer modulo"});
      if (x == INT64_MIN && y == -1) {
        if (op == BinOp::Mod)
          return Value::integer(0);
        overflow();
      }
      return Value::integer(op == BinOp::Div ? floorDiv(x, y) : floorMod(x, y));
    case BinOp::Pow: {
      if (y < 0)
        fail(loc, DiagId::err_negative_power, {std::to_string(y)});
      int64_t result = 1, base = x;
      int64_t e = y;
      while (e > 0) {
        if (e & 1)
          if (__builtin_mul_overflow(result, base, &result))
            overflow();
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base))
          overflow();
      }
      return Value::integer(result);
    }
    case BinOp::BitAnd: return Value::integer(x & y);
    case BinOp::BitOr: return Value::integer(x | y);
    case BinOp::BitXor: return Value::integer(x ^ y);
    case BinOp::Shl:
    case BinOp::Shr:
      if (y < 0)
        fail(loc, DiagId::err_type_mismatch, {"negative shift count " + std::to_string(y)});
      if (op == BinOp::Shr)
        return Value::integer(y >= 64 ? (x < 0 ? -1 : 0) : (x >> y));
      if (x == 0)
        return Value::integer(0);
      if (y >= 63 || ((x << y) >> y) != x)
        overflow();
      return Value::integer(x << y);
    }
  }
  if (a.kind() == ValueKind::U64 || b.kind() == ValueKind::U64)
    fail(loc, DiagId::err_int_overflow,
         {spelling(op), "values above 9223372036854775807 can be stored and compared but not computed with"});
  // Sequences.
  if (op == BinOp::Add && a.kind() == b.kind()) {
    if (a.kind() == ValueKind::Str)
      return makeStr(a.as<StrObj>().s + b.as<StrObj>().s);
    if (a.kind() == ValueKind::List || a.kind() == ValueKind::Tuple) {
      std::vector<Value> items = a.as<ListObj>().items;
      auto &more = b.as<ListObj>().items;
      items.insert(items.end(), more.begin(), more.end());
      return a.kind() == ValueKind::List ? makeList(std::move(items)) : makeTuple(std::move(items));
    }
  }
  if (op == BinOp::Mul && (isNum(a) || isNum(b))) {
    const Value &seq = isNum(a) ? b : a;
    int64_t n = isNum(a) ? a.asInt() : b.asInt();
    if (n < 0)
      n = 0;
    if (seq.kind() == ValueKind::List || seq.kind() == ValueKind::Tuple || seq.kind() == ValueKind::Str) {
      size_t len = seq.kind() == ValueKind::Str ? seq.as<StrObj>().s.size() : seq.as<ListObj>().items.size();
      if (len != 0 && static_cast<uint64_t>(n) > (1ull << 28) / len)
        fail(loc, DiagId::err_type_mismatch, {"sequence repetition too large (" + std::to_string(n) + " times)"});
      if (seq.kind() == ValueKind::Str) {
        std::string s;
        for (int64_t i = 0; i < n; ++i)
          s += seq.as<StrObj>().s;
        return makeStr(std::move(s));
      }
      std::vector<Value> items;
      auto &src = seq.as<ListObj>().items;
      for (int64_t i = 0; i < n; ++i)
        items.insert(items.end(), src.begin(), src.end());
      return seq.kind() == ValueKind::List ? makeList(std::move(items)) : makeTuple(std::move(items));
    }
  }
  fail(loc, DiagId::err_bad_operands, {spelling(op), typeName(a), typeName(b)});
}

bool Interp::contains(const Value &c, const Value &item, SMLoc loc) {
  switch (c.kind()) {
  case ValueKind::List:
  case ValueKind::Tuple:
    for (auto &x : c.as<ListObj>().items)
      if (equals(x, item))
        return true;
    return false;
  case ValueKind::Map: return c.as<MapObj>().find(item) != nullptr;
  case ValueKind::Range: {
    if (!item.isInt())
      return false;
    auto &r = c.as<RangeObj>();
    int64_t v = item.asInt();
    if (r.step > 0 ? (v < r.start || v >= r.stop) : (v > r.start || v <= r.stop))
      return false;
    return (v - r.start) % r.step == 0;
  }
  case ValueKind::Str:
    if (item.kind() != ValueKind::Str)
      fail(loc, DiagId::err_bad_operands, {"in", typeName(item), "str"});
    return c.as<StrObj>().s.find(item.as<StrObj>().s) != std::string::npos;
  default: fail(loc, DiagId::err_bad_operands, {"in", typeName(item), typeName(c)});
  }
}

bool Interp::compare(CmpOp op, const Value &a, const Value &b, SMLoc loc) {
  switch (op) {
  case CmpOp::Eq: return equals(a, b);
  case CmpOp::Ne: return !equals(a, b);
  case CmpOp::In: return contains(b, a, loc);
  case CmpOp::NotIn: return !contains(b, a, loc);
  default: break;
  }
  int c = 0;
  auto isNum = [](const Value &v) {
    return v.kind() == ValueKind::Int || v.kind() == ValueKind::Bool || v.kind() == ValueKind::U64;
  };
  if (isNum(a) && isNum(b)) {
    auto wide = [](const Value &v) -> __int128 {
      return v.kind() == ValueKind::U64 ? static_cast<__int128>(v.asU64()) : static_cast<__int128>(v.asInt());
    };
    __int128 x = wide(a), y = wide(b);
    c = x < y ? -1 : x > y ? 1 : 0;
  } else if (a.kind() == ValueKind::Str && b.kind() == ValueKind::Str) {
    c = a.as<StrObj>().s.compare(b.as<StrObj>().s);
  } else {
    fail(loc, DiagId::err_bad_operands, {spelling(op), typeName(a), typeName(b)});
  }
  switch (op) {
  case CmpOp::Lt: return c < 0;
  case CmpOp::Le: return c <= 0;
  case CmpOp::Gt: return c > 0;
  default: return c >= 0;
  }
}

Value Interp::index(const Value &obj, const Value &key, SMLoc loc) {
  auto seqIndex = [&](int64_t n, const char *what) -> size_t {
    if (!key.isInt())
      fail(loc, DiagId::err_type_mismatch, {std::string(what) + " index must be an int, got " + typeName(key)});
    int64_t i = key.asInt();
    if (i < -n || i >= n)
      fail(loc, DiagId::err_index_out_of_range, {std::to_string(i), what, std::to_string(n)});
    return static_cast<size_t>(i < 0 ? i + n : i);
  };
  switch (obj.kind()) {
  case ValueKind::List:
  case ValueKind::Tuple: {
    auto &items = obj.as<ListObj>().items;
    return items[seqIndex(static_cast<int64_t>(items.size()), obj.kind() == ValueKind::List ? "list" : "tuple")];
  }
  case ValueKind::Str: {
    auto &s = obj.as<StrObj>().s;
    return makeStr(std::string(1, s[seqIndex(static_cast<int64_t>(s.size()), "str")]));
  }
  case ValueKind::Range: {
    auto &r = obj.as<RangeObj>();
    return Value::integer(r.at(static_cast<int64_t>(seqIndex(r.length(), "range"))));
  }
  case ValueKind::Map: {
    Value *v = obj.as<MapObj>().find(key);
    if (!v)
      fail(loc, DiagId::err_key_not_found, {toString(key, true)});
    return *v;
  }
  case ValueKind::Object:
    if (std::holds_alternative<ir::Buffer>(obj.as<DslObj>().handle)) {
      std::string t = typeName(key);
      try {
        ir::Buffer::throwNotASlice(t == "none" ? "NoneType" : t);
      } catch (const ir::DslError &e) {
        failDsl(loc, e);
      }
    }
    [[fallthrough]];
  default: fail(loc, DiagId::err_not_indexable, {typeName(obj)});
  }
}

Value Interp::slice(const SliceExpr *s) {
  Value obj = eval(s->object);
  auto part = [&](const Expr *e) -> std::optional<int64_t> {
    if (!e)
      return std::nullopt;
    Value v = eval(e);
    if (v.isNone())
      return std::nullopt;
    if (!v.isInt())
      fail(e->loc, DiagId::err_type_mismatch, {"slice bounds must be ints, got " + typeName(v)});
    return v.asInt();
  };
  std::optional<int64_t> lo = part(s->lo), hi = part(s->hi), step = part(s->step);
  if (obj.kind() == ValueKind::Object) {
    if (auto *b = std::get_if<ir::Buffer>(&obj.as<DslObj>().handle)) {
      try {
        return makeDsl(ClassId::Chunk, b->slice(lo, hi, step));
      } catch (const ir::DslError &e) {
        failDsl(s->loc, e);
      }
    }
  }
  int64_t n;
  switch (obj.kind()) {
  case ValueKind::List:
  case ValueKind::Tuple: n = static_cast<int64_t>(obj.as<ListObj>().items.size()); break;
  case ValueKind::Str: n = static_cast<int64_t>(obj.as<StrObj>().s.size()); break;
  case ValueKind::Range: n = obj.as<RangeObj>().length(); break;
  default: fail(s->loc, DiagId::err_not_indexable, {typeName(obj)});
  }
  int64_t st = step.value_or(1);
  if (st == 0)
    fail(s->step->loc, DiagId::err_slice_step_zero);
  // Python's slice.indices().
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v)
      return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0)
        x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  int64_t start = adjust(lo, st < 0 ? n - 1 : 0), stop = adjust(hi, st < 0 ? -1 : n);
  std::vector<int64_t> idx;
  for (int64_t i = start; st > 0 ? i < stop : i > stop; i += st)
    idx.push_back(i);
  if (obj.kind() == ValueKind::Range) {
    auto &r = obj.as<RangeObj>();
    if (idx.empty())
      return makeRange(0, 0, 1);
    return makeRange(r.at(start), r.at(start) + static_cast<int64_t>(idx.size()) * st * r.step, st * r.step);
  }
  if (obj.kind() == ValueKind::Str) {
    std::string out;
    for (int64_t i : idx)
      out += obj.as<StrObj>().s[static_cast<size_t>(i)];
    return makeStr(std::move(out));
  }
  std::vector<Value> items;
  for (int64_t i : idx)
    items.push_back(obj.as<ListObj>().items[static_cast<size_t>(i)]);
  return obj.kind() == ValueKind::List ? makeList(std::move(items)) : makeTuple(std::move(items));
}

// ---- calls to fns ---------------------------------------------------------------------------

Value Interp::callFn(const CallExpr *c) {
  const FnDecl *f = unit_.fns[c->callee->index];
  std::vector<Value> frame(std::max<size_t>(f->numSlots, f->params.size()));
  for (size_t i = 0; i < f->params.size(); ++i) {
    int a = c->binding.argOf[i];
    frame[i] = a >= 0 ? eval(c->args[static_cast<size_t>(a)].value) : evalGlobal(f->params[i].defaultValue);
  }
  if (depth_ >= opts_.maxCallDepth)
    fail(c->loc, DiagId::err_recursion_limit, {std::to_string(opts_.maxCallDepth)});
  ++depth_;
  ctx_.push_back({Ctx::Call, c, fp_});
  Value *saved = fp_;
  fp_ = frame.data();
  Flow fl = exec(f->body);
  fp_ = saved;
  ctx_.pop_back();
  --depth_;
  if (fl == Flow::Return) {
    Value r = std::move(retVal_);
    retVal_ = Value();
    return r;
  }
  return Value();
}

} // namespace msccl::elab
