// The bench's result files: CSV and JSON of every measurement, with the run's metadata (host,
// device, ceilings, settings, command line), and the files of the gpus and end-to-end sweeps.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "src/bench/bench.h"
#include "src/core/errors.h"
#include "src/core/json.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"
#include "src/os/atomic_output_file.h"

#ifndef ESPGRID_GIT_COMMIT
#define ESPGRID_GIT_COMMIT "unknown"
#endif

namespace espgrid::bench {

// ---- output -----------------------------------------------------------------------------------------

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> columns = {
      "sweep", "kernel", "backend", "nx", "ny", "nz_used", "atoms", "block_x", "block_y", "coarsening", "repeats",
      "kernel_ms_median", "kernel_ms_min", "kernel_ms_max", "wall_ms_median", "atom_evals_per_s", "gflops",
      "ceiling_fraction", "max_err_over_tol", "verified", "note",
      // beyond the agreed columns: the whole grid, the flop count, where it ran
      "ny_full", "nz_full", "flops_per_evaluation", "device", "fma_split"};
  return columns;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

namespace {

/// A CSV number: empty for not measured (NaN), "inf"/"-inf", otherwise %g (6 digits).
std::string csv_number(double value) {
  if (std::isnan(value)) return "";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return number_text(value);
}

}  // namespace

std::string csv_header() {
  std::string out;
  for (const auto& c : csv_columns()) out += (out.empty() ? "" : ",") + c;
  return out;
}

std::string csv_line(const Measurement& r) {
  const std::vector<std::string> fields = {csv_field(r.sweep),
                                           csv_field(r.kernel),
                                           csv_field(r.backend),
                                           std::to_string(r.nx),
                                           std::to_string(r.ny_used),
                                           std::to_string(r.nz_used),
                                           std::to_string(r.atoms),
                                           std::to_string(r.block_x),
                                           std::to_string(r.block_y),
                                           std::to_string(r.coarsening),
                                           std::to_string(r.repeats),
                                           csv_number(r.kernel_ms.median),
                                           csv_number(r.kernel_ms.min),
                                           csv_number(r.kernel_ms.max),
                                           csv_number(r.wall_ms_median),
                                           csv_number(r.atom_evals_per_s),
                                           csv_number(r.gflops),
                                           csv_number(r.ceiling_fraction),
                                           csv_number(r.max_err_over_tol),
                                           std::string(status_name(r.status)),
                                           csv_field(r.note),
                                           std::to_string(r.ny),
                                           std::to_string(r.nz),
                                           std::to_string(r.flops_per_evaluation),
                                           csv_field(r.device),
                                           std::to_string(r.fma_split)};
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
  return out;
}

JsonLine& JsonLine::str(std::string_view key, std::string_view value) {
  json_.set(std::string(key), Json(std::string(value)));
  return *this;
}
JsonLine& JsonLine::num(std::string_view key, double value) {
  json_.set(std::string(key), Json(value));
  return *this;
}
JsonLine& JsonLine::integer(std::string_view key, long long value) {
  json_.set(std::string(key), Json(value));
  return *this;
}
JsonLine& JsonLine::flag(std::string_view key, bool value) {
  json_.set(std::string(key), Json(value));
  return *this;
}
JsonLine& JsonLine::object(std::string_view key, const JsonLine& value) {
  json_.set(std::string(key), value.json_);
  return *this;
}
JsonLine& JsonLine::array(std::string_view key, const std::vector<JsonLine>& items) {
  Json list = Json::array();
  for (const JsonLine& item : items) list.push(item.json_);
  json_.set(std::string(key), std::move(list));
  return *this;
}

namespace {

std::string measurement_json(const Measurement& r) {
  JsonLine o;
  o.str("sweep", r.sweep).str("kernel", r.kernel).str("backend", r.backend);
  o.integer("nx", r.nx).integer("ny", r.ny_used).integer("nz_used", r.nz_used);
  o.integer("atoms", static_cast<long long>(r.atoms));
  o.integer("block_x", r.block_x).integer("block_y", r.block_y).integer("coarsening", r.coarsening);
  o.integer("fma_split", r.fma_split);
  o.integer("repeats", r.repeats).integer("warmup", r.warmup);
  o.num("kernel_ms_median", r.kernel_ms.median)
      .num("kernel_ms_min", r.kernel_ms.min)
      .num("kernel_ms_max", r.kernel_ms.max);
  o.num("wall_ms_median", r.wall_ms_median).num("atom_evals_per_s", r.atom_evals_per_s).num("gflops", r.gflops);
  o.num("ceiling_fraction", r.ceiling_fraction).num("max_err_over_tol", r.max_err_over_tol);
  o.str("verified", status_name(r.status)).str("note", r.note);
  o.integer("ny_full", r.ny).integer("nz_full", r.nz).integer("flops_per_evaluation", r.flops_per_evaluation);
  o.num("evaluations", r.evaluations).num("wall_evals_per_s", r.wall_evals_per_s);
  o.integer("points_checked", static_cast<long long>(r.points_checked)).str("device", r.device);
  return o.text();
}

std::string speedup_json(const Speedup& s) {
  JsonLine o;
  o.str("label", s.label).integer("nx", s.nx).integer("ny", s.ny).integer("nz", s.nz);
  o.integer("atoms", static_cast<long long>(s.atoms)).str("cpu_kernel", s.cpu_kernel).str("gpu_kernel", s.gpu_kernel);
  o.num("cpu_evals_per_s", s.cpu_evals_per_s).num("gpu_evals_per_s", s.gpu_evals_per_s);
  o.num("kernel_speedup", s.kernel_speedup).num("wall_speedup", s.wall_speedup);
  return o.text();
}

}  // namespace

std::string git_commit() {
  if (const char* env = std::getenv("ESPGRID_COMMIT"); env && *env) return env;
  const std::string embedded = ESPGRID_GIT_COMMIT;
  return embedded.empty() ? "unknown" : embedded;
}

std::string host_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) break;
      std::string model = line.substr(colon + 1);
      const auto first = model.find_first_not_of(" \t");
      return first == std::string::npos ? "unknown" : model.substr(first);
    }
  }
  return "unknown";
}

