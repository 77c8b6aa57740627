# Whether c10d's Gloo backend can be built against here, which the reference trainer and the
# README's loop need (they construct a ProcessGroupGloo). LibTorch says it has the backend
# (USE_C10D_GLOO on its targets) whenever it was built with it, but the backend's header
# includes Gloo's own headers, which not every LibTorch ships: Debian's comes with
# libgloo-dev; a torch wheel's ships none, and builds with Debian's (2022) headers found in
# /usr/include (ProcessGroupGloo.hpp guards the newer store interface it would override, and
# dsdiag only holds Gloo devices through shared_ptrs libtorch makes). Without any, the
# probes' torch adapters build alone. So: compile the header once, at configure time.
#
# Sets DSDIAG_HAVE_C10D_GLOO (cached per LibTorch and C++ standard: the check reruns when
# Torch_DIR or DSDIAG_TORCH_CXX_STANDARD changes).
include(CheckCXXSourceCompiles)
set(dsdiag_c10d_gloo_key "${Torch_DIR} C++${DSDIAG_TORCH_CXX_STANDARD}")
if(NOT DSDIAG_C10D_GLOO_CHECKED_FOR STREQUAL dsdiag_c10d_gloo_key)
  unset(DSDIAG_HAVE_C10D_GLOO CACHE)
endif()
# LibTorch's include directories and definitions as its targets give them (the imported
# targets themselves do not carry into try_compile's project).
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)  # compile only: nothing to link
set(CMAKE_REQUIRED_INCLUDES ${TORCH_INCLUDE_DIRS})
set(CMAKE_REQUIRED_DEFINITIONS "")
foreach(target torch torch_cpu)
  if(TARGET ${target})
    get_target_property(definitions ${target} INTERFACE_COMPILE_DEFINITIONS)
    foreach(definition IN LISTS definitions)
      if(definition AND NOT definition MATCHES "\\$<")
        list(APPEND CMAKE_REQUIRED_DEFINITIONS -D${definition})
      endif()
    endforeach()
  endif()
endforeach()
set(CMAKE_REQUIRED_FLAGS "${TORCH_CXX_FLAGS}")
# The standard the torch targets compile with (cmake/dsdiag_torch_cxx_standard.cmake):
# try_compile passes CMAKE_CXX_STANDARD on, after any -std= of the flags.
set(dsdiag_project_cxx_standard ${CMAKE_CXX_STANDARD})
set(CMAKE_CXX_STANDARD ${DSDIAG_TORCH_CXX_STANDARD})
set(CMAKE_REQUIRED_QUIET ON)
check_cxx_source_compiles([[
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#ifndef USE_C10D_GLOO
#error "this LibTorch was built without c10d's Gloo backend"
#endif
int dsdiag_gloo_check() { return sizeof(c10d::ProcessGroupGloo::Options); }
]] DSDIAG_HAVE_C10D_GLOO)
unset(CMAKE_TRY_COMPILE_TARGET_TYPE)
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_DEFINITIONS)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_QUIET)
set(CMAKE_CXX_STANDARD ${dsdiag_project_cxx_standard})
set(DSDIAG_C10D_GLOO_CHECKED_FOR "${dsdiag_c10d_gloo_key}" CACHE INTERNAL "")
