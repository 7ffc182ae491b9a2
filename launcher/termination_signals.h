// The signal set-up of the long-running commands (serve, supervise): SIGTERM and SIGINT are
// blocked in the calling thread, and so in every thread it starts afterwards, so that one watcher
// thread can sigwait() for them; SIGPIPE is ignored (a closed socket is a write error, not a
// death). Call before any thread starts (MPI's included). Returns the set to sigwait() on.
#pragma once

#include <signal.h>

namespace weft {

sigset_t block_termination_signals();

}  // namespace weft
