# The C++ standard LibTorch's headers need, which dsdiag's torch targets (and, through
# dsdiag_probes_torch's PUBLIC compile feature, whatever links them) are compiled with: ATen.h
# stops with an #error below it (C++14 for Debian's 1.13, C++17 for torch 2.13, C++20 from
# torch 2.14 on), and CMake's imported torch target does not pass its CXX_STANDARD on. So read
# the bound off the header itself rather than a table of versions; never below the project's
# own standard.
#
# Sets DSDIAG_TORCH_CXX_STANDARD (17 or 20, ...).
set(DSDIAG_TORCH_CXX_STANDARD ${CMAKE_CXX_STANDARD})
find_file(DSDIAG_ATEN_HEADER ATen/ATen.h HINTS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH
          NO_CACHE)
if(DSDIAG_ATEN_HEADER)
  file(STRINGS "${DSDIAG_ATEN_HEADER}" aten_bound REGEX "__cplusplus < 20[0-9][0-9]0[0-9]L")
  if(aten_bound MATCHES "__cplusplus < 20([0-9][0-9])0[0-9]L")
    # __cplusplus is the standard's year and month: 201703L is C++17, 202002L is C++20.
    set(aten_standard ${CMAKE_MATCH_1})
    if(aten_standard GREATER DSDIAG_TORCH_CXX_STANDARD)
      set(DSDIAG_TORCH_CXX_STANDARD ${aten_standard})
    endif()
  endif()
endif()
