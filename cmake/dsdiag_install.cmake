# `cmake --install`: the probes as a CMake package, the command line beside them.
#
#   <prefix>/include/dsdiag/{trace,probes}/...   headers (the include root is include/dsdiag,
#                                                 so "probes/session.h" reads as in this tree)
#   <prefix>/lib/libdsdiag_{trace,probes,probes_torch}.a
#   <prefix>/lib/cmake/dsdiag/dsdiagConfig.cmake  find_package(dsdiag): dsdiag::probes, ...
#   <prefix>/bin/dsdiag (and dsdiag-torch)
# The same names work with add_subdirectory(dsdiag): each library has a dsdiag:: alias.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(dsdiag_exported dsdiag_trace dsdiag_probes)
if(DSDIAG_HAVE_TORCH)
  list(APPEND dsdiag_exported dsdiag_probes_torch)
endif()
install(TARGETS ${dsdiag_exported} EXPORT dsdiagTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dsdiag)
foreach(dir trace probes)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dsdiag/${dir}
    FILES_MATCHING PATTERN "*.h")
endforeach()
install(EXPORT dsdiagTargets NAMESPACE dsdiag:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dsdiag)

set(DSDIAG_HAVE_ZSTD ${DSDIAG_HAVE_ZSTD})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/dsdiagConfig.cmake.in
  ${PROJECT_BINARY_DIR}/dsdiagConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dsdiag)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dsdiagConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/dsdiagConfig.cmake ${PROJECT_BINARY_DIR}/dsdiagConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dsdiag)

install(TARGETS dsdiag RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET dsdiag-torch)
  install(TARGETS dsdiag-torch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
