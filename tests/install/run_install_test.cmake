# Installs the build tree into a temporary prefix, moves it (relocatability), then builds and
# runs a consumer through find_package(kiln) and through pkg-config.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${KILN_BUILD_DIR} --prefix ${WORK_DIR}/prefix0
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
file(RENAME ${WORK_DIR}/prefix0 ${WORK_DIR}/moved)
set(prefix ${WORK_DIR}/moved)

execute_process(COMMAND ${CMAKE_COMMAND} -S ${KILN_SOURCE_DIR}/tests/install/consumer
                -B ${WORK_DIR}/build -G Ninja -DCMAKE_PREFIX_PATH=${prefix}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer configure failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer build failed")
endif()
execute_process(COMMAND ${WORK_DIR}/build/consumer OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "consumer ok 6")
  message(FATAL_ERROR "consumer run failed (${rc}): ${out}")
endif()

# pkg-config route
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs --static kiln OUTPUT_VARIABLE flags
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config failed")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  execute_process(COMMAND c++ ${KILN_SOURCE_DIR}/tests/install/consumer/main.cpp ${flags}
                  -o ${WORK_DIR}/consumer_pc RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config consumer build failed")
  endif()
  execute_process(COMMAND ${WORK_DIR}/consumer_pc OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "consumer ok 6")
    message(FATAL_ERROR "pkg-config consumer run failed (${rc}): ${out}")
  endif()
endif()
message(STATUS "install consumer: ok")
