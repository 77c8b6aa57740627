# The Python lanes: the interpreters the dsdiag package is built for and its tests run on,
# configured in this one place as DSDIAG_PYTHONS, a list of LANE=INTERPRETER pairs
# (scripts/setup passes "torch2=<venv>/bin/python;debian=/usr/bin/python3"). The first lane
# is the one pybind11 builds dsdiag._core with; python/CMakeLists.txt adds an extension for
# every other lane whose ABI differs (Debian 13's python3 is 3.13, torch 2.13's wheel 3.11).
#
# Sets DSDIAG_PYTHON_LANES (the lane names, in order) and DSDIAG_PYTHON_<LANE> (its
# interpreter) for each; Python_EXECUTABLE to the first lane's interpreter unless given.
set(DSDIAG_PYTHONS "" CACHE STRING
    "Python lanes as LANE=INTERPRETER;... (default: debian=/usr/bin/python3 where it exists)")
set(dsdiag_pythons "${DSDIAG_PYTHONS}")
if(NOT dsdiag_pythons AND Python_EXECUTABLE)
  set(dsdiag_pythons "default=${Python_EXECUTABLE}")
elseif(NOT dsdiag_pythons AND EXISTS /usr/bin/python3)
  set(dsdiag_pythons "debian=/usr/bin/python3")
endif()

set(DSDIAG_PYTHON_LANES "")
foreach(pair IN LISTS dsdiag_pythons)
  if(NOT pair MATCHES "^([A-Za-z0-9_.-]+)=(.+)$")
    message(FATAL_ERROR "DSDIAG_PYTHONS: '${pair}' is not LANE=INTERPRETER "
                        "(e.g. torch2=/path/to/venv/bin/python)")
  endif()
  set(lane ${CMAKE_MATCH_1})
  set(interpreter ${CMAKE_MATCH_2})
  if(NOT EXISTS "${interpreter}")
    message(FATAL_ERROR "DSDIAG_PYTHONS: lane '${lane}': no interpreter at ${interpreter}")
  endif()
  list(APPEND DSDIAG_PYTHON_LANES ${lane})
  set(DSDIAG_PYTHON_${lane} "${interpreter}")
endforeach()

if(DSDIAG_PYTHON_LANES AND NOT Python_EXECUTABLE)
  list(GET DSDIAG_PYTHON_LANES 0 dsdiag_first_lane)
  set(Python_EXECUTABLE "${DSDIAG_PYTHON_${dsdiag_first_lane}}")
endif()
