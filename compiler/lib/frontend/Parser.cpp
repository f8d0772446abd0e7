//===- Parser.cpp - Text to AST (the only user of ANTLR-generated code) -----------------===//
//
// Consumes one SourceMgr buffer; produces an ast::Module. Steps: lex everything with the
// generated MscclLexer, filter the token list (drop NL inside (...) and [...], collapse NL
// runs, report unterminated strings/comments), parse with the generated MscclParser, then walk
// the parse tree with typed build methods (one per rule, Kuzu-Transformer style) into our AST.
// Lexer and parser errors go to the DiagEngine with exact locations; at most one syntax error
// per line and at most kMaxSyntaxErrors per file are reported.
// Hostile input is refused before ANTLR sees it, so that no input crashes or takes more than
// linear time: bytes that are not UTF-8 (err_invalid_utf8, at the first bad byte), more than
// kMaxBrackets nested brackets, and statements whose expression nesting (brackets, operators,
// trailers) exceeds kMaxExpressionNesting. The second and third bound the C++ recursion of the
// parser, the AST builder and every later phase that walks expressions (deep nesting made
// ANTLR's adaptive prediction super-linear and overflowed the stack). A file without tokens
// (empty, blank or only comments) is an empty module.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/diag/Spellings.h"
#include "msccl/frontend/Parser.h"

#include "MscclLexer.h"
#include "MscclParser.h"
#include "antlr4-runtime.h"

#include <llvm/ADT/StringExtras.h>

namespace msccl::frontend {

using namespace msccl::ast;
using diag::DiagId;
using P = MscclParser;

namespace {

constexpr unsigned kMaxSyntaxErrors = 10;
/// Nested (), [] and {} (Python refuses more than 200 nested parentheses).
constexpr unsigned kMaxBrackets = 200;
/// Operators, trailers and brackets nested in one statement (see nestingWeight below).
constexpr unsigned kMaxExpressionNesting = 1000;

/// The first byte of `text` that is not part of well-formed UTF-8 (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or npos.
size_t firstInvalidUtf8(llvm::StringRef text) {
  const auto *p = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size(), i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) { len = 3; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) { len = 3; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) { len = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) { len = 4; hi = 0x8F; }
    else return i;
    if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi)
      return i;
    for (size_t k = 2; k < len; ++k)
      if (i + k >= n || (p[i + k] & 0xC0) != 0x80)
        return i;
    i += len;
  }
  return llvm::StringRef::npos;
}

/// Whether a token of type `t` adds a level to the expression it is in: every prefix and
/// binary operator (left-associative chains build left-nested trees), the conditional
/// expression and the attribute trailer.
bool addsNesting(size_t t) {
  switch (t) {
  case MscclLexer::PLUS: case MscclLexer::MINUS: case MscclLexer::STAR: case MscclLexer::SLASH:
  case MscclLexer::PERCENT: case MscclLexer::STARSTAR: case MscclLexer::SHL: case MscclLexer::SHR:
  case MscclLexer::AMP: case MscclLexer::PIPE: case MscclLexer::CARET: case MscclLexer::AND:
  case MscclLexer::OR: case MscclLexer::NOT: case MscclLexer::IF: case MscclLexer::ELSE:
  case MscclLexer::DOT: case MscclLexer::EQEQ: case MscclLexer::NE: case MscclLexer::LT:
  case MscclLexer::LE: case MscclLexer::GT: case MscclLexer::GE: case MscclLexer::IN:
    return true;
  default:
    return false;
  }
}

/// Maps ANTLR code-point indices to SMLocs in the buffer (ANTLR decodes UTF-8).
class LocMap {
public:
  explicit LocMap(llvm::StringRef text) : text_(text) {
    bool ascii = true;
    for (unsigned char c : text)
      if (c >= 0x80) { ascii = false; break; }
    if (ascii)
      return;
    for (size_t i = 0; i < text.size(); ++i)
      if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80)
        cpToByte_.push_back(static_cast<uint32_t>(i));
    cpToByte_.push_back(static_cast<uint32_t>(text.size()));
  }
  SMLoc at(size_t cpIndex) const {
    size_t byte = cpToByte_.empty() ? cpIndex : (cpIndex < cpToByte_.size() ? cpToByte_[cpIndex] : text_.size());
    if (byte > text_.size())
      byte = text_.size();
    return SMLoc::getFromPointer(text_.data() + byte);
  }
  SMLoc at(antlr4::Token *t) const { return at(t->getStartIndex()); }
  /// Line (1-based) and column (0-based, code points) as ANTLR reports them.
  SMLoc atLineCol(size_t line, size_t col) const {
    const char *p = text_.data(), *end = p + text_.size();
    for (size_t l = 1; l < line && p < end; ++p)
      if (*p == '\n')
        ++l;
    for (size_t c = 0; c < col && p < end && *p != '\n'; ++c) {
      ++p;
      while (p < end && (static_cast<unsigned char>(*p) & 0xC0) == 0x80)
        ++p;
    }
    return SMLoc::getFromPointer(p);
  }

