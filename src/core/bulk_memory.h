// Large float buffers touched by every core: a map of 10⁸–10⁹ points is gigabytes, and a serial
// first touch of fresh pages (one fault and one page clear per 4 KiB) cost 2.0 s for a 3.3 GiB
// map on the GPU host (benchmarks/NOTES.md, "Big MSM maps, whole process").
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace espgrid {

/// `values` sized `count`, every value NaN (the poison a kernel must overwrite). Large buffers
/// have their pages faulted in by up to 8 cores first; small ones are simply assigned. The result is the same as
/// values.assign(count, NaN).
void assign_poisoned(std::vector<float>& values, std::size_t count);
/// The same for doubles (the PB solve's potential).
void assign_poisoned(std::vector<double>& values, std::size_t count);
/// The same with zeros (a grid that sums contributions: the PB solve's spread charges).
void assign_zeros(std::vector<double>& values, std::size_t count);

/// assign_zeros, with only the values [keep_first, keep_end) backed by memory: the pages wholly
/// outside that range, zeros, go back to the operating system (Linux: madvise MADV_DONTNEED on the
/// process's private memory), read as zeros again without taking memory and take it only once
/// written. One MPI rank's share of a whole-grid array: the code indexes the whole grid while the rank
/// holds its planes. Every page stays resident where the system offers no such call. Briefly (while
/// the zeros are written) the whole array is resident.
void assign_zeros_resident(std::vector<double>& values, std::size_t count, std::size_t keep_first,
                           std::size_t keep_end);
/// The whole pages of `values` wholly outside [keep_first, keep_end) handed back the same way, for an
/// array whose values outside a rank's share are no longer read: on Linux they read as zeros afterwards
/// (and take memory again once written); elsewhere they stay as they were.
void release_outside(std::vector<double>& values, std::size_t keep_first, std::size_t keep_end);

/// memcpy of `count` floats, split over up to 8 threads for large copies (staging buffers into
/// a map): one core copies ~5–10 GB/s, the host's memory several times that.
void copy_floats(float* to, const float* from, std::size_t count);

/// The smallest and largest of `count` floats, NaN ignored (both NaN when every value is), on up
/// to 8 threads for large arrays: the summary's range of a 3.3 GiB map took a second serially.
std::pair<float, float> float_range(const float* values, std::size_t count);

}  // namespace espgrid