Metadata host_metadata() {
  Metadata m;
  m.date_utc = utc_timestamp();
  m.espgrid_version = ESPGRID_VERSION;
  m.git_commit = git_commit();
  m.host_cpu = host_cpu_model();
  m.host_threads = static_cast<int>(std::thread::hardware_concurrency());
  m.cpu_threads = threads_to_use(0);
  return m;
}

std::string json_document(std::string_view kind, const Metadata& m, const std::vector<Measurement>& rows,
                          const std::vector<Speedup>& speedups) {
  JsonLine ceiling;
  ceiling.num("rsqrt_per_second", m.rsqrt_per_second).num("sm_clock_ghz", m.sm_clock_ghz);
  ceiling.integer("multiprocessors", m.multiprocessors).str("note", m.ceiling_note);
  ceiling.str("cpu_simd_target", m.cpu_simd_target).num("cpu_core_evals_per_second", m.cpu_core_evals_per_second);
  ceiling.num("cpu_all_evals_per_second", m.cpu_all_evals_per_second);
  JsonLine settings;
  settings.integer("repeats", m.settings.repeats).integer("warmup", m.settings.warmup);
  settings.num("budget_seconds", m.settings.budget_seconds);
  settings.integer("check_points", static_cast<long long>(m.settings.check_points));
  settings.integer("seed", static_cast<long long>(m.settings.seed));
  JsonLine meta;
  meta.str("date_utc", m.date_utc).str("espgrid_version", m.espgrid_version).str("git_commit", m.git_commit);
  meta.str("device", m.device).integer("device_index", m.device_index);
  meta.flag("cuda_available", m.cuda_available).str("cuda_reason", m.cuda_reason);
  meta.object("rsqrt_ceiling", ceiling);
  meta.str("host_cpu", m.host_cpu).integer("host_threads", m.host_threads).integer("cpu_threads", m.cpu_threads);
  meta.str("command_line", m.command_line).str("input", m.input);
  meta.object("settings", settings);

  std::string out = "{\n  \"format\": \"espgrid-bench/1\",\n  \"kind\": " + json_quoted(kind) + ",\n";
  out += "  \"metadata\": " + meta.text() + ",\n";
  out += "  \"columns\": [";
  for (std::size_t i = 0; i < csv_columns().size(); ++i) out += (i ? ", " : "") + json_quoted(csv_columns()[i]);
  out += "],\n  \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) out += std::string(i ? "," : "") + "\n    " + measurement_json(rows[i]);
  out += rows.empty() ? "],\n" : "\n  ],\n";
  out += "  \"speedups\": [";
  for (std::size_t i = 0; i < speedups.size(); ++i)
    out += std::string(i ? "," : "") + "\n    " + speedup_json(speedups[i]);
  out += speedups.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

void write_text(const std::string& path, const std::string& text) {
  AtomicOutputFile file(path);
  {
    std::ofstream out(file.temporary_path(), std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw Error("cannot write " + path);
  }
  file.commit();
}

std::vector<std::string> write_results(const std::string& directory, std::string_view kind, const Metadata& meta,
                                       const std::vector<Measurement>& rows, const std::vector<Speedup>& speedups) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) throw Error("cannot create " + directory + ": " + ec.message());
  const std::string base = (std::filesystem::path(directory) / ("bench-" + std::string(kind))).string();
  std::string csv = csv_header() + "\n";
  for (const Measurement& r : rows) csv += csv_line(r) + "\n";
  write_text(base + ".csv", csv);
  write_text(base + ".json", json_document(kind, meta, rows, speedups));
  return {base + ".csv", base + ".json"};
}

