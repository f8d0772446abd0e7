//===- SharedMemoryObject.cpp - POSIX shared memory objects of the device layer ----------===//
//
// See SharedMemoryObject.h.
//
//===------------------------------------------------------------------------------------===//
#include "SharedMemoryObject.h"

#include "msccl/runtime/Executor.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace msccl::cuda::detail {

using runtime::ErrorKind;
using runtime::ExecutionError;

namespace {
size_t pages(size_t bytes) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (std::max<size_t>(bytes, 16) + page - 1) / page * page;
}

SharedObject mapFd(int fd, const std::string &name, size_t mapped, bool created) {
  void *p = !created || ftruncate(fd, (off_t)mapped) == 0 ? mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                                         : MAP_FAILED;
  const int err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    if (created) shm_unlink(name.c_str());
    throw ExecutionError(ErrorKind::Backend, "cannot map " + std::to_string(mapped) + " bytes of shared memory object " + name +
                                                 ": " + std::strerror(err));
  }
  return {p, mapped, name};
}
} // namespace

SharedObject createSharedObject(size_t bytes) {
  // The pid alone is not unique over time: a process that died before unlinking its objects
  // (a job aborted by its launcher) leaves names a later process with the same pid would hit.
  static const uint64_t salt = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  static std::atomic<uint64_t> serial{0};
  char tag[17];
  std::snprintf(tag, sizeof tag, "%016llx", (unsigned long long)(salt + serial.fetch_add(1)));
  const std::string name = "/msccl-" + std::to_string(getpid()) + "-" + tag;
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw ExecutionError(ErrorKind::Backend, "shm_open " + name + ": " + std::strerror(errno));
  return mapFd(fd, name, pages(bytes), true);
}

SharedObject openSharedObject(const std::string &name, size_t bytes) {
  if (name.rfind("/msccl-", 0) != 0)
    throw ExecutionError(ErrorKind::Backend, "\"" + name + "\" is not the handle of a shared memory object of this library");
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) throw ExecutionError(ErrorKind::Backend, "shm_open " + name + ": " + std::strerror(errno));
  return mapFd(fd, name, pages(bytes), false);
}

void unmapSharedObject(const SharedObject &o) noexcept {
  if (o.ptr) munmap(o.ptr, o.mapped);
}

void unlinkSharedObject(const std::string &name) noexcept { shm_unlink(name.c_str()); }

} // namespace msccl::cuda::detail