private:
  llvm::StringRef text_;
  std::vector<uint32_t> cpToByte_;
};

std::string describeToken(antlr4::Token *t) {
  if (!t || t->getType() == antlr4::Token::EOF)
    return "end of file";
  if (t->getType() == MscclLexer::NL)
    return "newline";
  return "`" + t->getText() + "`";
}

std::string prettyExpected(std::string s) {
  // ANTLR writes token names; make the common ones readable.
  struct { const char *from, *to; } repl[] = {
      {"NL", "newline"}, {"<EOF>", "end of file"}, {"ID", "identifier"}, {"INT", "integer"}, {"STRING", "string"}};
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    bool done = false;
    if (i == 0 || !isalnum(static_cast<unsigned char>(s[i - 1]))) {
      for (auto &r : repl) {
        size_t n = strlen(r.from);
        if (s.compare(i, n, r.from) == 0 && (i + n == s.size() || !isalnum(static_cast<unsigned char>(s[i + n])))) {
          out += r.to;
          i += n;
          done = true;
          break;
        }
      }
    }
    if (!done)
      out += s[i++];
  }
  return out;
}

class ErrorListener : public antlr4::BaseErrorListener {
public:
  ErrorListener(diag::DiagEngine &d, const LocMap &m) : diag_(d), map_(m) {}
  void syntaxError(antlr4::Recognizer *, antlr4::Token *tok, size_t line, size_t col, const std::string &msg,
                   std::exception_ptr) override {
    ++count;
    if (line == lastLine_ || reported_ >= kMaxSyntaxErrors)
      return;
    lastLine_ = line;
    ++reported_;
    SMLoc loc = tok ? map_.at(tok) : map_.atLineCol(line, col);
    std::string text;
    if (msg.rfind("missing ", 0) == 0) {
      size_t at = msg.find(" at ");
      text = "expected " + prettyExpected(msg.substr(8, at == std::string::npos ? std::string::npos : at - 8)) +
             " before " + describeToken(tok);
    } else {
      text = "unexpected " + describeToken(tok);
      size_t e = msg.find("expecting ");
      if (e != std::string::npos) {
        std::string exp = prettyExpected(msg.substr(e + 10));
        if (exp.find("identifier") != std::string::npos && exp.find("integer") != std::string::npos &&
            exp.find("'('") != std::string::npos)
          exp = "an expression";
        text += ", expected " + exp;
      }
    }
    diag_.report(loc, DiagId::err_syntax, {text});
    // `with Loop.iteration(...) as iter {`: the design documents' pipeline (Spellings.def).
    if (tok && tok->getType() != antlr4::Token::EOF)
      if (auto *old = diag::findSpelling(diag::Spelling::Kind::Syntax, tok->getText()))
        diag_.report(loc, DiagId::note_old_spelling, {diag::quoteOld(*old), std::string(old->fixIt)});
    // A bracket left open at the end of the file is the likely cause of the first error after it.
    if (unclosed.isValid() && !notedUnclosed_ && loc.getPointer() >= unclosed.getPointer()) {
      notedUnclosed_ = true;
      diag_.report(unclosed, DiagId::note_unclosed_bracket, {std::string(1, *unclosed.getPointer())});
    }
  }
  unsigned count = 0;
  /// The innermost bracket still open at the end of the file, if any.
  SMLoc unclosed;

private:
  diag::DiagEngine &diag_;
  const LocMap &map_;
  size_t lastLine_ = 0;
  unsigned reported_ = 0;
  bool notedUnclosed_ = false;
};

class LexErrorListener : public antlr4::BaseErrorListener {
public:
  LexErrorListener(diag::DiagEngine &d, const LocMap &m) : diag_(d), map_(m) {}
  void syntaxError(antlr4::Recognizer *, antlr4::Token *, size_t line, size_t col, const std::string &msg,
                   std::exception_ptr) override {
    ++count;
    // "token recognition error at: 'X'"
    std::string ch = "";
    size_t q = msg.find("at: ");
    if (q != std::string::npos)
      ch = msg.substr(q + 4);
    if (count <= kMaxSyntaxErrors)
      diag_.report(map_.atLineCol(line, col), DiagId::err_unexpected_char, {ch});
  }
  unsigned count = 0;

private:
  diag::DiagEngine &diag_;
  const LocMap &map_;
};

