//===- CApi.cpp - msccl/msccl.h over msccl/msccl.hpp --------------------------------------===//
//
// Every entry point catches every exception and turns it into an msccl_result_t plus the
// thread-local last-error message; no C++ exception crosses the C boundary.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/msccl.h"

#include "Internal.h"

#include <cstdlib>
#include <cstring>

using namespace msccl;

struct msccl_plan {
  PlanPtr plan;
  std::string name;
};
struct msccl_compile_params {
  CompileParams params;
};
struct msccl_registry {
  PlanRegistry registry;
};
struct msccl_comm {
  std::shared_ptr<Communicator> comm;
};
struct msccl_executor {
  std::unique_ptr<Executor> executor;
};

static_assert(int(plan::DataType::Float16) == MSCCL_FLOAT16 && int(plan::DataType::UInt8) == MSCCL_UINT8,
              "msccl_datatype_t follows PlanEnums.def");
static_assert(int(plan::ReduceOp::Sum) == MSCCL_SUM && int(plan::ReduceOp::Max) == MSCCL_MAX,
              "msccl_redop_t follows PlanEnums.def");

namespace {

thread_local std::string gLastError;

msccl_result_t fail(ErrorCode code, const std::string &message) {
  gLastError = message;
  return msccl_result_t(int(code));
}

/// Runs `f`; any exception becomes the result and the last error.
template <class F> msccl_result_t guard(const char *fn, F &&f) {
  try {
    f();
    return MSCCL_OK;
  } catch (...) {
    std::string message;
    ErrorCode code = detail::currentError(message);
    return fail(code, std::string(fn) + ": " + message);
  }
}

#define MSCCL_REQUIRE(cond, fn, what)                                                                                 \
  do {                                                                                                                 \
    if (!(cond))                                                                                                       \
      return fail(ErrorCode::InvalidArgument, std::string(fn) + ": " + (what));                                        \
  } while (0)

msccl_plan_t wrap(PlanPtr p) {
  auto *h = new msccl_plan;
  h->name = p->name ? *p->name : "";
  h->plan = std::move(p);
  return h;
}

char *dupString(const std::string &s) {
  char *c = static_cast<char *>(std::malloc(s.size() + 1));
  if (c)
    std::memcpy(c, s.c_str(), s.size() + 1);
  return c;
}

std::vector<std::string> strings(const char *const *v, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i)
    if (v && v[i])
      out.emplace_back(v[i]);
  return out;
}

SelectRequest toRequest(const msccl_request_t *r) {
  SelectRequest q;
  q.collective = r->collective ? r->collective : "";
  q.worldSize = r->world_size;
  q.ranksPerNode = r->ranks_per_node;
  q.messageBytes = r->message_bytes;
  q.inPlace = r->in_place != 0;
  q.requiredTags = strings(r->required_tags, r->num_required_tags);
  q.preferredTags = strings(r->preferred_tags, r->num_preferred_tags);
  return q;
}

PlanInfo toInfo(const msccl_plan_info_t *i) {
  PlanInfo info;
  if (!i)
    return info;
  info.name = i->name ? i->name : "";
  info.collective = i->collective ? i->collective : "";
  info.worldSize = i->world_size;
  info.ranksPerNode = i->ranks_per_node;
  if (i->has_min_bytes)
    info.minBytes = i->min_bytes;
  if (i->max_bytes)
    info.maxBytes = i->max_bytes;
  if (i->in_place != MSCCL_INPLACE_FROM_PLAN) {
    if (i->in_place < MSCCL_OUT_OF_PLACE || i->in_place > MSCCL_INPLACE_BOTH)
      throw Error(ErrorCode::InvalidArgument, "in_place is not an msccl_inplace_t value");
    info.inPlace = InPlace(int(i->in_place));
  }
  info.tags = strings(i->tags, i->num_tags);
  return info;
}

const CompileParams &paramsOf(msccl_compile_params_t p) {
  static const CompileParams defaults;
  return p ? p->params : defaults;
}

} // namespace

