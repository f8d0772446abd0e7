//===- NoMpi.cpp - Communicator::initWorld in a build without MPI -------------------------===//
//
// The library msccl_mpi_stub, linked instead of msccl_mpi (MpiCommunicator.cpp) when CMake found
// no MPI: initWorld says so, so that drivers call it unconditionally (no #ifdef) and a process
// launched by mpirun stops with this error instead of running every rank by itself.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Communicator.h"
#include "msccl/runtime/Executor.h"

namespace msccl::runtime {

std::unique_ptr<Communicator> Communicator::initWorld(int *, char ***) {
  throw ExecutionError(ErrorKind::Unsupported,
                       "this build of msccl has no MPI (install openmpi-bin libopenmpi-dev and rebuild), so a process "
                       "launched by mpirun cannot join its job; use the unique-id bootstrap (torchrun, "
                       "Communicator::initFromUniqueId) instead");
}

} // namespace msccl::runtime
