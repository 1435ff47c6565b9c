// Model registry: one line per model, with its traits (the MPI thread level it needs
// once it runs more than one thread, which threads compute, how it is simulated at scale).
#include "hybridfd/model.hpp"

#include <mpi.h>

#include "registry.hpp"

namespace hybridfd {

std::unique_ptr<Model> make_flat_model(const ModelContext& context);
std::unique_ptr<Model> make_multiple_model(const ModelContext& context);
std::unique_ptr<Model> make_masteronly_model(const ModelContext& context);
std::unique_ptr<Model> make_masteronly_threaded_comm_model(const ModelContext& context);
std::unique_ptr<Model> make_funneled_overlap_model(const ModelContext& context);

namespace {

struct Entry {
  std::unique_ptr<Model> (*make)(const ModelContext&);
  ModelTraits traits;
};

const detail::Registry<Entry>& registry() {
  static const detail::Registry<Entry> models{
      "model",
      {
          {"flat", {make_flat_model, {MPI_THREAD_SINGLE, "one", "rank-per-core"}}},
          {"multiple", {make_multiple_model, {MPI_THREAD_MULTIPLE, "one", "grid-groups"}}},
          {"masteronly", {make_masteronly_model, {MPI_THREAD_FUNNELED, "all", "node-cores"}}},
          {"masteronly-threaded-comm", {make_masteronly_threaded_comm_model, {MPI_THREAD_MULTIPLE, "all", "none"}}},
          {"funneled-overlap", {make_funneled_overlap_model, {MPI_THREAD_FUNNELED, "all-but-one", "none"}}},
      }};
  return models;
}

}  // namespace

std::unique_ptr<Model> make_model(std::string_view name, const ModelContext& context) {
  return registry().at(name).make(context);
}

std::vector<std::string> model_names() { return registry().names(); }

ModelTraits model_traits(std::string_view name) { return registry().at(name).traits; }

int required_thread_level(std::string_view model, int threads) {
  const int level = registry().at(model).traits.thread_level;
  return threads > 1 ? level : MPI_THREAD_SINGLE;
}

std::string_view thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "unknown MPI thread level";
  }
}

}  // namespace hybridfd
