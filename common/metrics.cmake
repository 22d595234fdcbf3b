# Prometheus metrics: registry + civetweb HTTP exposition (DESIGN.md §5).
# Included from common/CMakeLists.txt; expects CIVETWEB_LIBRARY and
# CIVETWEB_INCLUDE_DIR from the top-level find_library/find_path.
add_library(memaudit_metrics STATIC
  ${PROJECT_SOURCE_DIR}/common/metrics_registry.cc
  ${PROJECT_SOURCE_DIR}/common/metrics_http_server.cc
)
target_include_directories(memaudit_metrics PUBLIC ${PROJECT_SOURCE_DIR})
target_include_directories(memaudit_metrics PRIVATE ${CIVETWEB_INCLUDE_DIR})
target_link_libraries(memaudit_metrics
  PUBLIC absl::status absl::statusor absl::synchronization Threads::Threads
  PRIVATE ${CIVETWEB_LIBRARY}
)

if(MEMAUDIT_BUILD_TESTS)
  memaudit_test(metrics_test
    SOURCES
      ${PROJECT_SOURCE_DIR}/common/metrics_registry_test.cc
      ${PROJECT_SOURCE_DIR}/common/metrics_http_server_test.cc
    LIBS memaudit_metrics
  )
endif()
