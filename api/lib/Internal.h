//===- Internal.h - What the units of libmsccl share (not installed) ---------------------===//
#pragma once

#include "msccl/msccl.hpp"

#include <string>

namespace msccl::detail {

/// Converts the exception being handled (msccl::Error, runtime::ExecutionError,
/// plan::PlanError, std::bad_alloc, anything else) into msccl::Error and throws it.
[[noreturn]] void rethrowAsError(const std::string &context);

/// The code and message of the exception being handled (for the C API; never throws).
ErrorCode currentError(std::string &message);

} // namespace msccl::detail
