//===- InterpStyle.cpp - The interpreter's calls into a plugged-in style (Style.h) ---------===//
//
// The builtins Builtins.def declares for a style (`chunk`, `rank`, `Check`, the ChunkRef and
// RankRef methods and attributes) go to the program's style (Interp::setStyle); a StyleError
// becomes err_dsl at the argument it names, or at the call, with the loop and call notes.
// Outside a program of that style they are an error naming the style to declare.
//
//===------------------------------------------------------------------------------------===//
#include "Interp.h"

namespace msccl::elab {

using diag::DiagId;
using llvm::SMLoc;

StyleProgram &Interp::styleProgram(SMLoc loc, const std::string &what) {
  if (!styleProgram_)
    failDsl(loc, "`" + what + "` belongs to the mscclpplang style: declare the program with "
                              "`style = \"mscclpplang\"`");
  return *styleProgram_;
}

void Interp::failStyle(const StyleError &e, llvm::ArrayRef<SMLoc> locs, SMLoc loc) {
  const SMLoc at = e.arg >= 0 && size_t(e.arg) < locs.size() ? locs[size_t(e.arg)] : loc;
  fail(at, DiagId::err_dsl, {e.what()});
}

Value Interp::styleCall(BuiltinFnId fn, StyleArgs a, llvm::ArrayRef<SMLoc> locs, SMLoc loc) {
  StyleProgram &p = styleProgram(loc, builtins().fn(fn).name);
  try {
    return style_->call(p, fn, a);
  } catch (const StyleError &e) {
    failStyle(e, locs, loc);
  }
}

Value Interp::styleMethod(MethodId id, const Value &self, StyleArgs a, llvm::ArrayRef<SMLoc> locs, SMLoc loc) {
  StyleProgram &p = styleProgram(loc, "ChunkRef");
  try {
    return style_->method(p, id, self, a);
  } catch (const StyleError &e) {
    failStyle(e, locs, loc);
  }
}

Value Interp::styleAttr(AttrId id, const Value &self, SMLoc loc) {
  styleProgram(loc, "ChunkRef");
  try {
    return style_->attr(id, self);
  } catch (const StyleError &e) {
    failStyle(e, {}, loc);
  }
}

} // namespace msccl::elab