// ---- GPU scaling ----------------------------------------------------------------------------------------

namespace {

std::string per_device_field(const std::vector<WorkerTiming>& parts, bool planes) {
  std::string out;
  for (const WorkerTiming& p : parts) {
    if (!out.empty()) out += ' ';
    out += std::to_string(p.device);
    out += ':';
    out += planes ? std::to_string(p.planes) : csv_number(p.kernel_seconds * 1e3);
  }
  return out;
}

std::string scaling_json(const GpuScaling& g) {
  JsonLine o;
  o.str("kernel", g.kernel).integer("gpus", g.gpus).str("devices", g.devices);
  o.num("kernel_ms_median", g.kernel_ms).num("wall_ms_median", g.wall_ms);
  o.num("kernel_speedup", g.kernel_speedup).num("wall_speedup", g.wall_speedup);
  o.num("kernel_efficiency", g.kernel_efficiency).num("wall_efficiency", g.wall_efficiency);
  o.str("identical_to_1gpu", g.identical);
  std::vector<JsonLine> parts;
  for (const WorkerTiming& p : g.per_device) {
    JsonLine d;
    d.integer("device", p.device).str("name", p.device_name).integer("planes", p.planes).integer("chunks", p.chunks);
    d.num("kernel_ms", p.kernel_seconds * 1e3).num("wall_ms", p.wall_seconds * 1e3);
    parts.push_back(d);
  }
  o.array("per_device", parts);
  return o.text();
}

}  // namespace

std::vector<std::string> write_gpu_scaling(const std::string& directory, const Metadata& meta,
                                           const std::vector<Measurement>& rows,
                                           const std::vector<GpuScaling>& scaling) {
  if (rows.size() != scaling.size()) throw Error("write_gpu_scaling: rows and scaling entries do not pair up");
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) throw Error("cannot create " + directory + ": " + ec.message());
  const std::string base = (std::filesystem::path(directory) / "bench-gpus").string();
  std::string csv = csv_header() +
                    ",gpus,devices,kernel_speedup,wall_speedup,kernel_efficiency,wall_efficiency,identical_to_1gpu,"
                    "per_device_planes,per_device_kernel_ms\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const GpuScaling& g = scaling[i];
    csv += csv_line(rows[i]) + "," + std::to_string(g.gpus) + "," + csv_field(g.devices) + "," +
           csv_number(g.kernel_speedup) + "," + csv_number(g.wall_speedup) + "," + csv_number(g.kernel_efficiency) +
           "," + csv_number(g.wall_efficiency) + "," + csv_field(g.identical) + "," +
           csv_field(per_device_field(g.per_device, true)) + "," + csv_field(per_device_field(g.per_device, false)) +
           "\n";
  }
  write_text(base + ".csv", csv);
  std::string json = json_document("gpus", meta, rows);
  const std::size_t end = json.rfind("\n}");
  std::string entries;
  for (std::size_t i = 0; i < scaling.size(); ++i)
    entries += std::string(i ? "," : "") + "\n    " + scaling_json(scaling[i]);
  json = json.substr(0, end) + ",\n  \"scaling\": [" + entries + (scaling.empty() ? "]" : "\n  ]") + "\n}\n";
  write_text(base + ".json", json);
  return {base + ".csv", base + ".json"};
}