extern "C" {

const char *msccl_last_error(void) { return gLastError.c_str(); }

const char *msccl_result_string(msccl_result_t result) { return errorCodeName(ErrorCode(int(result))); }

void msccl_free_string(char *s) { std::free(s); }

const char *msccl_version(void) {
  static const std::string v = compilerVersion();
  return v.c_str();
}

msccl_result_t msccl_compile_params_create(msccl_compile_params_t *params) {
  MSCCL_REQUIRE(params, "msccl_compile_params_create", "params is NULL");
  return guard("msccl_compile_params_create", [&] { *params = new msccl_compile_params; });
}
void msccl_compile_params_destroy(msccl_compile_params_t params) { delete params; }

msccl_result_t msccl_compile_params_define(msccl_compile_params_t params, const char *name, const char *value) {
  MSCCL_REQUIRE(params && name && value, "msccl_compile_params_define", "a NULL argument");
  MSCCL_REQUIRE(*name, "msccl_compile_params_define", "empty name");
  params->params.defines.emplace_back(name, value);
  return MSCCL_OK;
}
msccl_result_t msccl_compile_params_option(msccl_compile_params_t params, const char *name, const char *value) {
  MSCCL_REQUIRE(params && name && value, "msccl_compile_params_option", "a NULL argument");
  MSCCL_REQUIRE(*name, "msccl_compile_params_option", "empty name");
  params->params.options.emplace_back(name, value);
  return MSCCL_OK;
}
msccl_result_t msccl_compile_params_include(msccl_compile_params_t params, const char *dir) {
  MSCCL_REQUIRE(params && dir, "msccl_compile_params_include", "a NULL argument");
  params->params.includeDirs.emplace_back(dir);
  return MSCCL_OK;
}
msccl_result_t msccl_compile_params_cache(msccl_compile_params_t params, const char *dir, int use_cache) {
  MSCCL_REQUIRE(params, "msccl_compile_params_cache", "params is NULL");
  params->params.cacheDir = dir ? dir : "";
  params->params.useCache = use_cache != 0;
  return MSCCL_OK;
}

msccl_result_t msccl_compile(const char *input, msccl_compile_params_t params, msccl_plan_t *plan, int *cache_hit) {
  MSCCL_REQUIRE(input && plan, "msccl_compile", "input or plan is NULL");
  return guard("msccl_compile", [&] {
    CompileInfo info;
    *plan = wrap(compile(input, paramsOf(params), &info));
    if (cache_hit)
      *cache_hit = info.cacheHit;
  });
}

msccl_result_t msccl_compile_source(const char *source, msccl_compile_params_t params, msccl_plan_t *plan,
                                    int *cache_hit) {
  MSCCL_REQUIRE(source && plan, "msccl_compile_source", "source or plan is NULL");
  return guard("msccl_compile_source", [&] {
    CompileInfo info;
    *plan = wrap(compileSource(source, paramsOf(params), "<source>", &info));
    if (cache_hit)
      *cache_hit = info.cacheHit;
  });
}

msccl_result_t msccl_plan_load(const char *path, msccl_plan_t *plan) {
  MSCCL_REQUIRE(path && plan, "msccl_plan_load", "path or plan is NULL");
  return guard("msccl_plan_load", [&] { *plan = wrap(loadPlan(path)); });
}
void msccl_plan_release(msccl_plan_t plan) { delete plan; }
const char *msccl_plan_name(msccl_plan_t plan) { return plan ? plan->name.c_str() : ""; }
const char *msccl_plan_collective(msccl_plan_t plan) { return plan ? plan->plan->collective.c_str() : ""; }
uint32_t msccl_plan_num_ranks(msccl_plan_t plan) { return plan ? uint32_t(plan->plan->gpus.size()) : 0; }

msccl_plan_info_t msccl_plan_info_default(void) {
  msccl_plan_info_t i;
  std::memset(&i, 0, sizeof i);
  i.in_place = MSCCL_INPLACE_FROM_PLAN;
  return i;
}

msccl_result_t msccl_registry_create(msccl_registry_t *registry) {
  MSCCL_REQUIRE(registry, "msccl_registry_create", "registry is NULL");
  return guard("msccl_registry_create", [&] { *registry = new msccl_registry; });
}
void msccl_registry_destroy(msccl_registry_t registry) { delete registry; }

msccl_result_t msccl_registry_add(msccl_registry_t registry, msccl_plan_t plan, const msccl_plan_info_t *info) {
  MSCCL_REQUIRE(registry && plan, "msccl_registry_add", "registry or plan is NULL");
  return guard("msccl_registry_add", [&] { registry->registry.add(plan->plan, toInfo(info)); });
}
msccl_result_t msccl_registry_add_file(msccl_registry_t registry, const char *path, const msccl_plan_info_t *info,
                                       msccl_compile_params_t params) {
  MSCCL_REQUIRE(registry && path, "msccl_registry_add_file", "registry or path is NULL");
  return guard("msccl_registry_add_file",
               [&] { registry->registry.addFile(path, toInfo(info), paramsOf(params)); });
}
msccl_result_t msccl_registry_add_directory(msccl_registry_t registry, const char *dir, msccl_compile_params_t params,
                                            size_t *added) {
  MSCCL_REQUIRE(registry && dir, "msccl_registry_add_directory", "registry or dir is NULL");
  return guard("msccl_registry_add_directory", [&] {
    size_t n = registry->registry.addDirectory(dir, paramsOf(params));
    if (added)
      *added = n;
  });
}
size_t msccl_registry_size(msccl_registry_t registry) { return registry ? registry->registry.plans().size() : 0; }

msccl_result_t msccl_registry_set_selector(msccl_registry_t registry, msccl_selector_fn selector, void *user_data) {
  MSCCL_REQUIRE(registry, "msccl_registry_set_selector", "registry is NULL");
  if (!selector) {
    registry->registry.setSelector({});
    return MSCCL_OK;
  }
  registry->registry.setSelector(
      [selector, user_data](const SelectRequest &r,
                            const std::vector<const RegisteredPlan *> &candidates) -> const RegisteredPlan * {
        std::vector<const char *> req, pref;
        for (auto &t : r.requiredTags)
          req.push_back(t.c_str());
        for (auto &t : r.preferredTags)
          pref.push_back(t.c_str());
        msccl_request_t cr{r.collective.c_str(), r.worldSize, r.ranksPerNode, r.messageBytes, r.inPlace ? 1 : 0,
                           req.data(), req.size(), pref.data(), pref.size()};
        std::vector<msccl_plan> handles(candidates.size());
        std::vector<msccl_plan_t> ptrs;
        std::vector<const char *> names;
        for (size_t i = 0; i < candidates.size(); ++i) {
          handles[i].plan = candidates[i]->plan;
          handles[i].name = candidates[i]->info.name;
          ptrs.push_back(&handles[i]);
          names.push_back(candidates[i]->info.name.c_str());
        }
        int k = selector(&cr, ptrs.data(), names.data(), candidates.size(), user_data);
        if (k < 0)
          return nullptr;
        if (size_t(k) >= candidates.size())
          throw Error(ErrorCode::InvalidArgument, "the selector returned index " + std::to_string(k) + " of " +
                                                      std::to_string(candidates.size()) + " candidates");
        return candidates[size_t(k)];
      });
  return MSCCL_OK;
}

msccl_result_t msccl_registry_select(msccl_registry_t registry, const msccl_request_t *request, msccl_plan_t *plan,
                                     char **name) {
  MSCCL_REQUIRE(registry && request && plan, "msccl_registry_select", "a NULL argument");
  *plan = nullptr;
  return guard("msccl_registry_select", [&] {
    SelectRequest r = toRequest(request);
    const RegisteredPlan *p = registry->registry.select(r);
    if (!p)
      throw Error(ErrorCode::NoPlan, "no registered plan fits the call:\n" + registry->registry.explainText(r));
    auto *h = new msccl_plan;
    h->plan = p->plan;
    h->name = p->info.name;
    *plan = h;
    if (name)
      *name = dupString(p->info.name);
  });
}

msccl_result_t msccl_registry_explain(msccl_registry_t registry, const msccl_request_t *request, char **text) {
  MSCCL_REQUIRE(registry && request && text, "msccl_registry_explain", "a NULL argument");
  return guard("msccl_registry_explain",
               [&] { *text = dupString(registry->registry.explainText(toRequest(request))); });
}

msccl_result_t msccl_comm_create_local(uint32_t world_size, uint32_t ranks_per_node, msccl_backend_t backend,
                                       msccl_comm_t *comm) {
  MSCCL_REQUIRE(comm, "msccl_comm_create_local", "comm is NULL");
  MSCCL_REQUIRE(backend == MSCCL_BACKEND_CPU || backend == MSCCL_BACKEND_CUDA, "msccl_comm_create_local",
                "backend is not an msccl_backend_t value");
  return guard("msccl_comm_create_local", [&] {
    auto c = Communicator::local(world_size, ranks_per_node, backend == MSCCL_BACKEND_CUDA ? Backend::Cuda : Backend::Cpu);
    *comm = new msccl_comm{std::move(c)};
  });
}
msccl_result_t msccl_comm_create_mpi(int *argc, char ***argv, msccl_comm_t *comm) {
  MSCCL_REQUIRE(comm, "msccl_comm_create_mpi", "comm is NULL");
  return guard("msccl_comm_create_mpi", [&] { *comm = new msccl_comm{Communicator::mpi(argc, argv)}; });
}
msccl_result_t msccl_get_unique_id(msccl_unique_id_t *id) {
  MSCCL_REQUIRE(id, "msccl_get_unique_id", "id is NULL");
  return guard("msccl_get_unique_id", [&] {
    UniqueId u = Communicator::getUniqueId();
    static_assert(sizeof u.internal == sizeof id->internal, "unique id sizes");
    std::memcpy(id->internal, u.internal, sizeof u.internal);
  });
}
msccl_result_t msccl_comm_init_rank(const msccl_unique_id_t *id, uint32_t world_size, uint32_t rank,
                                    msccl_backend_t backend, msccl_comm_t *comm) {
  MSCCL_REQUIRE(id && comm, "msccl_comm_init_rank", "id or comm is NULL");
  MSCCL_REQUIRE(backend == MSCCL_BACKEND_CPU || backend == MSCCL_BACKEND_CUDA, "msccl_comm_init_rank",
                "backend is not an msccl_backend_t value");
  return guard("msccl_comm_init_rank", [&] {
    UniqueId u;
    std::memcpy(u.internal, id->internal, sizeof u.internal);
    *comm = new msccl_comm{Communicator::initRank(u, world_size, rank,
                                                  backend == MSCCL_BACKEND_CUDA ? Backend::Cuda : Backend::Cpu)};
  });
}
void msccl_comm_destroy(msccl_comm_t comm) { delete comm; }
uint32_t msccl_comm_world_size(msccl_comm_t comm) { return comm ? comm->comm->worldSize() : 0; }
uint32_t msccl_comm_ranks_per_node(msccl_comm_t comm) { return comm ? comm->comm->ranksPerNode() : 0; }
int msccl_comm_rank(msccl_comm_t comm) { return comm ? comm->comm->rank() : -1; }

msccl_result_t msccl_executor_create(msccl_comm_t comm, msccl_executor_t *executor) {
  MSCCL_REQUIRE(comm && executor, "msccl_executor_create", "comm or executor is NULL");
  return guard("msccl_executor_create",
               [&] { *executor = new msccl_executor{std::make_unique<Executor>(comm->comm)}; });
}
void msccl_executor_destroy(msccl_executor_t executor) { delete executor; }

msccl_result_t msccl_execute(msccl_executor_t executor, int rank, const void *send, void *recv, size_t send_bytes,
                             size_t recv_bytes, msccl_datatype_t dtype, msccl_redop_t redop, msccl_plan_t plan,
                             void *stream) {
  MSCCL_REQUIRE(executor && plan, "msccl_execute", "executor or plan is NULL");
  MSCCL_REQUIRE(int(dtype) >= MSCCL_FLOAT16 && int(dtype) <= MSCCL_UINT8, "msccl_execute",
                "dtype is not an msccl_datatype_t value");
  MSCCL_REQUIRE(int(redop) >= MSCCL_SUM && int(redop) <= MSCCL_MAX, "msccl_execute",
                "redop is not an msccl_redop_t value");
  return guard("msccl_execute", [&] {
    executor->executor->execute(rank, send, recv, send_bytes, recv_bytes, plan::DataType(int(dtype)),
                                plan::ReduceOp(int(redop)), plan->plan, stream);
  });
}

msccl_result_t msccl_execute_v(msccl_executor_t executor, int rank, const void *send, void *recv, size_t send_bytes,
                               size_t recv_bytes, const uint64_t *counts, size_t num_counts, msccl_datatype_t dtype,
                               msccl_plan_t plan, void *stream) {
  MSCCL_REQUIRE(executor && plan, "msccl_execute_v", "executor or plan is NULL");
  MSCCL_REQUIRE(counts || num_counts == 0, "msccl_execute_v", "counts is NULL");
  MSCCL_REQUIRE(int(dtype) >= MSCCL_FLOAT16 && int(dtype) <= MSCCL_UINT8, "msccl_execute_v",
                "dtype is not an msccl_datatype_t value");
  return guard("msccl_execute_v", [&] {
    std::vector<uint64_t> m(counts, counts + num_counts);
    executor->executor->executeV(rank, send, recv, send_bytes, recv_bytes, m, plan::DataType(int(dtype)), plan->plan,
                                 stream);
  });
}

} // extern "C"
