# The engine's benchmarks, included from bench/CMakeLists.txt. Each prints its
# ratio against a baseline measured in the same run and the command to rerun it.
add_library(memaudit_bench_lm STATIC lm_fixture.cc)
target_link_libraries(memaudit_bench_lm PUBLIC memaudit_engine ${TORCH_LIBRARIES})
target_include_directories(memaudit_bench_lm SYSTEM PUBLIC ${TORCH_INCLUDE_DIRS})
memaudit_torch_pch(memaudit_bench_lm)

foreach(name dp_sgd ensemble exposure extract forgetting gemm sgd_step transformer)
  add_executable(${name}_bench ${name}_bench.cc)
  target_link_libraries(${name}_bench PRIVATE memaudit_bench_lm)
  target_compile_definitions(${name}_bench PRIVATE MEMAUDIT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endforeach()
