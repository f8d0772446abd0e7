//===- PlanJson.h - The one JSON reader and writer for execution plans ------------------===//
//
// Reads and writes the MSCCL++ JSON plan format (docs/spec/plan-format.md) to and from
// the model of Plan.h. The writer emits keys in the order the MSCCL++ Python DSL writes them
// (program.py to_json), so `mscclc`'s output is byte-identical to `json.dumps(plan, indent=2)`
// plus a final newline. The reader accepts every field of the format and reports malformed input
// with the JSON path of the offending value, e.g. `gpus[3].threadblocks[1].ops[7].src_buff[0].index`.
//
// Structural checks (types, required keys, known op names and enum spellings) happen while
// reading; semantic checks (ids that resolve to nothing, limits, inconsistent chunk counts) are
// in PlanValidate.h.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <memory>
#include <stdexcept>
#include <string>

namespace msccl::plan {

/// A malformed plan. `path()` is the JSON path of the offending value ("" for the root);
/// `what()` is "PATH: message".
class PlanError : public std::runtime_error {
public:
  PlanError(std::string path, const std::string &message);
  const std::string &path() const { return path_; }
  const std::string &message() const { return message_; }

private:
  std::string path_;
  std::string message_;
};

/// Plan -> JSON value, keys in the DSL's order.
nlohmann::ordered_json toJson(const Plan &plan);
/// Plan -> text: indent = 2 gives Python's json.dumps(indent=2) layout, ASCII only; indent < 0
/// gives compact output. A final newline is appended.
std::string writePlan(const Plan &plan, int indent = 2);
void writePlan(std::ostream &os, const Plan &plan, int indent = 2);

/// Streams a plan gpu by gpu, so that a producer never holds more than one gpu of the plan:
/// construct with the plan's top-level fields (`meta.gpus` is ignored), call gpu() for each rank
/// in order, then finish(). The text is the same as writePlan's. Text is handed to `os` in
/// pieces of about 64 KiB.
class PlanStreamWriter {
public:
  PlanStreamWriter(std::ostream &os, const Plan &meta, int indent = 2);
  ~PlanStreamWriter();
  PlanStreamWriter(const PlanStreamWriter &) = delete;
  PlanStreamWriter &operator=(const PlanStreamWriter &) = delete;
  void gpu(const Gpu &gpu);
  void finish();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// JSON value -> Plan. Throws PlanError naming the JSON path of the first problem.
Plan fromJson(const nlohmann::json &json);
/// Text -> Plan. Text that is not JSON (a syntax error, a number too large for a double such as
/// `1e999`, ...) is a PlanError whose path names the value where reading stopped and whose
/// message is "invalid JSON: " and the JSON library's message (with line and column). No
/// exception other than PlanError leaves parsePlan, fromJson or readPlanFile.
Plan parsePlan(const std::string &text);
/// File -> Plan. Throws PlanError (path "") if the file cannot be read.
Plan readPlanFile(const std::string &filename);

} // namespace msccl::plan
