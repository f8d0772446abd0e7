//===- SharedMemoryObject.h - POSIX shared memory objects of the device layer ------------===//
//
// What both device implementations use to share host memory between the processes of a node
// (DeviceApi.h): the host implementation for everything shareable, the CUDA one for the port
// channels' inbound counters (host-mapped memory the peers' proxies write). An object is made
// by one process (createSharedObject: shm_open O_EXCL with a unique name, ftruncate, mmap
// shared; its pages are zero), opened by name by the others (openSharedObject), unmapped by
// each (unmapSharedObject) and unlinked by its maker, as soon as every peer has opened it
// (DeviceApi::sealShareable), so that a job killed later leaves no object behind. Sizes are
// rounded up to whole pages.
// Errors throw runtime::ExecutionError(Backend) naming the object and errno's reason.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <string>

namespace msccl::cuda::detail {

struct SharedObject {
  void *ptr = nullptr;
  size_t mapped = 0; ///< bytes mapped (whole pages)
  std::string name;  ///< "/msccl-<pid>-<random>": the export handle
};

/// A new zero-filled object of at least `bytes` bytes, mapped here.
SharedObject createSharedObject(size_t bytes);
/// Maps an object another process made (`name` from its createSharedObject).
SharedObject openSharedObject(const std::string &name, size_t bytes);
void unmapSharedObject(const SharedObject &o) noexcept;
/// Removes the name (the maker, when no process will open it any more); mappings stay valid.
void unlinkSharedObject(const std::string &name) noexcept;

} // namespace msccl::cuda::detail
