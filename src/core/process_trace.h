// Where a whole process's time goes before and after the work it reports (issue 33's process-time
// targets): with ESPGRID_TRACE_PROCESS set, each stamp prints one line on stderr,
//   espgrid: process: <what> at <ms> ms since exec
// (the exec time from /proc/self/stat, 10 ms granularity on Linux; the stamps themselves are
// read from CLOCK_BOOTTIME, the clock that start time counts on). Without the variable a stamp
// costs one cached getenv. The process's own summary ("time ... total") covers only the work.
#pragma once

namespace espgrid {

/// Prints "<what> at N ms since exec" on stderr when ESPGRID_TRACE_PROCESS is set.
void trace_process(const char* what) noexcept;

}  // namespace espgrid
