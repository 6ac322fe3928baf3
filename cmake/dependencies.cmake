# Third-party dependencies: threads, OpenMP, OpenBLAS (GEMM) and LAPACKE.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)

if(KILN_STATIC_DEPS)
  # Archives only: a shared libopenblas found here would make binaries that need it at run time.
  # Debian keeps the archive under the variant's directory (openblas-pthread/...).
  find_library(KILN_OPENBLAS_LIB NAMES libopenblas.a
               PATH_SUFFIXES openblas-pthread openblas-openmp openblas REQUIRED)
  # OpenBLAS's LAPACK is Fortran: its runtime archives live in the compiler's own directory,
  # which find_library does not search; the compiler knows where.
  foreach(_n GFORTRAN QUADMATH)
    string(TOLOWER ${_n} _lib)
    if(NOT KILN_${_n}_LIB)
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${_lib}.a
                      OUTPUT_VARIABLE _path OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(IS_ABSOLUTE "${_path}" AND EXISTS "${_path}")
        set(KILN_${_n}_LIB "${_path}" CACHE FILEPATH "lib${_lib}.a for KILN_STATIC_DEPS")
      endif()
    endif()
  endforeach()
  if(NOT KILN_GFORTRAN_LIB)
    message(FATAL_ERROR "kiln: KILN_STATIC_DEPS needs libgfortran.a (Debian: libgfortran-12-dev); "
                        "set KILN_GFORTRAN_LIB to its path")
  endif()
  set(KILN_BLAS_LIBRARIES ${KILN_OPENBLAS_LIB} ${KILN_GFORTRAN_LIB})
  if(KILN_QUADMATH_LIB)
    list(APPEND KILN_BLAS_LIBRARIES ${KILN_QUADMATH_LIB})
  endif()
else()
  find_library(KILN_OPENBLAS_LIB NAMES openblas REQUIRED)
  set(KILN_BLAS_LIBRARIES ${KILN_OPENBLAS_LIB})
endif()
find_path(KILN_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas openblas-pthread REQUIRED)
include_directories(SYSTEM ${KILN_CBLAS_INCLUDE})
