// VTK XML image data (.vti). Uncompressed, espgrid writes it itself, plane by plane as the map
// is computed (the layout of VTK's own writer: appended raw data, UInt64 headers, field data
// first, then the points x fastest); compressed, VTK's writer does, from the finished map.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/maps/float4.h"
#include "src/maps/map_formats.h"
#include "src/maps/map_stream.h"

#if ESPGRID_HAVE_VTK
#include <vtkDoubleArray.h>
#include <vtkFieldData.h>
#include <vtkFloatArray.h>
#include <vtkImageData.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkStringArray.h>
#include <vtkXMLImageDataWriter.h>
#endif

namespace espgrid {
namespace {

/// Width reserved for RangeMin/RangeMax, filled in when the last plane is written (VTK's own
/// writer reserves and overwrites the same way; readers skip the trailing spaces).
constexpr std::size_t kRangeWidth = 24;

/// Text for a String array's bytes: no NUL (it ends the string), no other control characters.
std::string string_value(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

/// A map's field data, for both .vti writers: text arrays (control characters as '?': VTK's
/// string arrays end at a NUL and its parser chokes on others), then numbers (the medium, the
/// ionic strength of a screened model and the model's own parameters). A foreign map's says what
/// was converted and its values' unit, and claims no physics (no "units" field: readers find none).
struct VtiFieldData {
  std::vector<std::pair<std::string, std::string>> texts;
  std::vector<std::pair<std::string, double>> numbers;
};

VtiFieldData vti_field_data(const PotentialMap& map) {
  VtiFieldData f;
  if (!map.foreign.empty()) {
    f.texts = {{"converted", string_value(foreign_map_title(map))},
               {"values_unit", foreign_map_unit(map)},
               {"source", string_value(map.source)}};
    return f;
  }
  f.texts = {{"units", unit_name(map.physics.unit)},
             {"source", string_value(map.source)},
             {"model", string_value(describe_model(map.physics))}};
  f.numbers = {{"dielectric", map.physics.dielectric}, {"temperature_K", map.physics.temperature}};
  with_pair_potential(map.physics.model, [&](auto potential) {
    if (potential.screened) f.numbers.emplace_back("ionic_strength_M", map.physics.ionic_strength);
    for (const ModelParameter& p : potential.parameters) f.numbers.emplace_back(p.name, map.physics.parameter(p));
  });
  return f;
}

class VtiPlaneWriter final : public PlaneWriter {
 public:
  VtiPlaneWriter(const PotentialMap& map, OutputFile& file)
      : map_(map),
        file_(file),
        plane_points_(static_cast<std::size_t>(map.grid.dims[0]) * static_cast<std::size_t>(map.grid.dims[1])),
        range_(static_cast<std::size_t>(map.grid.dims[2])) {
    const GridSpec& g = map.grid;
    // The appended block: each array is a UInt64 byte count, then its bytes.
    std::string block;
    const auto add = [&block](const void* data, std::uint64_t bytes) {
      block.append(reinterpret_cast<const char*>(&bytes), sizeof bytes);
      block.append(static_cast<const char*>(data), bytes);
    };
    const VtiFieldData fields = vti_field_data(map);
    const auto& [texts, numbers] = fields;
    std::vector<std::size_t> offsets;
    for (const auto& [name, text] : texts) {
      offsets.push_back(block.size());
      const std::string terminated = text + '\0';
      add(terminated.data(), terminated.size());
    }
    for (const auto& [name, value] : numbers) {
      offsets.push_back(block.size());
      add(&value, sizeof(double));
    }
    offsets.push_back(block.size());  // the potential
    const std::uint64_t data_bytes = sizeof(float) * map.values.size();
    block.append(reinterpret_cast<const char*>(&data_bytes), sizeof data_bytes);

    const std::string extent = "0 " + std::to_string(g.dims[0] - 1) + " 0 " + std::to_string(g.dims[1] - 1) + " 0 " +
                               std::to_string(g.dims[2] - 1);
    const auto triple = [](const std::array<double, 3>& v) {
      return shortest_text(v[0]) + " " + shortest_text(v[1]) + " " + shortest_text(v[2]);
    };
    const auto number = [](double v) { return shortest_text(v); };
    std::string xml = std::string("<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"") +
                      (std::endian::native == std::endian::little ? "LittleEndian" : "BigEndian") +
                      "\" header_type=\"UInt64\">\n";
    xml += "  <ImageData WholeExtent=\"" + extent + "\" Origin=\"" + triple(g.origin) + "\" Spacing=\"" +
           triple(g.spacing) + "\" Direction=\"1 0 0 0 1 0 0 0 1\">\n";
    xml += "    <FieldData>\n";
    std::size_t next = 0;
    for (const auto& [name, text] : texts)
      xml += "      <Array type=\"String\" Name=\"" + name + "\" NumberOfTuples=\"1\" format=\"appended\" offset=\"" +
             std::to_string(offsets[next++]) + "\"/>\n";
    for (const auto& [name, value] : numbers)
      xml += "      <DataArray type=\"Float64\" Name=\"" + name +
             "\" NumberOfTuples=\"1\" format=\"appended\" RangeMin=\"" + number(value) + "\" RangeMax=\"" +
             number(value) + "\" offset=\"" + std::to_string(offsets[next++]) + "\"/>\n";
    xml += "    </FieldData>\n";
    xml += "    <Piece Extent=\"" + extent + "\">\n";
    xml += "      <PointData Scalars=\"potential\">\n";
    xml += "        <DataArray type=\"Float32\" Name=\"potential\" format=\"appended\" RangeMin=\"";
    range_min_at_ = xml.size();
    xml += std::string(kRangeWidth, ' ') + "\" RangeMax=\"";
    range_max_at_ = xml.size();
    xml += std::string(kRangeWidth, ' ') + "\" offset=\"" + std::to_string(offsets.back()) + "\"/>\n";
    xml += "      </PointData>\n";
    xml += "      <CellData>\n";
    xml += "      </CellData>\n";
    xml += "    </Piece>\n";
    xml += "  </ImageData>\n";
    xml += "  <AppendedData encoding=\"raw\">\n   _";
    file_.write_at(0, xml.data(), xml.size());
    file_.write_at(xml.size(), block.data(), block.size());
    data_at_ = xml.size() + block.size();
    static constexpr char kTrailer[] = "\n  </AppendedData>\n</VTKFile>\n";
    file_.write_at(data_at_ + data_bytes, kTrailer, sizeof kTrailer - 1);
  }

  void summarize_planes(std::int64_t first, std::int64_t count) override {
    for (std::int64_t k = first; k < first + count; ++k) {
      const float* plane = map_.values.data() + static_cast<std::size_t>(k) * plane_points_;
      // zero collects 0·v: 0 for every finite v, NaN for a NaN or an infinity (the check).
      Float4 lo = {plane[0], plane[0], plane[0], plane[0]}, hi = lo, zero = {0, 0, 0, 0};
      std::size_t n = 0;
      for (; n + 4 <= plane_points_; n += 4) {
        const Float4 x = load4(plane + n);
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        zero += x * 0.0f;
      }
      if (!(zero[0] == 0 && zero[1] == 0 && zero[2] == 0 && zero[3] == 0)) check_finite(map_, k, 1);
      float lowest = std::min(std::min(lo[0], lo[1]), std::min(lo[2], lo[3]));
      float highest = std::max(std::max(hi[0], hi[1]), std::max(hi[2], hi[3]));
      for (; n < plane_points_; ++n) {
        if (!std::isfinite(plane[n])) check_finite(map_, k, 1);
        lowest = std::min(lowest, plane[n]);
        highest = std::max(highest, plane[n]);
      }
      range_[static_cast<std::size_t>(k)] = {lowest, highest};
    }
  }

  void write_plane_bytes(std::int64_t first, std::int64_t count) noexcept override {
    file_.write_at(data_at_ + sizeof(float) * plane_points_ * static_cast<std::size_t>(first),
                   map_.values.data() + static_cast<std::size_t>(first) * plane_points_,
                   sizeof(float) * plane_points_ * static_cast<std::size_t>(count));
  }

  void finish() override {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (const auto& [plane_lo, plane_hi] : range_) {
      lo = std::min(lo, plane_lo);
      hi = std::max(hi, plane_hi);
    }
    const std::string min_text = shortest_text(lo), max_text = shortest_text(hi);
    file_.write_at(range_min_at_, min_text.data(), std::min(min_text.size(), kRangeWidth));
    file_.write_at(range_max_at_, max_text.data(), std::min(max_text.size(), kRangeWidth));
  }

 private:
  const PotentialMap& map_;
  OutputFile& file_;
  std::size_t plane_points_;
  std::vector<std::pair<float, float>> range_;  ///< per z-plane: min, max
  std::size_t range_min_at_ = 0, range_max_at_ = 0;
  std::uint64_t data_at_ = 0;  ///< where point (0, 0, 0)'s value goes
};

}  // namespace

std::unique_ptr<PlaneWriter> make_vti_plane_writer(const PotentialMap& map, OutputFile& file) {
  return std::make_unique<VtiPlaneWriter>(map, file);
}

void write_uncompressed_vti_to(const PotentialMap& map, const std::string& path, int threads) {
  OutputFile file(path);
  VtiPlaneWriter writer(map, file);
  write_all_planes(map, writer, threads);
  file.close();
}

#if ESPGRID_HAVE_VTK

bool vti_supported() noexcept { return true; }

void write_vti_to(const PotentialMap& map, const std::string& path, const MapWriteOptions& options) {
  if (options.vti_compression == VtiCompression::None) return write_uncompressed_vti_to(map, path, options.threads);
  const GridSpec& g = map.grid;
  vtkNew<vtkImageData> image;
  image->SetDimensions(static_cast<int>(g.dims[0]), static_cast<int>(g.dims[1]), static_cast<int>(g.dims[2]));
  image->SetOrigin(g.origin[0], g.origin[1], g.origin[2]);
  image->SetSpacing(g.spacing[0], g.spacing[1], g.spacing[2]);

  vtkNew<vtkFloatArray> potential;
  potential->SetName("potential");
  potential->SetNumberOfComponents(1);
  // VTK only reads the values; save=1 tells it not to free memory it does not own.
  potential->SetArray(const_cast<float*>(map.values.data()), static_cast<vtkIdType>(map.values.size()), 1);
  image->GetPointData()->SetScalars(potential);

  const VtiFieldData fields = vti_field_data(map);
  for (const auto& [name, text] : fields.texts) {
    vtkNew<vtkStringArray> array;
    array->SetName(name.c_str());
    array->InsertNextValue(text);
    image->GetFieldData()->AddArray(array);
  }
  for (const auto& [name, value] : fields.numbers) {
    vtkNew<vtkDoubleArray> array;
    array->SetName(name.c_str());
    array->InsertNextValue(value);
    image->GetFieldData()->AddArray(array);
  }

  vtkNew<vtkXMLImageDataWriter> writer;
  writer->SetFileName(path.c_str());
  writer->SetInputData(image);
  writer->SetDataModeToAppended();
  writer->EncodeAppendedDataOff();  // raw binary appended block, smaller and faster than base64
  switch (options.vti_compression) {
    case VtiCompression::None:  // espgrid's own writer, above
      break;
    case VtiCompression::Lz4:
      writer->SetCompressorTypeToLZ4();
      break;
    case VtiCompression::ZLib:
      writer->SetCompressorTypeToZLib();
      break;
    case VtiCompression::Lzma:
      writer->SetCompressorTypeToLZMA();
      break;
  }
  writer->SetHeaderTypeToUInt64();    // maps over 4 GiB
  writer->GlobalWarningDisplayOff();  // VTK's own messages would show source paths; we report
  if (writer->Write() != 1 || writer->GetErrorCode() != 0)
    throw Error("cannot write " + path + ": VTK's XML writer failed (disk full or not writable?)");
}

#else

bool vti_supported() noexcept { return false; }

void write_vti_to(const PotentialMap& map, const std::string& path, const MapWriteOptions& options) {
  if (options.vti_compression == VtiCompression::None) return write_uncompressed_vti_to(map, path, options.threads);
  throw UsageError("cannot write " + path + " with " + std::string(compression_name(options.vti_compression)) +
                   " compression: this espgrid was built without VTK");
}

#endif

}  // namespace espgrid
