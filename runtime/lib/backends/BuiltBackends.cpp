//===- BuiltBackends.cpp - registerBuiltExecutors: every executor backend of this build ---===//
//
// Consumes BuiltBackends.def (written by CMake: one MSCCL_BACKEND(Name) row per backend library
// built) and registers each backend (Executor.h's register<Name>Executor, idempotent); likewise
// BuiltRankBackends.def for the one-process-per-rank backends (DistributedRun.h's
// register<Name>RankBackends; "cpu" needs none).
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/DistributedRun.h"
#include "msccl/runtime/Executor.h"

namespace msccl::runtime {

void registerBuiltExecutors() {
#define MSCCL_BACKEND(Name) register##Name##Executor();
#include "BuiltBackends.def"
#undef MSCCL_BACKEND
}
void registerBuiltRankBackends() {
#define MSCCL_RANK_BACKEND(Name) register##Name##RankBackends();
#include "BuiltRankBackends.def"
#undef MSCCL_RANK_BACKEND
}

} // namespace msccl::runtime
