/*===- msccl.h - The C API of libmsccl (compile, register and select, execute) -----------===
 *
 * Plain C (C99) over the C++ API of msccl/msccl.hpp, for other languages to bind: opaque
 * handles, every function returns an msccl_result_t (MSCCL_OK = 0) and on failure leaves a
 * message in msccl_last_error() (thread-local; valid until the next failing call on this thread).
 * Sizes are in bytes; a message size is the nccl-tests size S (msccl.hpp's file comment).
 * Every handle made by a *_create/compile/load function is released by its *_destroy/release
 * function; releasing NULL is a no-op. Strings returned through `char **` are malloc'ed and
 * released with msccl_free_string().
 *
 *===------------------------------------------------------------------------------------===*/
#ifndef MSCCL_MSCCL_H
#define MSCCL_MSCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Same values as msccl::ErrorCode. */
typedef enum {
  MSCCL_OK = 0,
  MSCCL_INVALID_ARGUMENT = 1,
  MSCCL_COMPILE_ERROR = 2,
  MSCCL_NO_PLAN = 3,
  MSCCL_INVALID_PLAN = 4,
  MSCCL_INVALID_SIZE = 5,
  MSCCL_DEADLOCK = 6,
  MSCCL_MISUSE = 7,
  MSCCL_UNSUPPORTED = 8,
  MSCCL_BACKEND_ERROR = 9,
  MSCCL_SYSTEM_ERROR = 10,
  MSCCL_INTERNAL_ERROR = 11
} msccl_result_t;

/* Same order as plan::DataType / plan::ReduceOp (msccl/plan/PlanEnums.def). Each enum that a
   caller passes in ends with a *_MAX_ENUM member (as Vulkan's do) so that any int value is a
   valid value of the type: out-of-range values are refused by the call (MSCCL_INVALID_ARGUMENT)
   instead of being undefined behaviour in the C++ that receives them. */
typedef enum {
  MSCCL_FLOAT16 = 0,
  MSCCL_BFLOAT16 = 1,
  MSCCL_FLOAT32 = 2,
  MSCCL_INT32 = 3,
  MSCCL_UINT32 = 4,
  MSCCL_UINT8 = 5,
  MSCCL_DATATYPE_MAX_ENUM = 0x7fffffff
} msccl_datatype_t;
typedef enum { MSCCL_SUM = 0, MSCCL_MIN = 1, MSCCL_MAX = 2, MSCCL_REDOP_MAX_ENUM = 0x7fffffff } msccl_redop_t;
typedef enum { MSCCL_BACKEND_CPU = 0, MSCCL_BACKEND_CUDA = 1, MSCCL_BACKEND_MAX_ENUM = 0x7fffffff } msccl_backend_t;
/* In-place support of a registered plan; MSCCL_INPLACE_FROM_PLAN = the plan's `inplace`. */
typedef enum {
  MSCCL_INPLACE_FROM_PLAN = -1,
  MSCCL_OUT_OF_PLACE = 0,
  MSCCL_IN_PLACE = 1,
  MSCCL_INPLACE_BOTH = 2,
  MSCCL_INPLACE_MAX_ENUM = 0x7fffffff
} msccl_inplace_t;

typedef struct msccl_plan *msccl_plan_t;                   /* a plan (shared, immutable) */
typedef struct msccl_compile_params *msccl_compile_params_t;
typedef struct msccl_registry *msccl_registry_t;
typedef struct msccl_comm *msccl_comm_t;
typedef struct msccl_executor *msccl_executor_t;

typedef struct {
  char internal[128];
} msccl_unique_id_t;

/* The message of the last failing call on this thread ("" when none). */
const char *msccl_last_error(void);
/* "invalid argument", ... */
const char *msccl_result_string(msccl_result_t result);
void msccl_free_string(char *s);
/* compilerVersion(): what keys the compile cache. */
const char *msccl_version(void);

/* --- compile -------------------------------------------------------------------------- */
msccl_result_t msccl_compile_params_create(msccl_compile_params_t *params);
void msccl_compile_params_destroy(msccl_compile_params_t params);
/* -D name=value */
msccl_result_t msccl_compile_params_define(msccl_compile_params_t params, const char *name, const char *value);
/* --option name=value */
msccl_result_t msccl_compile_params_option(msccl_compile_params_t params, const char *name, const char *value);
/* -I dir */
msccl_result_t msccl_compile_params_include(msccl_compile_params_t params, const char *dir);
/* cache directory (NULL or "" = the default), use_cache 0/1 */
msccl_result_t msccl_compile_params_cache(msccl_compile_params_t params, const char *dir, int use_cache);

/* Compile a file or `stdlib:NAME` (params may be NULL). *cache_hit (may be NULL) = 1 when the
 * plan came from the cache. */
msccl_result_t msccl_compile(const char *input, msccl_compile_params_t params, msccl_plan_t *plan, int *cache_hit);
/* Compile program text. */
msccl_result_t msccl_compile_source(const char *source, msccl_compile_params_t params, msccl_plan_t *plan,
                                    int *cache_hit);
/* Read a plan file (MSCCL++ JSON). */
msccl_result_t msccl_plan_load(const char *path, msccl_plan_t *plan);
void msccl_plan_release(msccl_plan_t plan);
/* The plan's name ("" when it has none), collective and rank count (pointers valid while the
 * plan lives). */
