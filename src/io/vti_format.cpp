#include "src/core/errors.h"
#include "src/io/map_formats.h"

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

#if ESPGRID_HAVE_VTK

bool vti_supported() noexcept { return true; }

void write_vti_to(const PotentialMap& map, const std::string& path, const MapWriteOptions& options) {
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

  vtkNew<vtkStringArray> units;
  units->SetName("units");
  units->InsertNextValue(unit_name(map.physics.unit));
  image->GetFieldData()->AddArray(units);
  vtkNew<vtkStringArray> source;
  source->SetName("source");
  source->InsertNextValue(map.source);
  image->GetFieldData()->AddArray(source);
  vtkNew<vtkDoubleArray> dielectric;
  dielectric->SetName("dielectric");
  dielectric->InsertNextValue(map.physics.dielectric);
  image->GetFieldData()->AddArray(dielectric);
  vtkNew<vtkDoubleArray> temperature;
  temperature->SetName("temperature_K");
  temperature->InsertNextValue(map.physics.temperature);
  image->GetFieldData()->AddArray(temperature);

  vtkNew<vtkXMLImageDataWriter> writer;
  writer->SetFileName(path.c_str());
  writer->SetInputData(image);
  writer->SetDataModeToAppended();
  writer->EncodeAppendedDataOff();  // raw binary appended block, smaller and faster than base64
  switch (options.vti_compression) {
    case VtiCompression::None:
      writer->SetCompressorTypeToNone();
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

void write_vti_to(const PotentialMap&, const std::string& path, const MapWriteOptions&) {
  throw UsageError("cannot write " + path + ": this espgrid was built without VTK");
}

#endif

}  // namespace espgrid
