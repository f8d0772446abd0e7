//===- MpiBootstrap.cpp - The MPI bootstrap as a plugin of libmsccl ----------------------===//
//
// libmsccl_bootstrap_mpi.so: the only part of libmsccl's world that links MPI. libmsccl.so
// loads it with dlopen at the first Communicator::mpi (Execute.cpp), so libmsccl.so and what
// links it (libmsccl_nccl.so, the Python module) carry no libmpi dependency and an application
// that never asks for MPI never loads it.
//
// One C entry point: runtime::Communicator::initWorld (runtime/Communicator.h), its result
// handed over as a raw pointer that the caller adopts into a unique_ptr<runtime::Communicator>
// (the same class, built from the same source, with the MPI implementation behind its Impl).
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Communicator.h"
#include "msccl/runtime/Executor.h"

#include <cstring>
#include <exception>
#include <string>

namespace {
void copyMessage(const std::string &m, char *error, size_t errorBytes) {
  if (!error || !errorBytes)
    return;
  size_t n = std::min(m.size(), errorBytes - 1);
  std::memcpy(error, m.data(), n);
  error[n] = '\0';
}
} // namespace

/// Initialise MPI and build the world communicator. Returns 0 and *comm (a
/// runtime::Communicator* the caller owns), or a non-zero code with a message in `error`:
/// 1 + runtime::ErrorKind for an ExecutionError, 100 for anything else.
extern "C" __attribute__((visibility("default"))) int
msccl_bootstrap_mpi_init_world(int *argc, char ***argv, void **comm, char *error, size_t errorBytes) {
  try {
    *comm = msccl::runtime::Communicator::initWorld(argc, argv).release();
    return 0;
  } catch (const msccl::runtime::ExecutionError &e) {
    copyMessage(e.what(), error, errorBytes);
    return 1 + int(e.kind());
  } catch (const std::exception &e) {
    copyMessage(e.what(), error, errorBytes);
  } catch (...) {
    copyMessage("unknown exception", error, errorBytes);
  }
  return 100;
}
