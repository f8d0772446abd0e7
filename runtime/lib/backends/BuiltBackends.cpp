//===- BuiltBackends.cpp - registerBuiltExecutors: every executor backend of this build ---===//
//
// Consumes BuiltBackends.def (written by CMake: one MSCCL_BACKEND(Name) row per backend library
// built) and registers each backend (Executor.h's register<Name>Executor, idempotent).
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Executor.h"

namespace msccl::runtime {

void registerBuiltExecutors() {
#define MSCCL_BACKEND(Name) register##Name##Executor();
#include "BuiltBackends.def"
#undef MSCCL_BACKEND
}

} // namespace msccl::runtime
