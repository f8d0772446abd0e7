# The stdlib test matrix: shapes x modes x data types per algorithm. Keep it small enough for CI
# (a few minutes on 2 cores): few sizes, small chunks, rank counts chosen to hit the corner
# cases (2 ranks, odd counts, several peer groups / remote groups, non-powers of two).

# ---- allreduce ----------------------------------------------------------------------------
stdlib_run(allreduce/allpairs r2 DEFINES ranks=2)
stdlib_run(allreduce/allpairs r3 DEFINES ranks=3 DTYPE int32)
stdlib_run(allreduce/allpairs r8 DEFINES ranks=8 DTYPE float16)
stdlib_run(allreduce/allpairs r6-ppt2-c2 DEFINES ranks=6 peers_per_tb=2 chunks=2 DTYPE int32)
stdlib_run(allreduce/allpairs r13-i2 DEFINES ranks=13 instances=2 MODES out-of-place)
stdlib_run(allreduce/allpairs r32 DEFINES ranks=32 DTYPE int32 MODES in-place)
stdlib_refuse(allreduce/allpairs ranks1 "needs at least 2 ranks" DEFINES ranks=1)
stdlib_refuse(allreduce/allpairs ppt9 "peers_per_tb must be in 1..8" DEFINES peers_per_tb=9)

stdlib_run(allreduce/allpairs_packet r2 DEFINES ranks=2)
stdlib_run(allreduce/allpairs_packet r5 DEFINES ranks=5 DTYPE int32)
stdlib_run(allreduce/allpairs_packet r8 DEFINES ranks=8 DTYPE bfloat16)
stdlib_run(allreduce/allpairs_packet r11-ppt4 DEFINES ranks=11 peers_per_tb=4 DTYPE int32 MODES in-place)
stdlib_run(allreduce/allpairs_packet r32 DEFINES ranks=32 DTYPE int32 MODES out-of-place)
stdlib_refuse(allreduce/allpairs_packet ranks1 "needs at least 2 ranks" DEFINES ranks=1)

stdlib_run(allreduce/ring r2 DEFINES ranks=2)
stdlib_run(allreduce/ring r3 DEFINES ranks=3 DTYPE int32)
stdlib_run(allreduce/ring r4-c2 DEFINES ranks=4 chunks=2 DTYPE float16)
stdlib_run(allreduce/ring r7-i2 DEFINES ranks=7 instances=2 DTYPE int32 MODES out-of-place)
stdlib_run(allreduce/ring r16 DEFINES ranks=16 DTYPE int32 MODES in-place)
stdlib_run(allreduce/ring r32 DEFINES ranks=32 DTYPE int32 MODES out-of-place)
stdlib_refuse(allreduce/ring ranks1 "needs at least 2 ranks" DEFINES ranks=1)

stdlib_run(allreduce/pipelined r2 DEFINES ranks=2 unit=256 CHUNK_BYTES 1024)
stdlib_run(allreduce/pipelined r5-i2 DEFINES ranks=5 unit=192 instances=2 CHUNK_BYTES 1024 DTYPE int32)
stdlib_run(allreduce/pipelined r8-c2 DEFINES ranks=8 chunks=2 unit=512 CHUNK_BYTES 1024 MODES in-place)
stdlib_run(allreduce/pipelined r32 DEFINES ranks=32 unit=512 CHUNK_BYTES 1024 DTYPE int32 MODES out-of-place)
stdlib_refuse(allreduce/pipelined unit "unit must be a positive multiple of 16" DEFINES unit=100)
stdlib_refuse(allreduce/pipelined ranks1 "needs at least 2 ranks" DEFINES ranks=1)

stdlib_run(allreduce/nvls r2 DEFINES ranks=2)
stdlib_run(allreduce/nvls r5-c2 DEFINES ranks=5 chunks=2 DTYPE int32)
stdlib_run(allreduce/nvls r8 DEFINES ranks=8 DTYPE bfloat16)
stdlib_run(allreduce/nvls r11 DEFINES ranks=11 DTYPE int32 MODES out-of-place)
stdlib_run(allreduce/nvls r32 DEFINES ranks=32 DTYPE int32 MODES in-place)
stdlib_refuse(allreduce/nvls ranks1 "needs at least 2 ranks" DEFINES ranks=1)

