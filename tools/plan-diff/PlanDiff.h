// PlanDiff: structural comparison of two JSON documents (MSCCL++ execution plans).
//
// Consumes two parsed JSON values, produces the list of differences in a fixed order, each with
// the JSON path where it occurs (e.g. `gpus[0].threadblocks[1].ops[3].name`). Two documents are
// equal when they have the same keys, the same values and the same list order; the order of keys
// inside an object is irrelevant. Numbers compare by value (1 == 1.0; 2^64-1 is kept exact).
// Order of reporting: object keys in sorted order (a key present in only one side is reported at
// its sorted position), list elements by index, then a length mismatch after the common prefix.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace msccl::plandiff {

struct Difference {
  std::string path;  // e.g. "gpus[0].threadblocks[1].ops[3].name"; "(root)" for the top level
  std::string left;  // rendering of the value in A ("<missing>" when absent)
  std::string right; // rendering of the value in B ("<missing>" when absent)
};

// Returns the differences between `a` and `b`, at most `limit` of them (0 = no limit).
// Never throws for any pair of JSON values.
std::vector<Difference> diffJson(const nlohmann::json &a, const nlohmann::json &b, std::size_t limit);

// One line: `PATH: LEFT vs RIGHT`.
std::string formatDifference(const Difference &d);

} // namespace msccl::plandiff
