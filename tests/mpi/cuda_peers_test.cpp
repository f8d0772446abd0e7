//===- cuda_peers_test.cpp - CUDA IPC exchange through the Communicator (label gpu) ------===//
//
// Under mpirun with one GPU per process (rank r uses device r % count): every rank fills its
// buffer with its rank, maps its node peers' buffers through CudaIpcPeers, copies the next
// node peer's buffer into a host vector and checks it holds that peer's rank. Exits 77 (skip)
// without a GPU. Prints one line per rank.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/CudaPeers.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

using namespace msccl::runtime;

int main(int argc, char **argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  try {
    auto comm = Communicator::initWorld(&argc, &argv);
    cudaSetDevice(comm->rank() % devices);
    const size_t bytes = 1 << 20;
    void *buf = nullptr;
    if (cudaMalloc(&buf, bytes) != cudaSuccess)
      throw std::runtime_error("cudaMalloc failed");
    cudaMemset(buf, comm->rank() & 0xff, bytes);
    cudaDeviceSynchronize();
    comm->barrier();
    int bad = 0;
    {
      CudaIpcPeers peers(*comm, buf, bytes);
      const std::vector<int> &node = comm->nodeRanks();
      for (size_t i = 0; i < node.size(); ++i) {
        int r = node[i];
        std::vector<unsigned char> host(bytes);
        cudaMemcpy(host.data(), peers.peer(r), bytes, cudaMemcpyDefault);
        for (unsigned char c : host)
          bad += c != (r & 0xff);
      }
      comm->barrier();
    }
    cudaFree(buf);
    std::printf("rank %d: %d wrong bytes read from %zu node peers\n", comm->rank(), bad, comm->nodeRanks().size());
    return comm->allReduceSum(uint64_t(bad)) == 0 ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cuda_peers_test: %s\n", e.what());
    return 1;
  }
}
