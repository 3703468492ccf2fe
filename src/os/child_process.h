// Child programs (pdb2pqr30, gemmi) run so that nothing of them outlives espgrid: each in a
// process group of its own, entered in the interrupt handler's table in one step with the fork
// (interrupt_cleanup.h ends the group on a cleanup signal), killed by the kernel if espgrid dies
// without the handler running, and ended and reaped on every way out of run_child.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace espgrid {

/// How a child program ended.
struct ChildExit {
  int exit_code = -1;  ///< -1 when a signal ended it
  int signal = 0;      ///< the signal that ended it, or 0
};

/// Runs `argv` (argv[0] a path; no shell, so no name needs quoting) in `directory`, stdin from
/// /dev/null, stdout and stderr to `output_fd`, in a process group of its own whose ending the
/// signal handler takes care of (see the top of this file). The child gets the default signal
/// dispositions and mask, and SIGKILL if this process dies without the handler running
/// (PR_SET_PDEATHSIG). `waiting` (if set) is called every 20 ms at most while the child runs; if it
/// throws, the child's group is ended (SIGTERM, then SIGKILL) and reaped before the exception
/// goes on, as on any other way out. Throws Error when the program cannot be started.
ChildExit run_child(const std::vector<std::string>& argv, const std::string& directory, int output_fd,
                    const std::function<void()>& waiting = nullptr);

}  // namespace espgrid
