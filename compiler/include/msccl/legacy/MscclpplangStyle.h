//===- MscclpplangStyle.h - MSCCLPPLang's chunk-oriented builtins as a front-end style --------===//
//
// The style a program selects with `style = "mscclpplang"` (docs/mscclpplang.md): `chunk`,
// `rank`, `Check` and the ChunkRef / RankRef methods of Builtins.def build a legacy::Program
// (LegacyIR.h); its passes (LegacyPasses.h) make MSCCLPPLang's plan, which the one converter
// of that format (plan::fromLegacyJson) turns into today's plan::Plan.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/elab/Style.h"

namespace msccl::legacy {

/// The mscclpplang style (a process-wide constant; pass it in elab::ElabOptions::styles).
const elab::Style &mscclpplangStyle();

} // namespace msccl::legacy
