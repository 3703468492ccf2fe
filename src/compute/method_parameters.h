// What a run of an approximate method is asked for (--accuracy, or the method's own parameters),
// as plain data the run options carry; src/msm/msm_parameters.h says how MSM turns it into a
// setting and an error bound. C++17: nvcc reads it.
#pragma once

namespace espgrid {

/// The three numbers of an MSM run. All zero means "from the accuracy preset".
struct MsmParameters {
  double cutoff = 0;   ///< a, Å: the short range is summed directly within it
  double spacing = 0;  ///< h, Å: level-1 grid spacing (level l: h·2^(l-1))
  int order = 0;       ///< interpolant degree: 3 (cubic, with Taylor-2 softening) or 5 (quintic, Taylor-3)

  bool empty() const noexcept { return cutoff == 0 && spacing == 0 && order == 0; }
};

/// Parameters of the approximate methods (registry entries with Accuracy::Approximate); exact
/// entries ignore them. Kept apart from the exact kernels' launch options so that another
/// approximate method can add its own without touching them.
struct MethodParameters {
  double accuracy = 0;  ///< requested relative RMS error (--accuracy); 0: the default preset
  MsmParameters msm;    ///< explicit parameters (--msm-cutoff, --msm-spacing, --msm-order); zeros: from `accuracy`
};

}  // namespace espgrid
