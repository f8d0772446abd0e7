/* The C API as a C program uses it: compile (through a cache directory given as argv[1]),
 * register, select and explain, a C selector, execute on 4 thread ranks of a local
 * communicator, and the error codes and messages of bad calls. Exit 0 when every check holds. */
#define _POSIX_C_SOURCE 200809L
#include "msccl/msccl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdlib.h>

static int failures = 0;
#define CHECK(cond)                                                                                                    \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, msccl_last_error());    \
      ++failures;                                                                                                      \
    }                                                                                                                  \
  } while (0)

#define NRANKS 4
#define COUNT 2048

typedef struct {
  msccl_executor_t executor;
  msccl_plan_t plan;
  int rank;
  float *send, *recv;
  msccl_result_t result;
} rank_args;

static void *run_rank(void *p) {
  rank_args *a = (rank_args *)p;
  a->result = msccl_execute(a->executor, a->rank, a->send, a->recv, COUNT * sizeof(float), COUNT * sizeof(float),
                            MSCCL_FLOAT32, MSCCL_SUM, a->plan, NULL);
  return NULL;
}

/* AllToAllV: rank r sends (r + p) % 3 * 100 elements to rank p (some pairs send nothing). */
static uint64_t v_count(int r, int p) { return (uint64_t)((r + p) % 3) * 100; }
static uint64_t v_matrix[NRANKS * NRANKS];
static uint32_t v_send[NRANKS][NRANKS * 300], v_recv[NRANKS][NRANKS * 300];

typedef struct {
  msccl_executor_t executor;
  msccl_plan_t plan;
  int rank;
  msccl_result_t result;
} v_args;

static void *run_rank_v(void *p) {
  v_args *a = (v_args *)p;
  a->result = msccl_execute_v(a->executor, a->rank, v_send[a->rank], v_recv[a->rank], sizeof v_send[0],
                              sizeof v_recv[0], v_matrix, NRANKS * NRANKS, MSCCL_UINT32, a->plan, NULL);
  return NULL;
}

