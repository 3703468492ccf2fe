#include "src/maps/vti_decoding.h"

#include <array>
#include <cstdint>
#include <limits>

#if ESPGRID_HAVE_ZLIB
#include <zlib.h>
#endif
#if ESPGRID_HAVE_LZ4
#include <lz4.h>
#endif
#if ESPGRID_HAVE_LZMA
#include <lzma.h>
#endif

namespace espgrid::vti {

std::optional<Compressor> compressor_named(std::string_view name) {
  if (name == "vtkZLibDataCompressor") return Compressor::ZLib;
  if (name == "vtkLZ4DataCompressor") return Compressor::Lz4;
  if (name == "vtkLZMADataCompressor") return Compressor::Lzma;
  return std::nullopt;
}

bool can_decompress(Compressor compressor) {
  switch (compressor) {
    case Compressor::None:
      return true;
    case Compressor::ZLib:
      return ESPGRID_HAVE_ZLIB;
    case Compressor::Lz4:
      return ESPGRID_HAVE_LZ4;
    case Compressor::Lzma:
      return ESPGRID_HAVE_LZMA;
  }
  return false;
}

const char* package_for(Compressor compressor) {
  switch (compressor) {
    case Compressor::ZLib:
      return "zlib1g-dev";
    case Compressor::Lz4:
      return "liblz4-dev";
    case Compressor::Lzma:
      return "liblzma-dev";
    case Compressor::None:
      break;
  }
  return "";
}

std::optional<std::string> base64_decode(std::string_view text) {
  static constexpr auto kValue = [] {
    std::array<std::int8_t, 256> value{};
    value.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) value[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
    return value;
  }();
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    // "xx==" and "xxx=" end the text; '=' anywhere else is an error.
    const int padding = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
    std::uint32_t group = 0;
    for (int k = 0; k < 4; ++k) {
      const bool pad = k >= 4 - padding;
      const std::int8_t v = pad ? 0 : kValue[static_cast<unsigned char>(text[i + k])];
      if (v < 0) return std::nullopt;
      group = group << 6 | static_cast<std::uint32_t>(v);
    }
    out.push_back(static_cast<char>(group >> 16));
    if (padding < 2) out.push_back(static_cast<char>(group >> 8 & 0xff));
    if (padding < 1) out.push_back(static_cast<char>(group & 0xff));
  }
  return out;
}

std::string decompress_block(Compressor compressor, std::string_view packed, char* out, std::size_t out_size) {
  switch (compressor) {
    case Compressor::None:
      if (packed.size() != out_size) return "an uncompressed block of the wrong size";
      packed.copy(out, out_size);
      return {};
    case Compressor::ZLib: {
#if ESPGRID_HAVE_ZLIB
      if (packed.size() > std::numeric_limits<uLong>::max() || out_size > std::numeric_limits<uLongf>::max())
        return "a block too large for zlib";
      uLongf produced = static_cast<uLongf>(out_size);
      const int rc = uncompress(reinterpret_cast<Bytef*>(out), &produced, reinterpret_cast<const Bytef*>(packed.data()),
                                static_cast<uLong>(packed.size()));
      if (rc == Z_BUF_ERROR && produced == out_size) return "zlib: the block holds more bytes than its table says";
      if (rc != Z_OK) return std::string("zlib: ") + zError(rc);
      if (produced != out_size)
        return "zlib: the block holds " + std::to_string(produced) + " bytes, not " + std::to_string(out_size);
      return {};
#else
      break;
#endif
    }
    case Compressor::Lz4: {
#if ESPGRID_HAVE_LZ4
      if (packed.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
          out_size > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        return "a block too large for LZ4";
      const int produced =
          LZ4_decompress_safe(packed.data(), out, static_cast<int>(packed.size()), static_cast<int>(out_size));
      if (produced < 0) return "LZ4: the block is not valid LZ4 data";
      if (static_cast<std::size_t>(produced) != out_size)
        return "LZ4: the block holds " + std::to_string(produced) + " bytes, not " + std::to_string(out_size);
      return {};
#else
      break;
#endif
    }
    case Compressor::Lzma: {
#if ESPGRID_HAVE_LZMA
      std::uint64_t memory_limit = std::uint64_t{1} << 30;  // far above what VTK's 32 KiB blocks need
      std::size_t in_pos = 0, out_pos = 0;
      const lzma_ret rc =
          lzma_stream_buffer_decode(&memory_limit, 0, nullptr, reinterpret_cast<const std::uint8_t*>(packed.data()),
                                    &in_pos, packed.size(), reinterpret_cast<std::uint8_t*>(out), &out_pos, out_size);
      if (rc == LZMA_BUF_ERROR && out_pos == out_size) return "LZMA: the block holds more bytes than its table says";
      if (rc != LZMA_OK) return "LZMA: the block is not a valid .xz stream (liblzma error " + std::to_string(rc) + ")";
      if (out_pos != out_size)
        return "LZMA: the block holds " + std::to_string(out_pos) + " bytes, not " + std::to_string(out_size);
      if (in_pos != packed.size()) return "LZMA: bytes after the block's .xz stream";
      return {};
#else
      break;
#endif
    }
  }
  return std::string("this build cannot decompress it (install ") + package_for(compressor) + " and rebuild)";
}

}  // namespace espgrid::vti
