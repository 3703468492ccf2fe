// The encodings a VTK XML file's arrays come in, decoded by espgrid itself: base64 (inline
// "binary" arrays and encoded appended data) and the block compressors VTK 9 writes (zlib, LZ4,
// LZMA). VTK's own reader dereferenced null block tables on damaged files (fuzz_map, three
// SIGSEGVs), so the .vti reader no longer hands any file to VTK.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace espgrid::vti {

enum class Compressor { None, ZLib, Lz4, Lzma };

/// The compressor VTK names in a file's `compressor` attribute; nullopt for any other name.
std::optional<Compressor> compressor_named(std::string_view name);
/// Whether this build can decompress it (zlib, liblz4, liblzma are optional build dependencies).
bool can_decompress(Compressor compressor);
/// The Debian package a build needs to decompress it.
const char* package_for(Compressor compressor);

/// Decodes base64 (RFC 4648; '=' padding only at the end). nullopt on any other character, a
/// length that is not a multiple of 4, or padding in the middle.
std::optional<std::string> base64_decode(std::string_view text);

/// Decompresses one block of `packed` bytes into exactly `out_size` bytes at `out`. Returns
/// an empty string on success, else what went wrong (the library's words), for the caller's
/// error message; a block that decompresses to more or fewer bytes is an error.
std::string decompress_block(Compressor compressor, std::string_view packed, char* out, std::size_t out_size);

}  // namespace espgrid::vti
