"""What espgrid-trajectory writes (espgrid.trajectory.main): the checks of its outputs, the summary
lines, the maps, the energies' CSV and the JSON summary, on rank 0."""

import json
import os
import sys

import espgrid
from espgrid import _espgrid


def _check_arguments(args):
    """(map outputs, text outputs, whether energies are asked): what the command line asks to write,
    UsageError for combinations that cannot be done."""
    outputs = (args.output or []) + (args.std_output or [])
    texts = [p for p in (args.energy_output, args.json) if p not in (None, "-")]
    energies = bool(args.energy_output or args.binding)
    if args.std_output and not args.output:
        raise espgrid.UsageError("--std-output needs -o MAP (the mean) as well")
    if not outputs and not energies:
        raise espgrid.UsageError("nothing to write: give -o MAP (the mean map) and/or --energy-output CSV")
    if args.binding and not (args.energy_output or args.json):
        raise espgrid.UsageError("--binding needs --energy-output CSV or --json FILE to write the energies to")
    if args.json == "-" and args.energy_output == "-":
        raise espgrid.UsageError("--json and --energy-output cannot both be - (standard output)")
    return outputs, texts, energies


def _check_outputs(maps, texts, inputs):
    """The map paths as `espgrid map` checks them (never onto an input, by name, through a link or
    as the same file); the CSV and JSON paths: a writable folder, not a folder themselves, not an
    input; no path named twice."""
    _espgrid.check_output_paths(maps, inputs)
    for path in maps + texts:
        for source in inputs:
            if os.path.exists(path) and os.path.exists(source) and os.path.samefile(path, source):
                raise espgrid.UsageError(f"{path} is an input ({source}): it would be replaced by an output")
    for path in texts:
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise espgrid.UsageError(f"cannot write {path}: it is a directory")
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise espgrid.UsageError(f"cannot write {path}: its folder does not exist or is not writable")
    named = [os.path.abspath(p) for p in maps + texts]
    twice = sorted({p for p in named if named.count(p) > 1})
    if twice:
        raise espgrid.UsageError(f"{twice[0]} is named twice among the outputs")


def _write_text(path, text):
    """`text` to `path` ("-": standard output), replacing it atomically (a temporary file beside it)."""
    if path == "-":
        sys.__stdout__.write(text)  # the summary lines go to stderr then (main)
        return
    folder = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(folder, f".{os.path.basename(path)}.espgrid-{os.getpid()}.tmp")
    try:
        with open(temporary, "w") as f:
            f.write(text)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def _report(args, run, ranks):
    """Rank 0's summary lines and files: the maps, the energies, the JSON summary."""
    sources = f"{args.topology}{' + ' + ', '.join(args.trajectory) if args.trajectory else ''}"
    summary = {"command": ["espgrid-trajectory"] + sys.argv[1:], "ranks": ranks.size}
    result = run.average
    if result is not None:
        mean, frames = result.mean, len(result.frames)
        print(f"frames     {frames} (of {sources}), {result.atoms} atoms"
              + (f", on {ranks.size} MPI ranks" if ranks.size > 1 else "")
              + (f", on GPUs {','.join(map(str, result.devices))}" if len(result.devices) > 1 else ""))
        print(f"grid       {' x '.join(map(str, mean.shape))}, spacing {','.join(f'{h:g}' for h in mean.spacing)} Å, "
              f"origin ({', '.join(f'{o:.3f}' for o in mean.origin)}) Å")
        if args.unwrap:
            print("molecules  made whole across the periodic box in every frame")
        if result.radii:
            print(f"radii      {result.radii}")
        print(f"kernel     {result.kernel} ({mean.kernel_choice})")
        if result.solve:
            print(f"solve      {result.solve} (the last frame)")
        print(f"mean       {mean.values.min():.4g} to {mean.values.max():.4g} {mean.units}; {mean.physics}")
        mean.write(args.output)
        for path in args.output:
            print(f"wrote      {path}")
        if result.std is not None:
            print(f"std        {result.std.values.min():.4g} to {result.std.values.max():.4g} {result.std.units}")
            result.std.write(args.std_output)
            for path in args.std_output:
                print(f"wrote      {path}")
        print(f"time       {result.seconds:.3f} s for {frames} frame{'' if frames == 1 else 's'} "
              f"(kernel {result.kernel_seconds:.3f} s)")
        summary.update(frames=result.frames, atoms=result.atoms,
                       grid={"dims": list(mean.shape), "spacing": list(mean.spacing), "origin": list(mean.origin)},
                       kernel=result.kernel, radii=result.radii, solve=result.solve, seconds=result.seconds,
                       outputs=(args.output or []) + (args.std_output or []))
    if run.energies is not None:
        series = run.energies
        for name, stats in series.summary()["energies"].items():
            error = "" if stats["standard_error"] is None else f" ± {stats['standard_error']:.4g}"
            print(f"energy     {name}: mean {stats['mean']:.6g}{error} {series.unit} over {stats['frames']} frames "
                  f"(statistical inefficiency {stats['statistical_inefficiency']:.3g})")
        if args.energy_output:
            _write_text(args.energy_output, series.csv_text())
            if args.energy_output != "-":
                print(f"wrote      {args.energy_output}")
        summary["energies"] = series.summary()
    if args.json:
        _write_text(args.json, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
        if args.json != "-":
            print(f"wrote      {args.json}")