/// Parse tree -> AST. Only called on trees without syntax errors.
class Builder {
public:
  Builder(AstContext &ctx, diag::DiagEngine &d, const LocMap &m) : ctx_(ctx), diag_(d), map_(m) {}
  bool failed = false;

  SMLoc loc(antlr4::tree::TerminalNode *n) { return map_.at(n->getSymbol()); }
  SMLoc loc(antlr4::ParserRuleContext *c) { return map_.at(c->getStart()); }
  Sym sym(antlr4::tree::TerminalNode *n) { return ctx_.names.intern(n->getText()); }

  void buildFile(P::FileContext *f, Module &m) {
    for (auto *item : f->topItem()) {
      if (auto *c = dynamic_cast<P::ImportDeclContext *>(item)) {
        m.imports.push_back({unquote(c->STRING()), loc(c)});
      } else if (auto *c = dynamic_cast<P::ParamDeclContext *>(item)) {
        m.params.push_back({sym(c->ID()), loc(c->ID()), buildExpr(c->expr())});
      } else if (auto *c = dynamic_cast<P::FnDeclContext *>(item)) {
        FnDecl *fn = ctx_.fn();
        fn->name = sym(c->ID());
        fn->loc = loc(c->ID());
        if (c->paramList()) {
          bool sawDefault = false;
          for (auto *p : c->paramList()->paramItem()) {
            FnParam fp{sym(p->ID()), loc(p->ID()), p->expr() ? buildExpr(p->expr()) : nullptr};
            for (auto &q : fn->params)
              if (q.name == fp.name)
                error(fp.loc, DiagId::err_duplicate_param_name, {p->ID()->getText(), c->ID()->getText()});
            if (fp.defaultValue)
              sawDefault = true;
            else if (sawDefault)
              error(fp.loc, DiagId::err_param_default_order, {p->ID()->getText()});
            fn->params.push_back(fp);
          }
        }
        buildBlock(c->block(), fn->body);
        m.fns.push_back(fn);
      } else if (auto *c = dynamic_cast<P::ProgramDeclContext *>(item)) {
        ProgramDecl *pd = ctx_.program();
        pd->name = sym(c->ID());
        pd->loc = loc(c->ID());
        if (c->optionList())
          for (auto *o : c->optionList()->option())
            pd->options.push_back({sym(o->ID()), loc(o->ID()), buildExpr(o->expr())});
        buildBlock(c->block(), pd->body);
        m.programs.push_back(pd);
      }
    }
  }

private:
  void error(SMLoc l, DiagId id, std::vector<std::string> args = {}) {
    diag_.report(l, id, std::move(args));
    failed = true;
  }

