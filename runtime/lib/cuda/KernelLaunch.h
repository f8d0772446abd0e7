//===- KernelLaunch.h - Host entry points of the plan-interpreter kernel -----------------===//
//
// The only host functions defined by Kernel.cu: launch one interpreter kernel (one block per
// DevThreadblock of DevLaunch::threadblocks, `threads` threads each) on a stream, and ask the
// occupancy calculator how many such blocks fit on one multiprocessor (co-residency check:
// every block of a launch must be resident at once, since blocks wait on each other).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/cuda/DevicePlan.h"

#include <cuda_runtime_api.h>

namespace msccl::cuda::detail {

/// Launches the interpreter. Returns the launch error (cudaSuccess when queued).
/// `cooperative`: cudaLaunchCooperativeKernel, which refuses (cudaErrorCooperativeLaunchTooLarge)
/// a grid whose blocks cannot all be resident at once instead of letting it hang; use it when
/// the device supports it (cudaDevAttrCooperativeLaunch).
cudaError_t launchPlanKernel(const DevLaunch &launch, unsigned numBlocks, unsigned threadsPerBlock, cudaStream_t stream,
                             bool cooperative);

/// Blocks of `threadsPerBlock` threads the interpreter can keep resident per multiprocessor
/// on the current device.
cudaError_t planKernelBlocksPerSm(unsigned threadsPerBlock, int *blocksPerSm);

} // namespace msccl::cuda::detail
