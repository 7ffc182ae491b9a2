// A weft job that generates until it is killed, for engine_fault_test.sh: every rank writes its
// pid to DIR/rank_R.pid once the model is loaded; rank 0 then submits greedy requests forever.
//   mpirun -np 2 mpi_engine_fault DIR MODEL_DIR STEP_TIMEOUT_S [STEP_TIMEOUT_FLOOR_S]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "engine/distributed_engine.h"

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) return 2;
  auto world = weft::MpiWorld::init(&argc, &argv);
  if (!world.ok()) return 1;
  weft::DistributedOptions options;
  options.engine.model_dir = argv[2];
  options.engine.num_threads = 1;
  options.engine.kv.max_blocks = 64;
  options.tp = (*world)->size();
  options.step_deadline = std::chrono::seconds(std::atoi(argv[3]));
  if (argc == 5) options.step_deadline_floor = std::chrono::seconds(std::atoi(argv[4]));
  auto engine = weft::DistributedEngine::create(**world, options);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", std::string(engine.status().message()).c_str());
    return 1;
  }
  std::ofstream(std::string(argv[1]) + "/rank_" + std::to_string((*world)->rank()) + ".pid") << ::getpid();
  if (!(*engine)->is_coordinator()) {
    absl::Status s = (*engine)->serve();
    if (!s.ok()) (*world)->abort(1, std::string(s.message()));
    return 0;
  }
  for (;;) {
    weft::Request request;
    request.prompt_ids = {1, 2, 3, 4, 5};
    request.params.temperature = 0;
    request.params.max_tokens = 64;
    request.params.ignore_eos = true;
    if (!(*engine)->engine().add_request(request).ok()) return 1;
    while ((*engine)->engine().has_unfinished()) {
      auto out = (*engine)->engine().step();
      if (!out.ok()) (*world)->abort(1, "rank 0: " + std::string(out.status().message()));
    }
  }
}
