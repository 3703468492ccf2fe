// How espgrid's command-line process ends after a GPU run (issue 33's process time). The CUDA
// runtime's exit handler destroys every context it made, and on the lent H200 host that took
// longer than the 161³ PB solve itself (benchmarks/NOTES.md, "A process's time"). Once the
// outputs are written and flushed nothing of that teardown is needed: the kernel releases the
// device's memory when the process ends. So main() ends such a process with _Exit, unless
// something registered an exit handler that must run (MPI's finalize).
#pragma once

namespace espgrid {

/// Called where a GPU context is made (kernels/): the process may skip the runtime's teardown.
void note_gpu_context_made() noexcept;
/// Called by whoever registers an exit handler that must run (MPI_Finalize's).
void note_exit_handler_needed() noexcept;
/// Whether main() may end the process with _Exit once its outputs are flushed.
bool may_skip_exit_handlers() noexcept;

}  // namespace espgrid