const char *msccl_plan_name(msccl_plan_t plan);
const char *msccl_plan_collective(msccl_plan_t plan);
uint32_t msccl_plan_num_ranks(msccl_plan_t plan);

/* --- registry ------------------------------------------------------------------------- */
/* Registration info; zero/NULL fields default to the plan's (PlanInfo in msccl.hpp).
 * max_bytes 0 = the plan's maximum. */
typedef struct {
  const char *name;
  const char *collective;
  uint32_t world_size;
  uint32_t ranks_per_node;
  uint64_t min_bytes;
  uint64_t max_bytes;
  int has_min_bytes; /* min_bytes is used only when this is 1 (0 is a valid minimum) */
  msccl_inplace_t in_place;
  const char *const *tags;
  size_t num_tags;
} msccl_plan_info_t;
/* Info with every field at its default (in_place = MSCCL_INPLACE_FROM_PLAN). */
msccl_plan_info_t msccl_plan_info_default(void);

typedef struct {
  const char *collective;
  uint32_t world_size;
  uint32_t ranks_per_node; /* 0 = world_size */
  uint64_t message_bytes;
  int in_place;
  const char *const *required_tags;
  size_t num_required_tags;
  const char *const *preferred_tags;
  size_t num_preferred_tags;
} msccl_request_t;

msccl_result_t msccl_registry_create(msccl_registry_t *registry);
void msccl_registry_destroy(msccl_registry_t registry);
/* info may be NULL. The registry keeps its own reference to the plan. */
msccl_result_t msccl_registry_add(msccl_registry_t registry, msccl_plan_t plan, const msccl_plan_info_t *info);
/* A .json plan or a .msccl program (params may be NULL). */
msccl_result_t msccl_registry_add_file(msccl_registry_t registry, const char *path, const msccl_plan_info_t *info,
                                       msccl_compile_params_t params);
/* Every .json/.msccl file of dir; *added (may be NULL) = how many. */
msccl_result_t msccl_registry_add_directory(msccl_registry_t registry, const char *dir,
                                            msccl_compile_params_t params, size_t *added);
size_t msccl_registry_size(msccl_registry_t registry);
/* A selector: return the index (into candidates, 0..num_candidates-1) of the plan to use, or
 * -1 for none. `names` are the candidates' registered names. */
typedef int (*msccl_selector_fn)(const msccl_request_t *request, const msccl_plan_t *candidates,
                                 const char *const *names, size_t num_candidates, void *user_data);
/* NULL selector: back to the default rule. */
msccl_result_t msccl_registry_set_selector(msccl_registry_t registry, msccl_selector_fn selector, void *user_data);
/* *plan = the chosen plan (a new reference: release it) or MSCCL_NO_PLAN with the explanation
 * in msccl_last_error(). *name (may be NULL) = its registered name (malloc'ed). */
msccl_result_t msccl_registry_select(msccl_registry_t registry, const msccl_request_t *request, msccl_plan_t *plan,
                                     char **name);
/* explainText() (malloc'ed). */
msccl_result_t msccl_registry_explain(msccl_registry_t registry, const msccl_request_t *request, char **text);

/* --- communicator and executor -------------------------------------------------------- */
msccl_result_t msccl_comm_create_local(uint32_t world_size, uint32_t ranks_per_node, msccl_backend_t backend,
                                       msccl_comm_t *comm);
/* argc/argv may be NULL. */
msccl_result_t msccl_comm_create_mpi(int *argc, char ***argv, msccl_comm_t *comm);
msccl_result_t msccl_get_unique_id(msccl_unique_id_t *id);
msccl_result_t msccl_comm_init_rank(const msccl_unique_id_t *id, uint32_t world_size, uint32_t rank,
                                    msccl_backend_t backend, msccl_comm_t *comm);
void msccl_comm_destroy(msccl_comm_t comm);
uint32_t msccl_comm_world_size(msccl_comm_t comm);
uint32_t msccl_comm_ranks_per_node(msccl_comm_t comm);
/* -1 for a local communicator. */
int msccl_comm_rank(msccl_comm_t comm);

msccl_result_t msccl_executor_create(msccl_comm_t comm, msccl_executor_t *executor);
void msccl_executor_destroy(msccl_executor_t executor);
/* Executor::execute (msccl.hpp): stream is a cudaStream_t for the CUDA backend, ignored on CPU. */
msccl_result_t msccl_execute(msccl_executor_t executor, int rank, const void *send, void *recv, size_t send_bytes,
                             size_t recv_bytes, msccl_datatype_t dtype, msccl_redop_t redop, msccl_plan_t plan,
                             void *stream);
/* Executor::executeV (msccl.hpp): AllToAllV with a plan that has variable_sizes. counts is the full
   n x n matrix, row-major, num_counts = n*n, in elements of dtype (counts[r*n+p] = elements rank r
   sends rank p; every rank passes the same matrix). send holds row `rank` back to back, recv gets
   column `rank`; send_bytes/recv_bytes are the buffers' capacities. MSCCL_INVALID_ARGUMENT for
   a fixed-size plan, a matrix that is not n x n, or buffers smaller than the row/column sums. */
msccl_result_t msccl_execute_v(msccl_executor_t executor, int rank, const void *send, void *recv, size_t send_bytes,
                               size_t recv_bytes, const uint64_t *counts, size_t num_counts, msccl_datatype_t dtype,
                               msccl_plan_t plan, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* MSCCL_MSCCL_H */