// ---- end to end -----------------------------------------------------------------------------------------

namespace {

std::string end_to_end_json(const EndToEnd& e) {
  JsonLine o;
  o.str("format", e.format).str("kernel", e.kernel).str("device", e.device);
  o.integer("nx", e.nx).integer("ny", e.ny).integer("nz", e.nz).integer("atoms", static_cast<long long>(e.atoms));
  o.integer("repeats", e.repeats).integer("warmup", e.warmup).flag("streamed", e.streamed);
  o.integer("file_bytes", static_cast<long long>(e.file_bytes));
  o.num("read_ms", e.read_ms).num("prepare_ms", e.prepare_ms).num("kernel_ms", e.kernel_ms);
  o.num("transfer_ms", e.transfer_ms).num("write_ms", e.write_ms).num("streamed_ms", e.streamed_ms);
  o.num("wall_ms", e.wall_ms).num("wall_over_kernel", e.wall_over_kernel);
  o.num("max_err_over_tol", e.max_err_over_tol).integer("points_checked", static_cast<long long>(e.points_checked));
  o.str("verified", status_name(e.status)).str("note", e.note);
  return o.text();
}

}  // namespace

std::vector<std::string> write_end_to_end(const std::string& directory, const Metadata& meta,
                                          const std::vector<EndToEnd>& rows) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) throw Error("cannot create " + directory + ": " + ec.message());
  const std::string base = (std::filesystem::path(directory) / "bench-end-to-end").string();
  std::string csv =
      "format,kernel,device,nx,ny,nz,atoms,repeats,streamed,file_bytes,read_ms,prepare_ms,kernel_ms,transfer_ms,"
      "write_ms,streamed_ms,wall_ms,wall_over_kernel,max_err_over_tol,verified,note\n";
  for (const EndToEnd& e : rows)
    csv += csv_field(e.format) + "," + csv_field(e.kernel) + "," + csv_field(e.device) + "," + std::to_string(e.nx) +
           "," + std::to_string(e.ny) + "," + std::to_string(e.nz) + "," + std::to_string(e.atoms) + "," +
           std::to_string(e.repeats) + "," + (e.streamed ? "yes" : "no") + "," + std::to_string(e.file_bytes) + "," +
           csv_number(e.read_ms) + "," + csv_number(e.prepare_ms) + "," + csv_number(e.kernel_ms) + "," +
           csv_number(e.transfer_ms) + "," + csv_number(e.write_ms) + "," + csv_number(e.streamed_ms) + "," +
           csv_number(e.wall_ms) + "," + csv_number(e.wall_over_kernel) + "," + csv_number(e.max_err_over_tol) + "," +
           std::string(status_name(e.status)) + "," + csv_field(e.note) + "\n";
  write_text(base + ".csv", csv);
  std::string json = json_document("end-to-end", meta, {});
  const std::size_t end = json.rfind("\n}");
  std::string entries;
  for (std::size_t i = 0; i < rows.size(); ++i)
    entries += std::string(i ? "," : "") + "\n    " + end_to_end_json(rows[i]);
  json = json.substr(0, end) + ",\n  \"end_to_end\": [" + entries + (rows.empty() ? "]" : "\n  ]") + "\n}\n";
  write_text(base + ".json", json);
  return {base + ".csv", base + ".json"};
}

}  // namespace espgrid::bench