stdlib_run(allreduce/hierarchical n2x2 DEFINES ranks=4 ranks_per_node=2)
stdlib_run(allreduce/hierarchical n3x1 DEFINES ranks=3 ranks_per_node=1 DTYPE int32)
stdlib_run(allreduce/hierarchical n2x3 DEFINES ranks=6 ranks_per_node=3 DTYPE int32)
stdlib_refuse(allreduce/hierarchical instances2 "supports only instances = 1" DEFINES ranks=6 ranks_per_node=3 instances=2)
stdlib_run(allreduce/hierarchical n3x4 DEFINES ranks=12 ranks_per_node=4 DTYPE float16 MODES out-of-place)
stdlib_run(allreduce/hierarchical n10x2 DEFINES ranks=20 ranks_per_node=2 DTYPE int32 MODES in-place)
stdlib_run(allreduce/hierarchical n4x8 DEFINES ranks=32 ranks_per_node=8 DTYPE int32 MODES in-place)
stdlib_run(allreduce/hierarchical n2x9 DEFINES ranks=18 ranks_per_node=9 DTYPE int32 MODES out-of-place)
stdlib_refuse(allreduce/hierarchical per-node10 "supports at most 9 ranks per node" DEFINES ranks=20 ranks_per_node=10)
stdlib_refuse(allreduce/hierarchical not-multiple "must be a multiple of ranks_per_node" DEFINES ranks=10 ranks_per_node=4)
stdlib_refuse(allreduce/hierarchical one-node "needs at least 2 nodes" DEFINES ranks=8 ranks_per_node=8)

# ---- allgather ----------------------------------------------------------------------------
stdlib_run(allgather/allpairs r2 DEFINES ranks=2)
stdlib_run(allgather/allpairs r3 DEFINES ranks=3 DTYPE int32)
stdlib_run(allgather/allpairs r12-ppt4 DEFINES ranks=12 peers_per_tb=4 DTYPE float16)
stdlib_run(allgather/allpairs r32 DEFINES ranks=32 DTYPE int32 MODES out-of-place)
stdlib_refuse(allgather/allpairs ranks1 "needs at least 2 ranks" DEFINES ranks=1)

stdlib_run(allgather/ring r2 DEFINES ranks=2)
stdlib_run(allgather/ring r5-c2 DEFINES ranks=5 chunks=2 DTYPE int32)
stdlib_run(allgather/ring r16 DEFINES ranks=16 DTYPE int32 MODES out-of-place)
stdlib_refuse(allgather/ring ranks1 "needs at least 2 ranks" DEFINES ranks=1)

stdlib_run(allgather/packet r2 DEFINES ranks=2)
stdlib_run(allgather/packet r7 DEFINES ranks=7 DTYPE int32)
stdlib_run(allgather/packet r11-ppt3 DEFINES ranks=11 peers_per_tb=3 MODES in-place)
stdlib_run(allgather/packet r32 DEFINES ranks=32 DTYPE int32 MODES out-of-place)
stdlib_refuse(allgather/packet ranks1 "needs at least 2 ranks" DEFINES ranks=1)

stdlib_run(allgather/hierarchical n2x2 DEFINES ranks=4 ranks_per_node=2)
stdlib_run(allgather/hierarchical n3x1 DEFINES ranks=3 ranks_per_node=1 DTYPE int32)
stdlib_run(allgather/hierarchical n3x3-c2 DEFINES ranks=9 ranks_per_node=3 chunks=2 DTYPE int32)
stdlib_run(allgather/hierarchical n10x2 DEFINES ranks=20 ranks_per_node=2 MODES out-of-place)
stdlib_run(allgather/hierarchical n4x8 DEFINES ranks=32 ranks_per_node=8 DTYPE int32 MODES in-place)
stdlib_refuse(allgather/hierarchical per-node10 "supports at most 9 ranks per node" DEFINES ranks=20 ranks_per_node=10)
stdlib_refuse(allgather/hierarchical one-node "needs at least 2 nodes" DEFINES ranks=4 ranks_per_node=4)

# ---- reducescatter ------------------------------------------------------------------------
stdlib_run(reducescatter/allpairs r2 DEFINES ranks=2)
stdlib_run(reducescatter/allpairs r5 DEFINES ranks=5 DTYPE int32)
stdlib_run(reducescatter/allpairs r12-ppt4 DEFINES ranks=12 peers_per_tb=4 DTYPE bfloat16)
stdlib_run(reducescatter/allpairs r32 DEFINES ranks=32 DTYPE int32 MODES out-of-place)
stdlib_refuse(reducescatter/allpairs ranks1 "needs at least 2 ranks" DEFINES ranks=1)

