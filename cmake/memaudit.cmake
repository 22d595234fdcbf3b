# memaudit_test(NAME SOURCES src... LIBS lib... [LABELS label...])
# Builds a GoogleTest binary and registers each of its tests with CTest.
function(memaudit_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()

# LibTorch's headers are most of the engine's compile time; each engine
# target compiles them once as a precompiled header. Targets other than
# memaudit_engine reuse its header (same flags), so it is built once.
option(MEMAUDIT_PCH "Precompile LibTorch's headers for the engine's targets" ON)
function(memaudit_torch_pch target)
  # -fPIC like memaudit_engine (the worker's engine module links it): a
  # shared precompiled header needs the same of every user, executables
  # included (where POSITION_INDEPENDENT_CODE would mean -fPIE). Calls inside
  # the project stay direct (no interposition in a module).
  target_compile_options(${target} PRIVATE -fPIC -fno-semantic-interposition)
  if(NOT MEMAUDIT_PCH)
    return()
  endif()
  if(target STREQUAL "memaudit_engine")
    target_precompile_headers(memaudit_engine PRIVATE <torch/torch.h>)
  else()
    target_precompile_headers(${target} REUSE_FROM memaudit_engine)
  endif()
endfunction()
