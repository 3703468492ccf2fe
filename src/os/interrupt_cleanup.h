// What a signal that ends espgrid leaves behind: nothing. SIGINT, SIGTERM, SIGHUP, SIGUSR1,
// SIGUSR2, SIGALRM, SIGVTALRM and SIGXCPU run one handler that first ends every registered
// child's process group (child_process.h: SIGTERM, then SIGKILL after a grace period), then
// removes the registered temporary folders with everything in them (temporary_folder.h), then
// the pending temporary map files (atomic_output_file.h), and ends the process with 128 +
// signal. SIGPIPE and SIGXFSZ are ignored, so a closed stdout or a file-size limit is an error
// of one write, not death (docs/reliability.md, "Output files").
#pragma once

#include <string>

namespace espgrid {

/// Installs the signal handling described at the top of this file. Signals that were ignored
/// when the process started (nohup ignores SIGHUP) stay ignored. Call once from main().
void install_interrupt_cleanup();

/// Removes `path` and everything under it (not following symbolic links) with system calls
/// only, as the signal handler does; returns false if anything stayed.
bool remove_tree(const std::string& path) noexcept;

}  // namespace espgrid
