#include "src/core/process_exit.h"

#include <atomic>

namespace espgrid {

namespace {
std::atomic<bool> gpu_context_made{false};
std::atomic<bool> exit_handler_needed{false};
}  // namespace

void note_gpu_context_made() noexcept { gpu_context_made = true; }
void note_exit_handler_needed() noexcept { exit_handler_needed = true; }
bool may_skip_exit_handlers() noexcept { return gpu_context_made && !exit_handler_needed; }

}  // namespace espgrid