stdlib_run(reducescatter/ring r2 DEFINES ranks=2)
stdlib_run(reducescatter/ring r6-c2 DEFINES ranks=6 chunks=2 DTYPE int32)
stdlib_run(reducescatter/ring r16 DEFINES ranks=16 DTYPE int32 MODES in-place)
stdlib_run(reducescatter/ring r32 DEFINES ranks=32 DTYPE int32 MODES out-of-place)
stdlib_refuse(reducescatter/ring ranks1 "needs at least 2 ranks" DEFINES ranks=1)

stdlib_run(reducescatter/packet r2 DEFINES ranks=2)
stdlib_run(reducescatter/packet r7-i2 DEFINES ranks=7 instances=2 DTYPE int32)
stdlib_run(reducescatter/packet r10-ppt3 DEFINES ranks=10 peers_per_tb=3 DTYPE float16 MODES out-of-place)
stdlib_run(reducescatter/packet r32 DEFINES ranks=32 DTYPE int32 MODES in-place)
stdlib_refuse(reducescatter/packet ranks1 "needs at least 2 ranks" DEFINES ranks=1)

# ---- alltoall -----------------------------------------------------------------------------
stdlib_run(alltoall/allpairs r2 DEFINES ranks=2)
stdlib_run(alltoall/allpairs r5 DEFINES ranks=5 DTYPE int32)
stdlib_run(alltoall/allpairs r12-ppt5 DEFINES ranks=12 peers_per_tb=5 DTYPE int32)
stdlib_run(alltoall/allpairs r32 DEFINES ranks=32 DTYPE int32 MODES in-place)
stdlib_refuse(alltoall/allpairs ranks1 "needs at least 2 ranks" DEFINES ranks=1)

# ---- alltoallv (count matrices: see alltoallv_case.py) ----------------------------------
stdlib_run_v(alltoallv/allpairs r2 DEFINES ranks=2)
stdlib_run_v(alltoallv/allpairs r5-ppt2 DEFINES ranks=5 peers_per_tb=2 DTYPE int32)
stdlib_run_v(alltoallv/allpairs r16 DEFINES ranks=16 DTYPE float16)
stdlib_refuse(alltoallv/allpairs ranks1 "needs at least 2 ranks" DEFINES ranks=1)
stdlib_run_v(alltoallv/multinode n2x2 DEFINES ranks=4 ranks_per_node=2)
stdlib_run_v(alltoallv/multinode n3x2 DEFINES ranks=6 ranks_per_node=2 DTYPE int32)
stdlib_run_v(alltoallv/multinode n2x8 DEFINES ranks=16 ranks_per_node=8 DTYPE int32)

stdlib_run(alltoall/multinode n2x2 DEFINES ranks=4 ranks_per_node=2)
stdlib_run(alltoall/multinode n3x2-i2 DEFINES ranks=6 ranks_per_node=2 instances=2 DTYPE int32)
stdlib_run(alltoall/multinode n2x8 DEFINES ranks=16 ranks_per_node=8 DTYPE int32 MODES out-of-place)
stdlib_run(alltoall/multinode n11x1 DEFINES ranks=11 ranks_per_node=1 DTYPE int32 MODES in-place)
stdlib_run(alltoall/multinode n4x8 DEFINES ranks=32 ranks_per_node=8 DTYPE int32 MODES in-place)
stdlib_refuse(alltoall/multinode one-node "needs at least 2 nodes" DEFINES ranks=4 ranks_per_node=4)

# ---- sendrecv -----------------------------------------------------------------------------
stdlib_run(sendrecv/pairs r2-one-node DEFINES ranks=2 ranks_per_node=2 MODES out-of-place)
stdlib_run(sendrecv/pairs r2-two-nodes DEFINES ranks=2 ranks_per_node=1 MODES out-of-place DTYPE int32)
stdlib_run(sendrecv/pairs n2x2 DEFINES ranks=4 ranks_per_node=2 MODES out-of-place)
stdlib_run(sendrecv/pairs r5-one-node DEFINES ranks=5 ranks_per_node=5 MODES out-of-place DTYPE int32)
stdlib_run(sendrecv/pairs n3x1-c3 DEFINES ranks=3 ranks_per_node=1 chunks=3 MODES out-of-place)
stdlib_refuse(sendrecv/pairs inplace "SendRecv has no in-place form" DEFINES inplace=true)
stdlib_refuse(sendrecv/pairs ranks1 "needs at least 2 ranks" DEFINES ranks=1)
