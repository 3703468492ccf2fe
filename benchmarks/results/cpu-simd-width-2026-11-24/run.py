import subprocess, re, statistics, json, sys, os
builds = {"old": "/tmp/ci1/build/espgrid", "new": "/work/main/build/espgrid"}
dims_list = ["128,128,16", "96,96,16", "97,61,8", "200,100,8", "40,40,16"]
caps = sys.argv[1].split(",") if len(sys.argv) > 1 else ["avx512"]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
res = {}
for cap in caps:
  for dims in dims_list:
    for r in range(rounds):
      for b, exe in builds.items():
        env = dict(os.environ, ESPGRID_SIMD=cap)
        out = subprocess.run([exe, "bench", "--kernel", "cpu-reference,cpu-simd", "--threads", "1", "--atoms", "20000",
                              "--seed", "5", "--dims", dims, "--backend", "cpu"], capture_output=True, text=True, env=env).stdout
        rates = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(cpu-\S+)\s+cpu\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)", out, re.M)}
        res.setdefault((cap, dims, b), []).append((rates["cpu-simd"], rates["cpu-reference"]))
rows = []
for (cap, dims, b), v in sorted(res.items()):
  ratio = statistics.median(s / r for s, r in v)
  rows.append({"simd": cap, "dims": dims, "build": b, "cpu_simd_per_s": statistics.median(s for s, _ in v),
               "cpu_reference_per_s": statistics.median(r for _, r in v), "ratio_median": ratio, "runs": len(v)})
  print(f"{cap:7s} {dims:11s} {b}: cpu-simd {statistics.median(s for s,_ in v):.3e}/s  x reference {ratio:.2f}")
json.dump(rows, open(f"/tmp/simdbench/result-{'-'.join(caps)}.json", "w"), indent=1)
