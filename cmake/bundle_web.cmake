# Bundles the viewer library for `espgrid view` pages (docs/viz.md, "Interactive view"), run by
# the build (cmake -P) when web/package-lock.json changes:
#   npm ci in WORK (a copy of web/package.json and web/package-lock.json: exact versions, each
#   checked against the lock file's integrity hash), then 3Dmol-min.js, its licence notice and
#   "3Dmol.js VERSION" into OUT.
# With REQUIRED OFF (ESPGRID_WEB=AUTO) a failure (no network, no npm registry) leaves
# OUT/unavailable.txt saying why, which `espgrid view` reports; with REQUIRED ON it fails the build.
# Arguments: NPM, SOURCE (web/), WORK, OUT, REQUIRED, STAMP.
file(MAKE_DIRECTORY "${WORK}" "${OUT}")
file(REMOVE "${OUT}/unavailable.txt")
configure_file("${SOURCE}/package.json" "${WORK}/package.json" COPYONLY)
configure_file("${SOURCE}/package-lock.json" "${WORK}/package-lock.json" COPYONLY)
# --ignore-scripts: no package runs code at install; playwright-core downloads no browser.
execute_process(COMMAND "${NPM}" ci --ignore-scripts --no-audit --no-fund --loglevel=error
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 600)
set(lib "${WORK}/node_modules/3dmol/build/3Dmol-min.js")
if(NOT rc EQUAL 0 OR NOT EXISTS "${lib}")
  string(STRIP "${err}" err)
  string(REGEX REPLACE "\n.*" "" first_line "${err}")
  set(why "npm ci in ${WORK} failed (exit ${rc}): ${first_line}")
  if(REQUIRED)
    message(FATAL_ERROR "espgrid: ${why}\n${err}")
  endif()
  message(WARNING "espgrid: ${why}; `espgrid view` will say so (build with -DESPGRID_WEB=OFF to skip this step)")
  file(WRITE "${OUT}/unavailable.txt" "${why}\n")
  file(WRITE "${STAMP}" "unavailable\n")
  return()
endif()
file(READ "${WORK}/node_modules/3dmol/package.json" package)
string(JSON version GET "${package}" version)
configure_file("${lib}" "${OUT}/3Dmol-min.js" COPYONLY)
configure_file("${WORK}/node_modules/3dmol/build/3Dmol-min.js.LICENSE.txt" "${OUT}/3Dmol-min.js.LICENSE.txt" COPYONLY)
file(WRITE "${OUT}/library-version.txt" "3Dmol.js ${version}\n")
file(WRITE "${STAMP}" "3Dmol.js ${version}\n")
