# Installs kiln as a relocatable CMake package (find_package(kiln) -> kiln::kiln) and a .pc file.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS kiln EXPORT kilnTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

configure_package_config_file(cmake/kilnConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/kilnConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kilnConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kilnConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/kilnConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

# pkg-config: paths relative to the .pc file's prefix so the install tree can be moved.
set(KILN_PC_LIBS "-lkiln")
if(NOT BUILD_SHARED_LIBS)
  set(KILN_PC_LIBS_PRIVATE "-lopenblas -fopenmp -lpthread")
  # A static GPU build also needs the vendor runtime at the consumer's link.
  if(KILN_GPU_BACKEND STREQUAL "cuda")
    string(APPEND KILN_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt")
  elseif(KILN_GPU_BACKEND STREQUAL "hip")
    string(APPEND KILN_PC_LIBS_PRIVATE " -lamdhip64")
  endif()
endif()
configure_file(cmake/kiln.pc.in ${CMAKE_CURRENT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
