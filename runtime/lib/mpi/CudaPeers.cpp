//===- CudaPeers.cpp - CUDA IPC and multicast handles exchanged through a Communicator ----===//
//
// See CudaPeers.h. Consumes a Communicator and this rank's device memory; produces node peers'
// mappings (cudaIpcOpenMemHandle) and a node-wide multicast object (cuMulticastCreate on the
// node's first rank, fabric handle exported, imported by the others). Every exchange is one
// allGather over the world (ranks off the node ignore what they receive).
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/CudaPeers.h"

#include "msccl/runtime/Executor.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstring>
#include <string>

namespace msccl::runtime {
namespace {
void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw ExecutionError(ErrorKind::Backend, std::string(what) + " failed: " + cudaGetErrorString(e));
}

/// A driver API function found through the runtime (cudaGetDriverEntryPointByVersion), so this
/// library needs no link against libcuda and loads on machines without a driver.
template <class F> F driverFn(const char *name) {
  void *p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, 12030, cudaEnableDefault, &q);
  if (e != cudaSuccess || !p || q != cudaDriverEntryPointSuccess)
    throw ExecutionError(ErrorKind::Backend, std::string("CUDA driver function ") + name + " is not available" +
                                                 (e != cudaSuccess ? std::string(": ") + cudaGetErrorString(e) : ""));
  return reinterpret_cast<F>(p);
}
#define MSCCL_CU(fn) driverFn<decltype(&fn)>(#fn)

void check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) {
    const char *msg = nullptr;
    try {
      MSCCL_CU(cuGetErrorString)(r, &msg);
    } catch (const ExecutionError &) {
    }
    throw ExecutionError(ErrorKind::Backend, std::string(what) + " failed: " + (msg ? msg : "unknown CUDA error"));
  }
}
} // namespace

