// `espgrid view`'s page: one self-contained HTML file with the viewer library (3Dmol.js,
// bundled at build time from web/, pinned by web/package-lock.json), the page's own script
// and style (web/src/), the structure and the surfaces inlined. Nothing is fetched when it
// opens: it works from file:// and can be mailed. docs/viz.md, "Interactive view".
#pragma once

#include <string>
#include <vector>

#include "src/view/view_scene.h"

namespace espgrid {

/// The files a page is made of, read from the web directory.
struct WebAssets {
  std::string directory;        ///< where they were found
  std::string library;          ///< 3Dmol-min.js
  std::string library_notice;   ///< its licence notice (3Dmol-min.js.LICENSE.txt and the package's licence line)
  std::string library_version;  ///< "3Dmol.js 2.5.5"
  std::string page_template;    ///< page.html
  std::string viewer_script;    ///< viewer.js
};

/// The directories searched for the web assets, in order: the build tree's web/ (where
/// `cmake --build` puts them), PREFIX/share/espgrid/web beside the running program
/// (bin/../share/espgrid/web) and the configured install directory; only $ESPGRID_WEB_DIR
/// when it is set.
std::vector<std::string> web_asset_directories();
/// Reads the assets from the first directory that has them all; Error naming every directory
/// tried and what to do (the build bundles 3Dmol.js only where Node.js and npm were found)
/// otherwise.
WebAssets load_web_assets();

/// What the page says about itself beside the scene.
struct ViewPageText {
  std::string title;          ///< the heading: the map's file name
  std::string subtitle;       ///< e.g. "fasciculin2.pqr: 906 atoms, total charge +4.05 e"
  std::string structure_pdb;  ///< the atoms as PDB text (view/display_structure.h); empty: no atoms drawn
  bool cartoon = false;       ///< the structure has residues a cartoon can be drawn from
};

/// Sizes of what went into a page, bytes, for the summary.
struct ViewPageSizes {
  std::size_t total = 0, library = 0, surface = 0, isosurfaces = 0, atoms = 0;
  bool compressed = false;  ///< data blocks gzip-compressed (built with zlib)
};

/// The page's HTML.
std::string view_page_html(const surface::ViewScene& scene, const ViewPageText& text, const WebAssets& assets,
                           ViewPageSizes* sizes = nullptr);

/// Writes `html` to `path` atomically (os/atomic_output_file.h): the page appears whole or not at all.
void write_text_file_atomically(const std::string& path, const std::string& html);

/// Base64 (RFC 4648, no line breaks) of `bytes`.
std::string base64(const std::string& bytes);
/// gzip (RFC 1952) of `bytes` when this build has zlib; false (and `out` untouched) without it.
bool gzip_bytes(const std::string& bytes, std::string& out);

}  // namespace espgrid
