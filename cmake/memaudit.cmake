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
# target compiles them once as a precompiled header (engine/torch_api.h,
# only the LibTorch headers the engine uses). Targets other than
# memaudit_engine reuse its header (same flags), so it is built once.
# Loading it costs about 3 s a file: files that do not use LibTorch skip it
# (memaudit_skip_torch_pch).
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
    target_precompile_headers(memaudit_engine PRIVATE ${PROJECT_SOURCE_DIR}/engine/torch_api.h)
  else()
    target_precompile_headers(${target} REUSE_FROM memaudit_engine)
  endif()
endfunction()

# memaudit_skip_torch_pch(source...): sources of an engine target that include
# no LibTorch header, directly or through engine headers.
function(memaudit_skip_torch_pch)
  set_source_files_properties(${ARGN} DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                              PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
endfunction()

# Each audit kind's files of one layer: audits/<kind>/<layer>*.cc, found by
# name so that a kind's folder joins every layer without a line elsewhere.
# Sets <layer>_kind_sources and <layer>_kind_tests in the caller's scope.
function(memaudit_kind_files layer)
  file(GLOB files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/audits/*/${layer}*.cc)
  set(sources)
  set(tests)
  foreach(file IN LISTS files)
    if(file MATCHES "_test\\.cc$")
      list(APPEND tests ${file})
    else()
      list(APPEND sources ${file})
    endif()
  endforeach()
  set(${layer}_kind_sources ${sources} PARENT_SCOPE)
  set(${layer}_kind_tests ${tests} PARENT_SCOPE)
endfunction()
