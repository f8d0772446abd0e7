//===- TraceReplay.h - Replay a recorded Python DSL call trace through Dsl.h (tests) -----===//
//
// A trace (traces/*.trace.json, made by traces/make_traces.py from the reference Python DSL
// programs) lists every DSL call of one program with its bound arguments. replayTrace() makes the
// same calls through msccl::ir and returns the Program, so tests can compare our plan with the
// golden plan of the same program. Test support only.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/Dsl.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace msccl::test {

/// Replays `trace`. Throws ir::DslError from the DSL, std::runtime_error for a malformed trace.
std::unique_ptr<ir::Program> replayTrace(const nlohmann::json &trace);
/// Reads a file into a JSON value (throws std::runtime_error).
nlohmann::json readJsonFile(const std::string &path);

} // namespace msccl::test
