//===- TestSupport.h - Helpers shared by the runtime tests -------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"
#include "msccl/runtime/Executor.h"

#include <string>
#include <vector>

namespace msccl::test {

/// ../shared (golden plans) or "" when absent.
std::string sharedDir();
/// tests/runtime/plans.
std::string plansDir();
/// *.json files of `dir`, sorted ("" entries when absent).
std::vector<std::string> jsonFiles(const std::string &dir);
/// Sizes (bytes) a plan can run: chunk multiples k * max(chunks) * alignment, k in `factors`,
/// raised to the plan's min_message_size.
std::vector<uint64_t> sizesFor(const plan::Plan &plan, std::vector<uint64_t> factors);
/// Whether the plan has any LL packet op.
bool usesPackets(const plan::Plan &plan);

} // namespace msccl::test
