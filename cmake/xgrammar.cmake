# weft::xgrammar: xgrammar's C++ core (static), built and installed by scripts/install-xgrammar.sh
# into a cache outside the tree. WEFT_XGRAMMAR_ROOT names that prefix; its default is the
# script's: $WEFT_XGRAMMAR_ROOT, else ${XDG_CACHE_HOME:-~/.cache}/weft-deps/xgrammar-0.2.9.
set(WEFT_XGRAMMAR_VERSION 0.2.9)
if(DEFINED ENV{WEFT_XGRAMMAR_ROOT})
  set(_weft_xgrammar_default "$ENV{WEFT_XGRAMMAR_ROOT}")
elseif(DEFINED ENV{XDG_CACHE_HOME})
  set(_weft_xgrammar_default "$ENV{XDG_CACHE_HOME}/weft-deps/xgrammar-${WEFT_XGRAMMAR_VERSION}")
else()
  set(_weft_xgrammar_default "$ENV{HOME}/.cache/weft-deps/xgrammar-${WEFT_XGRAMMAR_VERSION}")
endif()
set(WEFT_XGRAMMAR_ROOT "${_weft_xgrammar_default}" CACHE PATH
    "Install prefix of xgrammar ${WEFT_XGRAMMAR_VERSION} (scripts/install-xgrammar.sh)")

find_library(WEFT_XGRAMMAR_LIBRARY NAMES libxgrammar.a xgrammar
             PATHS "${WEFT_XGRAMMAR_ROOT}" PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
find_path(WEFT_XGRAMMAR_INCLUDE_DIR xgrammar/xgrammar.h
          PATHS "${WEFT_XGRAMMAR_ROOT}" PATH_SUFFIXES include NO_DEFAULT_PATH)
if(NOT WEFT_XGRAMMAR_LIBRARY OR NOT WEFT_XGRAMMAR_INCLUDE_DIR
   OR NOT EXISTS "${WEFT_XGRAMMAR_INCLUDE_DIR}/dlpack/dlpack.h")
  unset(WEFT_XGRAMMAR_LIBRARY CACHE)
  unset(WEFT_XGRAMMAR_INCLUDE_DIR CACHE)
  message(FATAL_ERROR
    "xgrammar ${WEFT_XGRAMMAR_VERSION} (src/constrain's grammar engine) was not found under "
    "WEFT_XGRAMMAR_ROOT=${WEFT_XGRAMMAR_ROOT} (expected lib/libxgrammar.a and "
    "include/xgrammar/xgrammar.h). Run scripts/install-xgrammar.sh (scripts/install-deps.sh "
    "runs it), pass -DWEFT_XGRAMMAR_ROOT=<prefix> for an install elsewhere, or configure with "
    "-DWEFT_CONSTRAIN=OFF to build without constrained output.")
endif()

add_library(weft_xgrammar_imported STATIC IMPORTED GLOBAL)
set_target_properties(weft_xgrammar_imported PROPERTIES
  IMPORTED_LOCATION "${WEFT_XGRAMMAR_LIBRARY}"
  # SYSTEM: weft's warning flags do not apply to xgrammar's headers.
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${WEFT_XGRAMMAR_INCLUDE_DIR}"
  INTERFACE_INCLUDE_DIRECTORIES "${WEFT_XGRAMMAR_INCLUDE_DIR}"
  INTERFACE_COMPILE_DEFINITIONS "XGRAMMAR_ENABLE_CPPTRACE=0;XGRAMMAR_ENABLE_INTERNAL_CHECK=0"
  INTERFACE_LINK_LIBRARIES Threads::Threads)
add_library(weft::xgrammar ALIAS weft_xgrammar_imported)
message(STATUS "xgrammar: ${WEFT_XGRAMMAR_LIBRARY}")