  std::string unquote(antlr4::tree::TerminalNode *n) {
    std::string t = n->getText();
    std::string out;
    SMLoc base = loc(n);
    for (size_t i = 1; i + 1 < t.size(); ++i) {
      if (t[i] != '\\') {
        out += t[i];
        continue;
      }
      char e = t[++i];
      switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case '0': out += '\0'; break;
      default:
        error(SMLoc::getFromPointer(base.getPointer() + i - 1), DiagId::err_bad_escape, {std::string(1, e)});
      }
    }
    return out;
  }

  void buildBlock(P::BlockContext *b, Block &out) {
    out.lbrace = loc(b->LBRACE());
    for (auto *s : b->stmt())
      out.stmts.push_back(buildStmt(s));
  }

  std::vector<Binder> binders(P::IdListContext *l) {
    std::vector<Binder> out;
    for (auto *id : l->ID())
      out.push_back({sym(id), loc(id)});
    return out;
  }

  Stmt *buildStmt(P::StmtContext *s) {
    SMLoc l = loc(s);
    if (auto *c = dynamic_cast<P::LetStmtContext *>(s)) {
      auto *st = ctx_.stmt<LetStmt>(l, buildExpr(c->expr()));
      st->names.push_back({sym(c->ID()), loc(c->ID())});
      return st;
    }
    if (auto *c = dynamic_cast<P::LetTupleStmtContext *>(s)) {
      auto *st = ctx_.stmt<LetStmt>(l, buildExpr(c->expr()));
      st->names = binders(c->idList());
      st->tuple = true;
      return st;
    }
    if (auto *c = dynamic_cast<P::ForStmtContext *>(s)) {
      auto *st = ctx_.stmt<ForStmt>(l, buildExpr(c->expr()));
      st->vars.push_back({sym(c->ID()), loc(c->ID())});
      buildBlock(c->block(), st->body);
      return st;
    }
    if (auto *c = dynamic_cast<P::ForTupleStmtContext *>(s)) {
      auto *st = ctx_.stmt<ForStmt>(l, buildExpr(c->expr()));
      st->vars = binders(c->idList());
      st->tuple = true;
      buildBlock(c->block(), st->body);
      return st;
    }
    if (auto *c = dynamic_cast<P::IfStmtContext *>(s))
      return buildIf(c->ifChain());
    if (auto *c = dynamic_cast<P::WithStmtContext *>(s)) {
      auto *st = ctx_.stmt<WithStmt>(l, buildExpr(c->expr()));
      buildBlock(c->block(), st->body);
      return st;
    }
    if (auto *c = dynamic_cast<P::ReturnStmtContext *>(s))
      return ctx_.stmt<ReturnStmt>(l, c->expr() ? buildExpr(c->expr()) : nullptr);
    if (dynamic_cast<P::BreakStmtContext *>(s))
      return ctx_.stmt<SimpleStmt>(StmtKind::Break, l);
    if (dynamic_cast<P::ContinueStmtContext *>(s))
      return ctx_.stmt<SimpleStmt>(StmtKind::Continue, l);
    if (auto *c = dynamic_cast<P::AssignStmtContext *>(s)) {
      auto *op = c->assignOp();
      AssignOp o = op->PLUSEQ() ? AssignOp::Add : op->MINUSEQ() ? AssignOp::Sub : op->STAREQ() ? AssignOp::Mul : AssignOp::Set;
      Expr *target = buildExpr(c->expr(0));
      if (target->kind != ExprKind::Name && target->kind != ExprKind::Index)
        error(target->loc, DiagId::err_bad_assign_target);
      auto *st = ctx_.stmt<AssignStmt>(l, o, target, buildExpr(c->expr(1)));
      st->opLoc = loc(op);
      return st;
    }
    auto *c = static_cast<P::ExprStmtContext *>(s);
    return ctx_.stmt<ExprStmt>(l, buildExpr(c->expr()));
  }

  Stmt *buildIf(P::IfChainContext *c) {
    auto *st = ctx_.stmt<IfStmt>(loc(c), buildExpr(c->expr()));
    auto blocks = c->block();
    buildBlock(blocks[0], st->then);
    if (c->ifChain()) {
      st->otherwise.lbrace = loc(c->ifChain());
      st->otherwise.stmts.push_back(buildIf(c->ifChain()));
    } else if (blocks.size() > 1) {
      buildBlock(blocks[1], st->otherwise);
    }
    return st;
  }

  // ---- expressions ----
  Expr *buildExpr(P::ExprContext *c) {
    auto ors = c->orExpr();
    if (ors.size() == 1)
      return buildOr(ors[0]);
    // a if cond else b
    return ctx_.expr<TernaryExpr>(loc(c->IF()), buildOr(ors[1]), buildOr(ors[0]), buildExpr(c->expr()));
  }
  Expr *buildOr(P::OrExprContext *c) {
    auto xs = c->andExpr();
    Expr *e = buildAnd(xs[0]);
    for (size_t i = 1; i < xs.size(); ++i)
      e = ctx_.expr<LogicalExpr>(loc(c->OR(i - 1)), false, e, buildAnd(xs[i]));
    return e;
  }
  Expr *buildAnd(P::AndExprContext *c) {
    auto xs = c->notExpr();
    Expr *e = buildNot(xs[0]);
    for (size_t i = 1; i < xs.size(); ++i)
      e = ctx_.expr<LogicalExpr>(loc(c->AND(i - 1)), true, e, buildNot(xs[i]));
    return e;
  }
  Expr *buildNot(P::NotExprContext *c) {
    if (c->NOT())
      return ctx_.expr<NotExpr>(loc(c->NOT()), buildNot(c->notExpr()));
    return buildComparison(c->comparison());
  }
  Expr *buildBitOr(P::BitOrContext *c) {
    return chain<P::BitOrContext, P::BitXorContext>(c, [&](P::BitXorContext *t) { return buildBitXor(t); });
  }
  Expr *buildBitXor(P::BitXorContext *c) {
    return chain<P::BitXorContext, P::BitAndContext>(c, [&](P::BitAndContext *t) { return buildBitAnd(t); });
  }
  Expr *buildBitAnd(P::BitAndContext *c) {
    return chain<P::BitAndContext, P::ShiftContext>(c, [&](P::ShiftContext *t) { return buildShift(t); });
  }
  Expr *buildShift(P::ShiftContext *c) {
    return chain<P::ShiftContext, P::ArithContext>(c, [&](P::ArithContext *t) { return buildArith(t); });
  }
  Expr *buildComparison(P::ComparisonContext *c) {
    auto xs = c->bitOr();
    if (xs.size() == 1)
      return buildBitOr(xs[0]);
    auto ops = c->compOp();
    auto *e = ctx_.expr<CompareExpr>(loc(ops[0]));
    for (auto *x : xs)
      e->operands.push_back(buildBitOr(x));
    for (auto *o : ops) {
      CmpOp k = o->EQEQ() ? CmpOp::Eq : o->NE() ? CmpOp::Ne : o->LT() ? CmpOp::Lt : o->LE() ? CmpOp::Le
              : o->GT() ? CmpOp::Gt : o->GE() ? CmpOp::Ge : o->NOT() ? CmpOp::NotIn : CmpOp::In;
      e->ops.push_back(k);
      e->opLocs.push_back(loc(o));
    }
    return e;
  }
  /// Left-assoc chain `operand (op operand)*` read from the children list.
  template <typename Ctx, typename Sub, typename BuildSub>
  Expr *chain(Ctx *c, BuildSub buildSub) {
    Expr *e = nullptr;
    antlr4::Token *op = nullptr;
    for (auto *child : c->children) {
      if (auto *t = dynamic_cast<antlr4::tree::TerminalNode *>(child)) {
        op = t->getSymbol();
        continue;
      }
      Expr *rhs = buildSub(static_cast<Sub *>(child));
      if (!e) {
        e = rhs;
        continue;
      }
      BinOp k;
      switch (op->getType()) {
      case MscclLexer::PLUS: k = BinOp::Add; break;
      case MscclLexer::MINUS: k = BinOp::Sub; break;
      case MscclLexer::STAR: k = BinOp::Mul; break;
      case MscclLexer::SLASH: k = BinOp::Div; break;
      case MscclLexer::PERCENT: k = BinOp::Mod; break;
      case MscclLexer::AMP: k = BinOp::BitAnd; break;
      case MscclLexer::PIPE: k = BinOp::BitOr; break;
      case MscclLexer::CARET: k = BinOp::BitXor; break;
      case MscclLexer::SHL: k = BinOp::Shl; break;
      default: k = BinOp::Shr; break;
      }
      e = ctx_.expr<BinaryExpr>(map_.at(op), k, e, rhs);
    }
    return e;
  }
  Expr *buildArith(P::ArithContext *c) {
    return chain<P::ArithContext, P::TermContext>(c, [&](P::TermContext *t) { return buildTerm(t); });
  }
  Expr *buildTerm(P::TermContext *c) {
    return chain<P::TermContext, P::UnaryContext>(c, [&](P::UnaryContext *u) { return buildUnary(u); });
  }
  Expr *buildUnary(P::UnaryContext *c) {
    if (c->unary()) {
      bool neg = c->MINUS() != nullptr;
      SMLoc l = loc(c);
      Expr *operand = buildUnary(c->unary());
      // Fold `-INT` so that -9223372036854775808 is representable.
      if (neg && operand->kind == ExprKind::Int) {
        auto *i = static_cast<IntExpr *>(operand);
        if (!i->u64 || static_cast<uint64_t>(i->value) == static_cast<uint64_t>(INT64_MAX) + 1) {
          i->value = static_cast<int64_t>(0 - static_cast<uint64_t>(i->value));
          i->u64 = false;
          i->loc = l;
          return i;
        }
      }
      return ctx_.expr<UnaryExpr>(l, neg, operand);
    }
    return buildPower(c->power());
  }
  Expr *buildPower(P::PowerContext *c) {
    Expr *base = buildPostfix(c->postfix());
    if (!c->STARSTAR())
      return base;
    return ctx_.expr<BinaryExpr>(loc(c->STARSTAR()), BinOp::Pow, base, buildUnary(c->unary()));
  }
  std::vector<Arg> buildArgs(P::ArgListContext *c) {
    std::vector<Arg> out;
    if (!c)
      return out;
    bool sawKeyword = false;
    for (auto *a : c->arg()) {
      Arg arg;
      arg.value = buildExpr(a->expr());
      if (a->ID()) {
        arg.name = sym(a->ID());
        arg.loc = loc(a->ID());
        for (auto &prev : out)
          if (prev.name == arg.name)
            error(arg.loc, DiagId::err_duplicate_keyword_arg, {a->ID()->getText()});
        sawKeyword = true;
      } else {
        arg.loc = arg.value->loc;
        if (sawKeyword)
          error(arg.loc, DiagId::err_positional_after_keyword);
      }
      out.push_back(arg);
    }
    return out;
  }
  Expr *buildPostfix(P::PostfixContext *c) {
    Expr *e = buildPrimary(c->primary());
    for (auto *t : c->trailer()) {
      if (auto *call = dynamic_cast<P::CallTrailerContext *>(t)) {
        if (e->kind == ExprKind::Name) {
          auto *ce = ctx_.expr<CallExpr>(e->loc, static_cast<NameExpr *>(e));
          ce->args = buildArgs(call->argList());
          e = ce;
        } else if (e->kind == ExprKind::Attr) {
          auto *a = static_cast<AttrExpr *>(e);
          auto *mc = ctx_.expr<MethodCallExpr>(a->loc, a->object, a->name);
          mc->args = buildArgs(call->argList());
          e = mc;
        } else {
          error(loc(call), DiagId::err_not_callable);
        }
      } else if (auto *idx = dynamic_cast<P::IndexTrailerContext *>(t)) {
        SMLoc l = loc(idx);
        if (auto *s = dynamic_cast<P::SliceSubscriptContext *>(idx->subscript())) {
          auto *se = ctx_.expr<SliceExpr>(l, e);
          se->lo = s->lo ? buildExpr(s->lo) : nullptr;
          se->hi = s->hi ? buildExpr(s->hi) : nullptr;
          se->step = s->step ? buildExpr(s->step) : nullptr;
          se->hasStep = s->COLON().size() > 1;
          e = se;
        } else {
          auto *es = static_cast<P::ExprSubscriptContext *>(idx->subscript());
          auto *ie = ctx_.expr<IndexExpr>(l, e);
          for (auto *x : es->expr())
            ie->indices.push_back(buildExpr(x));
          e = ie;
        }
      } else {
        auto *at = static_cast<P::AttrTrailerContext *>(t);
        auto *name = at->ID() ? at->ID() : at->NONE(); // `SyncType.none`
        e = ctx_.expr<AttrExpr>(loc(name), e, sym(name));
      }
    }
    return e;
  }
  Expr *buildPrimary(P::PrimaryContext *c) {
    SMLoc l = loc(c);
    if (auto *x = dynamic_cast<P::IntLitContext *>(c)) {
      uint64_t v = 0;
      std::string text = x->INT()->getText();
      if (!parseIntToken(text, v))
        error(l, DiagId::err_int_literal_overflow, {text});
      auto *ie = ctx_.expr<IntExpr>(l, static_cast<int64_t>(v));
      ie->u64 = v > static_cast<uint64_t>(INT64_MAX);
      return ie;
    }
    if (auto *x = dynamic_cast<P::StringLitContext *>(c))
      return ctx_.expr<StrExpr>(l, unquote(x->STRING()));
    if (dynamic_cast<P::TrueLitContext *>(c))
      return ctx_.expr<BoolExpr>(l, true);
    if (dynamic_cast<P::FalseLitContext *>(c))
      return ctx_.expr<BoolExpr>(l, false);
    if (dynamic_cast<P::NoneLitContext *>(c))
      return ctx_.expr<NoneExpr>(l);
    if (auto *x = dynamic_cast<P::NameRefContext *>(c))
      return ctx_.expr<NameExpr>(l, sym(x->ID()));
    if (dynamic_cast<P::EmptyTupleContext *>(c))
      return ctx_.expr<SeqExpr>(ExprKind::Tuple, l);
    if (auto *x = dynamic_cast<P::ParenExprContext *>(c))
      return buildExpr(x->expr());
    if (auto *x = dynamic_cast<P::TupleLitContext *>(c)) {
      auto *e = ctx_.expr<SeqExpr>(ExprKind::Tuple, l);
      for (auto *y : x->expr())
        e->elems.push_back(buildExpr(y));
      return e;
    }
    if (auto *x = dynamic_cast<P::ListLitContext *>(c)) {
      auto *e = ctx_.expr<SeqExpr>(ExprKind::List, l);
      for (auto *y : x->expr())
        e->elems.push_back(buildExpr(y));
      return e;
    }
    auto *x = static_cast<P::MapLitContext *>(c);
    auto *e = ctx_.expr<MapExpr>(l);
    for (auto *entry : x->mapEntry())
      e->entries.push_back({buildExpr(entry->expr(0)), buildExpr(entry->expr(1))});
    return e;
  }

  AstContext &ctx_;
  diag::DiagEngine &diag_;
  const LocMap &map_;
};

} // namespace