CudaIpcPeers::CudaIpcPeers(Communicator &comm, void *local, size_t bytes) {
  struct Entry {
    cudaIpcMemHandle_t handle;
    uint64_t bytes;
  } mine{};
  check(cudaIpcGetMemHandle(&mine.handle, local), "cudaIpcGetMemHandle");
  mine.bytes = bytes;
  auto all = comm.allGather(&mine, sizeof mine);
  const int n = comm.size();
  peers_.assign(size_t(n), nullptr);
  bytes_.assign(size_t(n), 0);
  opened_.assign(size_t(n), false);
  for (int r = 0; r < n; ++r) {
    Entry e;
    std::memcpy(&e, all[size_t(r)].data(), sizeof e);
    bytes_[size_t(r)] = size_t(e.bytes);
    if (r == comm.rank()) {
      peers_[size_t(r)] = local;
    } else if (comm.sameNode(r, comm.rank())) {
      void *p = nullptr;
      check(cudaIpcOpenMemHandle(&p, e.handle, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
      peers_[size_t(r)] = p;
      opened_[size_t(r)] = true;
    }
  }
}

CudaIpcPeers::~CudaIpcPeers() {
  for (size_t r = 0; r < peers_.size(); ++r)
    if (opened_[r])
      cudaIpcCloseMemHandle(peers_[r]);
}

CudaMulticast::CudaMulticast(Communicator &comm, size_t bytes) {
  check(MSCCL_CU(cuInit)(0), "cuInit");
  check(cudaGetDevice(&device_), "cudaGetDevice");
  CUdevice dev;
  check(MSCCL_CU(cuDeviceGet)(&dev, device_), "cuDeviceGet");
  int supported = 0;
  check(MSCCL_CU(cuDeviceGetAttribute)(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev), "cuDeviceGetAttribute");
  const std::vector<int> &node = comm.nodeRanks();
  CUmulticastObjectProp prop{};
  prop.numDevices = unsigned(node.size());
  prop.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  prop.size = bytes;
  size_t gran = 0;
  check(MSCCL_CU(cuMulticastGetGranularity)(&gran, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED), "cuMulticastGetGranularity");
  bytes_ = (bytes + gran - 1) / gran * gran;
  prop.size = bytes_;

  // The node's first rank creates and exports; everybody all-gathers (one exchange for all nodes).
  CUmemFabricHandle fabric{};
  CUmemGenericAllocationHandle mc = 0;
  const bool leader = comm.rank() == node.front();
  if (leader) {
    check(MSCCL_CU(cuMulticastCreate)(&mc, &prop), "cuMulticastCreate");
    check(MSCCL_CU(cuMemExportToShareableHandle)(&fabric, mc, CU_MEM_HANDLE_TYPE_FABRIC, 0), "cuMemExportToShareableHandle");
  }
  auto all = comm.allGather(&fabric, sizeof fabric);
  if (!leader) {
    std::memcpy(&fabric, all[size_t(node.front())].data(), sizeof fabric);
    check(MSCCL_CU(cuMemImportFromShareableHandle)(&mc, &fabric, CU_MEM_HANDLE_TYPE_FABRIC), "cuMemImportFromShareableHandle");
  }
  mcHandle_ = mc;
  check(MSCCL_CU(cuMulticastAddDevice)(mc, dev), "cuMulticastAddDevice");

  // This rank's physical memory, bound to the multicast object and mapped for unicast access.
  CUmemAllocationProp mp{};
  mp.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  mp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  mp.location.id = device_;
  mp.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  CUmemGenericAllocationHandle mem = 0;
  check(MSCCL_CU(cuMemCreate)(&mem, bytes_, &mp, 0), "cuMemCreate");
  memHandle_ = mem;
  comm.barrier(); // every device is added before anyone binds
  check(MSCCL_CU(cuMulticastBindMem)(mc, 0, mem, 0, bytes_, 0), "cuMulticastBindMem");

  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device_;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUdeviceptr uc = 0, mcp = 0;
  check(MSCCL_CU(cuMemAddressReserve)(&uc, bytes_, gran, 0, 0), "cuMemAddressReserve");
  check(MSCCL_CU(cuMemMap)(uc, bytes_, 0, mem, 0), "cuMemMap");
  check(MSCCL_CU(cuMemSetAccess)(uc, bytes_, &access, 1), "cuMemSetAccess");
  check(MSCCL_CU(cuMemAddressReserve)(&mcp, bytes_, gran, 0, 0), "cuMemAddressReserve");
  check(MSCCL_CU(cuMemMap)(mcp, bytes_, 0, mc, 0), "cuMemMap");
  check(MSCCL_CU(cuMemSetAccess)(mcp, bytes_, &access, 1), "cuMemSetAccess");
  unicast_ = uc;
  multicast_ = mcp;
  (void)supported; // cuMulticastCreate reports CUDA_ERROR_NOT_SUPPORTED itself
}

CudaMulticast::~CudaMulticast() {
  CUdevice dev;
  if (multicast_) {
    MSCCL_CU(cuMemUnmap)(CUdeviceptr(multicast_), bytes_);
    MSCCL_CU(cuMemAddressFree)(CUdeviceptr(multicast_), bytes_);
  }
  if (unicast_) {
    MSCCL_CU(cuMemUnmap)(CUdeviceptr(unicast_), bytes_);
    MSCCL_CU(cuMemAddressFree)(CUdeviceptr(unicast_), bytes_);
  }
  if (MSCCL_CU(cuDeviceGet)(&dev, device_) == CUDA_SUCCESS && mcHandle_)
    MSCCL_CU(cuMulticastUnbind)(CUmemGenericAllocationHandle(mcHandle_), dev, 0, bytes_);
  if (memHandle_)
    MSCCL_CU(cuMemRelease)(CUmemGenericAllocationHandle(memHandle_));
  if (mcHandle_)
    MSCCL_CU(cuMemRelease)(CUmemGenericAllocationHandle(mcHandle_));
}

} // namespace msccl::runtime
