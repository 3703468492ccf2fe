// How many threads a CPU step runs on: the count asked for (--threads, RunOptions::threads,
// MapWriteOptions::threads), or OpenMP's default when none was (0), which is every core unless
// OMP_NUM_THREADS says otherwise.
#pragma once

namespace espgrid {

/// `requested` when it is positive, else omp_get_max_threads().
int threads_to_use(int requested);

}  // namespace espgrid
