# Chooses the GPU backend from KILN_GPU (auto|cuda|hip|none), sets KILN_GPU_BACKEND and builds the
# .cu files of src/kernels/gpu and src/backend/gpu as CUDA or as HIP (one source tree for both).
# auto picks cuda when nvcc is usable, else hip when a HIP compiler is, else none.
set(KILN_GPU_BACKEND "none")
set(KILN_GPU_SOURCES "")
file(GLOB_RECURSE _kiln_cu_files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/gpu/*.cu
     ${CMAKE_CURRENT_SOURCE_DIR}/src/backend/gpu/*.cu)
option(KILN_SM90_KERNELS "Build the Hopper (sm_90a) kernels when the architectures include 90" ON)
# Hopper-only kernels (wgmma, setmaxnreg, TMA): a separate sm_90a object library, CUDA builds
# whose architecture list has 90 only (_kiln_gpu_finish_target).
file(GLOB_RECURSE _kiln_sm90_files CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/gpu/attention/sm90/*.cu)
if(_kiln_sm90_files)
  list(REMOVE_ITEM _kiln_cu_files ${_kiln_sm90_files})
endif()

if(KILN_GPU STREQUAL "auto")
  if(NOT _kiln_cu_files)
    message(STATUS "kiln: KILN_GPU=auto: no GPU sources in this tree yet; building without GPU")
  else()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      set(KILN_GPU_BACKEND "cuda")
    else()
      check_language(HIP)
      # enable_language(HIP) also needs ROCm's hip-lang CMake package (some distributions ship
      # hipcc without it): without it, fall back to none rather than fail.
      find_file(_kiln_hip_lang hip-lang-config.cmake PATHS $ENV{ROCM_PATH} /opt/rocm /usr
                PATH_SUFFIXES lib/cmake/hip-lang lib64/cmake/hip-lang NO_CACHE)
      if(CMAKE_HIP_COMPILER AND _kiln_hip_lang)
        set(KILN_GPU_BACKEND "hip")
      else()
        message(STATUS "kiln: KILN_GPU=auto found neither nvcc nor a HIP compiler; building without GPU")
      endif()
    endif()
  endif()
elseif(KILN_GPU STREQUAL "cuda" OR KILN_GPU STREQUAL "hip")
  if(NOT _kiln_cu_files)
    message(FATAL_ERROR "kiln: KILN_GPU=${KILN_GPU} but this tree has no GPU sources yet")
  endif()
  set(KILN_GPU_BACKEND "${KILN_GPU}")
elseif(NOT KILN_GPU STREQUAL "none")
  message(FATAL_ERROR "kiln: KILN_GPU must be auto, cuda, hip or none (got '${KILN_GPU}')")
endif()

if(KILN_GPU_BACKEND STREQUAL "cuda")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "GPU architectures to build for")
  endif()
  enable_language(CUDA)
  # C++20 after enable_language (the compiler check must not ask for it). CMake < 3.26 does not
  # know nvcc's C++20 flag: tell it.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  find_package(CUDAToolkit REQUIRED)
  set(KILN_GPU_SOURCES ${_kiln_cu_files})
  set_source_files_properties(${KILN_GPU_SOURCES} PROPERTIES LANGUAGE CUDA)
  # The runtime is linked statically; the driver is reached through
  # cudaGetDriverEntryPointByVersion, so binaries start where no driver is installed (and say
  # that no GPU is available). cuBLAS & co. join this list when kiln code uses them.
  set(KILN_GPU_LIBRARIES CUDA::cudart_static)
  set(KILN_GPU_ARCH_LIST "${CMAKE_CUDA_ARCHITECTURES}")
  set(KILN_GPU_COMPILE_OPTIONS
      $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-fvisibility-inlines-hidden>)
elseif(KILN_GPU_BACKEND STREQUAL "hip")
  if(NOT DEFINED CMAKE_HIP_ARCHITECTURES OR CMAKE_HIP_ARCHITECTURES STREQUAL "")
    set(CMAKE_HIP_ARCHITECTURES "gfx90a;gfx942" CACHE STRING "GPU architectures to build for")
  endif()
  enable_language(HIP)
  set(CMAKE_HIP_STANDARD 20)
  set(CMAKE_HIP_STANDARD_REQUIRED ON)
  set(CMAKE_HIP_EXTENSIONS OFF)
  find_package(hip REQUIRED)
  set(KILN_GPU_SOURCES ${_kiln_cu_files})
  set_source_files_properties(${KILN_GPU_SOURCES} PROPERTIES LANGUAGE HIP)
  set(KILN_GPU_LIBRARIES hip::host)
  set(KILN_GPU_ARCH_LIST "${CMAKE_HIP_ARCHITECTURES}")
  # HIP declares the device intrinsics kiln/half.h uses in hip_runtime.h, which hipcc does not
  # include by itself; force it here so no header outside vendor/ names a vendor header.
  set(KILN_GPU_COMPILE_OPTIONS "$<$<COMPILE_LANGUAGE:HIP>:SHELL:-include hip/hip_runtime.h>")
endif()
string(TOUPPER "${KILN_GPU_BACKEND}" KILN_GPU_BACKEND_UPPER)
message(STATUS "kiln: GPU backend: ${KILN_GPU_BACKEND}")

# The kiln target is made after this file is included: attach the GPU libraries and options once
# the top-level CMakeLists.txt has been read.
function(_kiln_gpu_finish_target)
  if(KILN_GPU_BACKEND STREQUAL "none" OR NOT TARGET kiln)
    return()
  endif()
  target_link_libraries(kiln PRIVATE ${KILN_GPU_LIBRARIES})
  target_compile_options(kiln PRIVATE ${KILN_GPU_COMPILE_OPTIONS})
  # Commas, not semicolons: a CMake list would split the definition. Only the file that reports
  # it gets it, so the other sources compile (and hit ccache) alike for every architecture list.
  string(REPLACE ";" "," _archs "${KILN_GPU_ARCH_LIST}")
  set_property(SOURCE ${CMAKE_SOURCE_DIR}/src/backend/gpu/cuda_api.cu APPEND PROPERTY
               COMPILE_DEFINITIONS "KILN_GPU_ARCHS=\"${_archs}\"")
  # sm_90a objects (wgmma and setmaxnreg need the architecture-specific target; nvcc 13.0 takes
  # it in the -gencode form). Their objects go into libkiln itself, so install/export and
  # kilnConfig see one library.
  set(_has90 OFF)
  foreach(_a IN LISTS KILN_GPU_ARCH_LIST)
    if(_a MATCHES "^90")
      set(_has90 ON)
    endif()
  endforeach()
  if(KILN_GPU_BACKEND STREQUAL "cuda" AND _has90 AND _kiln_sm90_files AND KILN_SM90_KERNELS)
    add_library(kiln_sm90 OBJECT ${_kiln_sm90_files})
    set_source_files_properties(${_kiln_sm90_files} PROPERTIES LANGUAGE CUDA)
    set_target_properties(kiln_sm90 PROPERTIES CUDA_ARCHITECTURES OFF
                                               POSITION_INDEPENDENT_CODE ON)
    target_compile_features(kiln_sm90 PRIVATE cxx_std_20)
    target_include_directories(kiln_sm90 PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
    target_compile_definitions(kiln_sm90 PRIVATE KILN_GPU_BACKEND_CUDA=1)
    target_compile_options(kiln_sm90 PRIVATE ${KILN_GPU_COMPILE_OPTIONS}
                           $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_90a,code=sm_90a>)
    target_sources(kiln PRIVATE $<TARGET_OBJECTS:kiln_sm90>)
    # Only the dispatching file needs to know (the others keep their ccache entries).
    set_property(SOURCE ${CMAKE_SOURCE_DIR}/src/kernels/gpu/attention/attention_kernels.cu APPEND
                 PROPERTY COMPILE_DEFINITIONS KILN_HAVE_SM90=1)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _kiln_gpu_finish_target)
