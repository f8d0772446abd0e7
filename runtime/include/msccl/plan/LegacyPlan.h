//===- LegacyPlan.h - MSCCLPPLang's older JSON plan format, read into the one plan model -===//
//
// Before PR #579, MSCCL++'s chunk-oriented language (MSCCLPPLang) wrote execution plans in an
// older JSON format, and plans in it are still deployed. Its gpus carry camelCase chunk counts
// (`inputChunks`, `outputChunks`, `scratchChunks`, `chunkGroups`); channels are keyed by
// (local buffer, remote buffer, type) (`srcbuff`/`dstbuff`/`type`/`connectedTo`, threadblock
// `channels: [{src, dst, ctype, cids}]`); ops name their channels as `i_cids`/`o_cids` (index into
// the threadblock's channels of the op's `i_buff`/`o_buff` key, plus a chunk offset in the peer's
// buffer), their local operands as `srcs`/`dsts` lists or `src`/`srcbuff`/`srcoff`,
// `dst`/`dstbuff`/`dstoff`, a size `cnt` in chunks, and op names of that executor (`rrc`, `rrcs`,
// `rs`, `rspkt`, `rpkt`, `tpkt`, ...). docs/spec/plan-format.md#plan-13 specifies the format and
// the conversion; the reader mirrors mscclpp src/executor/execution_plan.cc and
// src/include/execution_kernel.hpp at be6a941f~1.
//
// The conversion is exact for every message size that today's format accepts (a multiple of
// `buffer_alignment` per chunk): the old chunk -> byte map with `chunkGroups` coincides with
// today's linear one there. Channel ids, remote buffers and op operands are renumbered into
// today's tables with the conventions of our own lowering (compiler/lib/backend/Lower.cpp), so a
// converted plan written with writePlan() compares byte for byte with what mscclc writes for the
// same program.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <nlohmann/json.hpp>

#include <string>

namespace msccl::plan {

/// Whether `json` is a plan in the older format: an object whose `gpus` array's first element is
/// an object with `inputChunks` or `chunkGroups` and without `input_chunks`. Never throws.
bool isLegacyPlan(const nlohmann::json &json);

/// Whether the file `filename` holds a plan in the older format (isLegacyPlan of its JSON); false
/// when it cannot be read or is not JSON. Tools call it to say that the JSON paths of their
/// findings name the converted plan (`plan-convert FILE` prints it). Never throws.
bool isLegacyPlanFile(const std::string &filename);

/// Older-format JSON value -> Plan in today's model. Throws PlanError naming the JSON path of the
/// first problem (an unknown op or channel type, a `cids`/`i_cids`/`o_cids` id that resolves to
/// no channel, `chunkGroups` that does not divide the chunk count, ...). fromJson() and
/// parsePlan() call it when isLegacyPlan() holds, so every plan reader accepts both formats.
Plan fromLegacyJson(const nlohmann::json &json);

} // namespace msccl::plan
