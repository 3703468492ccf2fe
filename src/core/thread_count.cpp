#include "src/core/thread_count.h"

#include <omp.h>

namespace espgrid {

int threads_to_use(int requested) { return requested > 0 ? requested : omp_get_max_threads(); }

}  // namespace espgrid