static int pick_last(const msccl_request_t *request, const msccl_plan_t *candidates, const char *const *names,
                     size_t n, void *user_data) {
  (void)candidates;
  (void)names;
  *(size_t *)user_data = n;
  return request->message_bytes > 1024 ? (int)n - 1 : -1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_test DIR (a fresh cache directory is made inside)\n");
    return 2;
  }
  char cache[4096];
  snprintf(cache, sizeof cache, "%s/c_api_cache_XXXXXX", argv[1]);
  if (!mkdtemp(cache)) {
    perror("mkdtemp");
    return 2;
  }
  msccl_compile_params_t params;
  CHECK(msccl_compile_params_create(&params) == MSCCL_OK);
  CHECK(msccl_compile_params_define(params, "ranks", "4") == MSCCL_OK);
  CHECK(msccl_compile_params_define(params, "inplace", "false") == MSCCL_OK);
  CHECK(msccl_compile_params_cache(params, cache, 1) == MSCCL_OK);

  msccl_plan_t ring = NULL, ring2 = NULL;
  int hit = -1;
  CHECK(msccl_compile("stdlib:allreduce/ring", params, &ring, &hit) == MSCCL_OK);
  CHECK(hit == 0);
  CHECK(msccl_compile("stdlib:allreduce/ring", params, &ring2, &hit) == MSCCL_OK);
  CHECK(hit == 1);
  CHECK(strcmp(msccl_plan_collective(ring), "allreduce") == 0);
  CHECK(msccl_plan_num_ranks(ring) == NRANKS);
  CHECK(strlen(msccl_version()) > 6);

  /* Registry: two registrations of the plan with different ranges. */
  msccl_registry_t reg;
  CHECK(msccl_registry_create(&reg) == MSCCL_OK);
  msccl_plan_info_t small = msccl_plan_info_default();
  small.name = "small";
  small.max_bytes = 64 * 1024;
  small.has_min_bytes = 1;
  small.min_bytes = 0;
  msccl_plan_info_t big = msccl_plan_info_default();
  const char *tags[] = {"big", "v1"};
  big.name = "big";
  big.tags = tags;
  big.num_tags = 2;
  CHECK(msccl_registry_add(reg, ring, &small) == MSCCL_OK);
  CHECK(msccl_registry_add(reg, ring2, &big) == MSCCL_OK);
  CHECK(msccl_registry_add(reg, ring2, &big) == MSCCL_INVALID_ARGUMENT); /* the name is taken */
  CHECK(strstr(msccl_last_error(), "already registered") != NULL);
  CHECK(msccl_registry_size(reg) == 2);

  msccl_request_t req;
  memset(&req, 0, sizeof req);
  req.collective = "allreduce";
  req.world_size = NRANKS;
  req.message_bytes = COUNT * sizeof(float);
  msccl_plan_t chosen = NULL;
  char *name = NULL;
  CHECK(msccl_registry_select(reg, &req, &chosen, &name) == MSCCL_OK);
  CHECK(name && strcmp(name, "small") == 0);
  msccl_free_string(name);
  req.message_bytes = 1 << 20;
  msccl_plan_t chosen2 = NULL;
  CHECK(msccl_registry_select(reg, &req, &chosen2, &name) == MSCCL_OK);
  CHECK(name && strcmp(name, "big") == 0);
  msccl_free_string(name);
  msccl_plan_release(chosen2);
  char *text = NULL;
  CHECK(msccl_registry_explain(reg, &req, &text) == MSCCL_OK);
  CHECK(text && strstr(text, "small [allreduce, 4 ranks, 0B..64KiB") && strstr(text, "is outside its range"));
  msccl_free_string(text);
  req.world_size = 8;
  msccl_plan_t none = NULL;
  CHECK(msccl_registry_select(reg, &req, &none, NULL) == MSCCL_NO_PLAN);
  CHECK(none == NULL);
  CHECK(strstr(msccl_last_error(), "world size is 4, not 8") != NULL);
  req.world_size = NRANKS;

  /* A C selector. */
  size_t seen = 0;
  CHECK(msccl_registry_set_selector(reg, pick_last, &seen) == MSCCL_OK);
  req.message_bytes = 4096;
  CHECK(msccl_registry_select(reg, &req, &chosen2, &name) == MSCCL_OK);
  CHECK(seen == 2 && name && strcmp(name, "big") == 0);
  msccl_free_string(name);
  msccl_plan_release(chosen2);
  req.message_bytes = 1024;
  CHECK(msccl_registry_select(reg, &req, &chosen2, NULL) == MSCCL_NO_PLAN);
  CHECK(msccl_registry_set_selector(reg, NULL, NULL) == MSCCL_OK);

  /* Execute the chosen plan on 4 thread ranks. */
  msccl_comm_t comm;
  CHECK(msccl_comm_create_local(NRANKS, 0, (msccl_backend_t)7, &comm) == MSCCL_INVALID_ARGUMENT);
  CHECK(strstr(msccl_last_error(), "backend") != NULL);
  CHECK(msccl_comm_create_local(NRANKS, 0, MSCCL_BACKEND_CPU, &comm) == MSCCL_OK);
  CHECK(msccl_comm_world_size(comm) == NRANKS && msccl_comm_ranks_per_node(comm) == NRANKS);
  CHECK(msccl_comm_rank(comm) == -1);
  msccl_executor_t executor;
  CHECK(msccl_executor_create(comm, &executor) == MSCCL_OK);
  static float send[NRANKS][COUNT], recv[NRANKS][COUNT];
  rank_args args[NRANKS];
  pthread_t threads[NRANKS];
  for (int r = 0; r < NRANKS; ++r) {
    for (int i = 0; i < COUNT; ++i)
      send[r][i] = (float)(r * 10 + i % 7);
    args[r].executor = executor;
    args[r].plan = chosen;
    args[r].rank = r;
    args[r].send = send[r];
    args[r].recv = recv[r];
    pthread_create(&threads[r], NULL, run_rank, &args[r]);
  }
  for (int r = 0; r < NRANKS; ++r)
    pthread_join(threads[r], NULL);
  for (int r = 0; r < NRANKS; ++r)
    CHECK(args[r].result == MSCCL_OK);
  int wrong = 0;
  for (int r = 0; r < NRANKS; ++r)
    for (int i = 0; i < COUNT; ++i)
      wrong += recv[r][i] != (float)(60 + 4 * (i % 7));
  CHECK(wrong == 0);

  /* AllToAllV: msccl_execute_v with the full count matrix on 4 thread ranks. */
  {
    msccl_compile_params_t vp;
    CHECK(msccl_compile_params_create(&vp) == MSCCL_OK);
    CHECK(msccl_compile_params_define(vp, "ranks", "4") == MSCCL_OK);
    CHECK(msccl_compile_params_cache(vp, cache, 1) == MSCCL_OK);
    msccl_plan_t v = NULL;
    CHECK(msccl_compile("stdlib:alltoallv/allpairs", vp, &v, NULL) == MSCCL_OK);
    for (int r = 0; r < NRANKS; ++r) {
      uint64_t off = 0;
      for (int p = 0; p < NRANKS; ++p) {
        v_matrix[r * NRANKS + p] = v_count(r, p);
        for (uint64_t i = 0; i < v_count(r, p); ++i)
          v_send[r][off + i] = (uint32_t)(r * 100000 + p * 1000 + i);
        off += v_count(r, p);
      }
    }
    v_args va[NRANKS];
    for (int r = 0; r < NRANKS; ++r) {
      va[r].executor = executor;
      va[r].plan = v;
      va[r].rank = r;
      pthread_create(&threads[r], NULL, run_rank_v, &va[r]);
    }
    for (int r = 0; r < NRANKS; ++r)
      pthread_join(threads[r], NULL);
    for (int r = 0; r < NRANKS; ++r)
      CHECK(va[r].result == MSCCL_OK);
    int vwrong = 0;
    for (int q = 0; q < NRANKS; ++q) {
      uint64_t off = 0;
      for (int p = 0; p < NRANKS; ++p) {
        for (uint64_t i = 0; i < v_count(p, q); ++i)
          vwrong += v_recv[q][off + i] != (uint32_t)(p * 100000 + q * 1000 + i);
        off += v_count(p, q);
      }
    }
    CHECK(vwrong == 0);
    /* A fixed-size plan given counts; a matrix of the wrong shape. */
    CHECK(msccl_execute_v(executor, 0, v_send[0], v_recv[0], 64, 64, v_matrix, NRANKS * NRANKS, MSCCL_UINT32,
                          chosen, NULL) == MSCCL_INVALID_ARGUMENT);
    CHECK(strstr(msccl_last_error(), "fixed sizes") != NULL);
    CHECK(msccl_execute(executor, 0, v_send[0], v_recv[0], 64, 64, MSCCL_UINT32, MSCCL_SUM, v, NULL) ==
          MSCCL_INVALID_ARGUMENT);
    CHECK(strstr(msccl_last_error(), "executeV") != NULL);
    CHECK(msccl_execute_v(executor, 0, v_send[0], v_recv[0], 64, 64, NULL, 16, MSCCL_UINT32, v, NULL) ==
          MSCCL_INVALID_ARGUMENT);
    msccl_plan_release(v);
    msccl_compile_params_destroy(vp);
  }

  /* Bad calls. */
  CHECK(msccl_execute(executor, 9, send[0], recv[0], 16, 16, MSCCL_FLOAT32, MSCCL_SUM, chosen, NULL) ==
        MSCCL_INVALID_ARGUMENT);
  CHECK(strstr(msccl_last_error(), "rank 9") != NULL);
  CHECK(msccl_execute(executor, 0, send[0], recv[0], 16, 16, (msccl_datatype_t)42, MSCCL_SUM, chosen, NULL) ==
        MSCCL_INVALID_ARGUMENT);
  msccl_plan_t missing = NULL;
  CHECK(msccl_compile("/nonexistent/x.msccl", params, &missing, NULL) == MSCCL_SYSTEM_ERROR);
  CHECK(strstr(msccl_last_error(), "/nonexistent/x.msccl") != NULL);
  CHECK(msccl_compile_source("program p(collective = AllReduce(2, 1, false)) { let = }", params, &missing, NULL) ==
        MSCCL_COMPILE_ERROR);
  CHECK(msccl_plan_load("/nonexistent.json", &missing) == MSCCL_SYSTEM_ERROR);
  CHECK(msccl_registry_create(NULL) == MSCCL_INVALID_ARGUMENT);
  CHECK(strcmp(msccl_result_string(MSCCL_NO_PLAN), "no plan") == 0);

  msccl_executor_destroy(executor);
  msccl_comm_destroy(comm);
  msccl_plan_release(chosen);
  msccl_registry_destroy(reg);
  msccl_plan_release(ring);
  msccl_plan_release(ring2);
  msccl_compile_params_destroy(params);
  msccl_plan_release(NULL);
  char rm[4200];
  snprintf(rm, sizeof rm, "rm -rf '%s'", cache);
  if (system(rm) != 0)
    fprintf(stderr, "note: could not remove %s\n", cache);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("c api: all checks passed\n");
  return 0;
}