bool parseIntToken(llvm::StringRef text, uint64_t &value) {
  uint64_t mult = 1;
  struct { const char *s; uint64_t m; } suffixes[] = {{"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30},
                                                       {"K", 1ull << 10},   {"M", 1ull << 20},   {"G", 1ull << 30}};
  for (auto &s : suffixes)
    if (text.endswith(s.s)) {
      mult = s.m;
      text = text.drop_back(strlen(s.s));
      break;
    }
  unsigned base = 10;
  if (text.startswith("0x") || text.startswith("0X")) {
    base = 16;
    text = text.drop_front(2);
  }
  if (text.empty())
    return false;
  unsigned __int128 v = 0;
  bool any = false;
  for (char ch : text) {
    if (ch == '_')
      continue;
    unsigned d;
    if (ch >= '0' && ch <= '9') d = ch - '0';
    else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
    else if (ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
    else return false;
    if (d >= base)
      return false;
    v = v * base + d;
    any = true;
    if (v > static_cast<unsigned __int128>(UINT64_MAX))
      return false;
  }
  if (!any)
    return false;
  v *= mult;
  if (v > static_cast<unsigned __int128>(UINT64_MAX))
    return false;
  value = static_cast<uint64_t>(v);
  return true;
}

bool parseLiteral(llvm::StringRef text, LiteralValue &out, std::string &error) {
  llvm::StringRef t = text.trim();
  if (t == "true" || t == "false") {
    out.kind = LiteralValue::Bool;
    out.i = t == "true";
    return true;
  }
  if (t == "none") {
    out.kind = LiteralValue::None;
    return true;
  }
  bool neg = t.startswith("-");
  llvm::StringRef digits = neg ? t.drop_front(1) : t;
  if (!digits.empty() && isdigit(static_cast<unsigned char>(digits[0]))) {
    uint64_t v;
    bool ok = parseIntToken(digits, v);
    if (ok && neg && v > static_cast<uint64_t>(INT64_MAX) + 1)
      ok = false;
    if (!ok) {
      error = "`" + t.str() + "` is not a valid 64-bit integer";
      return false;
    }
    out.kind = (!neg && v > static_cast<uint64_t>(INT64_MAX)) ? LiteralValue::U64 : LiteralValue::Int;
    out.i = static_cast<int64_t>(neg ? 0 - v : v);
    return true;
  }
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') {
    out.kind = LiteralValue::Str;
    out.s = t.drop_front().drop_back().str();
    return true;
  }
  if (t.empty()) {
    error = "empty value";
    return false;
  }
  out.kind = LiteralValue::Str;
  out.s = t.str();
  return true;
}

/// parseBuffer's token filter: drop NL inside (...) / [...], collapse NL runs, report bad
/// tokens, bound the nesting. The nesting weight of a token bounds the depth of the parse tree
/// and of the AST above it: brackets add one while open and one for the group once closed
/// (trailers `f(x)[i]` chain), operators add one each; `,` and `:` go back to the weight of the
/// enclosing bracket (siblings), and so does a statement end (a newline or `;` directly in a
/// block; not before `else`). Returns the tokens to parse; `unclosed` is the first bracket never
/// closed (nullptr when all close). Errors go to `diag` (the caller stops when there are any).
static std::vector<std::unique_ptr<antlr4::Token>> filterTokens(MscclLexer &lexer, diag::DiagEngine &diag,
                                                                const LocMap &map, antlr4::Token *&unclosed) {
  std::vector<std::unique_ptr<antlr4::Token>> tokens;
  struct Open {
    size_t type;     // LPAREN, LBRACK or LBRACE
    antlr4::Token *tok;
    unsigned base;   // nesting weight inside the bracket
  };
  std::vector<Open> stack;
  unclosed = nullptr; // the first bracket found never closed
  unsigned weight = 0;
  bool statementEnded = false;
  bool tooDeep = false;
  for (auto &tok : lexer.getAllTokens()) {
    size_t type = tok->getType();
    if (statementEnded && type != MscclLexer::NL && type != MscclLexer::SEMI) {
      statementEnded = false;
      if (type != MscclLexer::ELSE)
        weight = stack.empty() ? 0 : stack.back().base;
    }
    if (addsNesting(type))
      ++weight;
    switch (type) {
    case MscclLexer::LPAREN: case MscclLexer::LBRACK: case MscclLexer::LBRACE:
      if (stack.size() >= kMaxBrackets) {
        diag.report(map.at(tok.get()), DiagId::err_too_many_brackets, {std::to_string(kMaxBrackets)});
        tooDeep = true;
        break;
      }
      stack.push_back({type, tok.get(), ++weight});
      break;
    case MscclLexer::RPAREN: case MscclLexer::RBRACK: case MscclLexer::RBRACE: {
      // Close the nearest bracket of the same kind; brackets left open inside it are never
      // closed (the first one is named by a note under the syntax error it causes).
      size_t want = type == MscclLexer::RPAREN ? MscclLexer::LPAREN : type == MscclLexer::RBRACK ? MscclLexer::LBRACK
                                                                                                 : MscclLexer::LBRACE;
      size_t k = stack.size();
      while (k > 0 && stack[k - 1].type != want)
        --k;
      if (k == 0)
        break; // a stray closing bracket: the parser reports it
      if (k != stack.size() && !unclosed)
        unclosed = stack.back().tok;
      weight = stack[k - 1].base;
      stack.resize(k - 1);
      break;
    }
    case MscclLexer::COMMA: case MscclLexer::COLON:
      weight = stack.empty() ? 0 : stack.back().base;
      break;
    case MscclLexer::NL: case MscclLexer::SEMI:
      if (stack.empty() || stack.back().type == MscclLexer::LBRACE)
        statementEnded = true;
      break;
    default:
      break;
    }
    if (tooDeep)
      break;
    if (weight > kMaxExpressionNesting) {
      diag.report(map.at(tok.get()), DiagId::err_expression_too_complex, {std::to_string(kMaxExpressionNesting)});
      tooDeep = true;
      break;
    }
    // `if c { ... } return x` on one line: a statement may follow a `}` directly. A virtual
    // newline is inserted between `}` and a token that can only start a statement (never
    // `if`, which may also be a conditional expression after a map literal).
    if (!tokens.empty() && tokens.back()->getType() == MscclLexer::RBRACE &&
        (stack.empty() || stack.back().type == MscclLexer::LBRACE) &&
        (type == MscclLexer::ID || type == MscclLexer::LET || type == MscclLexer::FOR || type == MscclLexer::WITH ||
         type == MscclLexer::RETURN || type == MscclLexer::BREAK || type == MscclLexer::CONTINUE)) {
      auto nl = std::make_unique<antlr4::CommonToken>(MscclLexer::NL, "\n");
      nl->setStartIndex(tokens.back()->getStopIndex() + 1);
      nl->setStopIndex(tokens.back()->getStopIndex());
      nl->setLine(tokens.back()->getLine());
      nl->setCharPositionInLine(tokens.back()->getCharPositionInLine() + 1);
      tokens.push_back(std::move(nl));
    }
    switch (type) {
    case MscclLexer::NL:
      if ((!stack.empty() && stack.back().type != MscclLexer::LBRACE) || tokens.empty() ||
          tokens.back()->getType() == MscclLexer::NL)
        continue;
      break;
    case MscclLexer::UNTERMINATED_STRING:
      diag.report(map.at(tok.get()), DiagId::err_unterminated_string);
      static_cast<antlr4::CommonToken *>(tok.get())->setType(MscclLexer::STRING);
      static_cast<antlr4::CommonToken *>(tok.get())->setText(tok->getText() + "\"");
      break;
    case MscclLexer::UNTERMINATED_COMMENT:
      diag.report(map.at(tok.get()), DiagId::err_unterminated_comment);
      continue;
    default:
      break;
    }
    tokens.push_back(std::move(tok));
  }
  if (!unclosed && !stack.empty())
    unclosed = stack.back().tok;
  return tokens;
}

Module *parseBuffer(AstContext &ctx, diag::DiagEngine &diag, unsigned bufferId) {
  const llvm::MemoryBuffer *buf = diag.sourceMgr().getMemoryBuffer(bufferId);
  llvm::StringRef text = buf->getBuffer();
  size_t bad = firstInvalidUtf8(text);
  if (bad != llvm::StringRef::npos) {
    diag.report(SMLoc::getFromPointer(text.data() + bad), DiagId::err_invalid_utf8,
                {llvm::utohexstr(static_cast<unsigned char>(text[bad]), false, 2)});
    return nullptr; // ANTLR's decoder would throw
  }
  LocMap map(text);
  unsigned errorsBefore = diag.errorCount();

  antlr4::ANTLRInputStream input(text.data(), text.size());
  MscclLexer lexer(&input);
  lexer.removeErrorListeners();
  LexErrorListener lexErrors(diag, map);
  lexer.addErrorListener(&lexErrors);

  antlr4::Token *unclosed = nullptr;
  std::vector<std::unique_ptr<antlr4::Token>> tokens = filterTokens(lexer, diag, map, unclosed);
  if (diag.errorCount() != errorsBefore)
    return nullptr; // lexical errors or too deep: the parser would only add noise

  Module *m = ctx.module();
  m->bufferId = bufferId;
  m->filename = buf->getBufferIdentifier().str();
  if (tokens.empty())
    return m; // nothing but blanks and comments (ANTLR's ListTokenSource refuses no tokens)

  antlr4::ListTokenSource source(std::move(tokens));
  antlr4::CommonTokenStream stream(&source);
  MscclParser parser(&stream);
  parser.removeErrorListeners();
  ErrorListener errors(diag, map);
  if (unclosed)
    errors.unclosed = map.at(unclosed);
  parser.addErrorListener(&errors);
  P::FileContext *tree = parser.file();
  if (errors.count != 0)
    return nullptr;

  Builder b(ctx, diag, map);
  b.buildFile(tree, *m);
  if (b.failed)
    return nullptr;
  return m;
}

} // namespace msccl::frontend
