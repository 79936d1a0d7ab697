# `cmake --install BUILD --prefix P`: the tools, the embeddable runtime and its CMake package.
#   P/bin/stofc, P/bin/stof-run
#   P/lib/libstof.so            the C API (stof/c_api.h)
#   P/include/stof/c_api.h
#   P/lib/cmake/stof/           find_package(stof): stof::stof (library + header),
#                               stof::stofc and stof::stof-run (imported executables)
include(CMakePackageConfigHelpers)

install(TARGETS stofc stof-run stof EXPORT stofTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/stof/c_api.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/stof)

set(STOF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/stof)
install(EXPORT stofTargets NAMESPACE stof:: DESTINATION ${STOF_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/stofConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/generated/stofConfig.cmake INSTALL_DESTINATION ${STOF_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/generated/stofConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/generated/stofConfig.cmake ${CMAKE_BINARY_DIR}/generated/stofConfigVersion.cmake
        DESTINATION ${STOF_CMAKE_DIR})
