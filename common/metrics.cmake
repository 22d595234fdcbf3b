# Prometheus metrics: prometheus-cpp families and its Exposer for /metrics.
# Included from common/CMakeLists.txt.
add_library(memaudit_metrics STATIC
  ${PROJECT_SOURCE_DIR}/common/civetweb_thread_stacks.cc
  ${PROJECT_SOURCE_DIR}/common/metrics.cc
  ${PROJECT_SOURCE_DIR}/common/metrics_endpoint.cc
)
target_include_directories(memaudit_metrics PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(memaudit_metrics
  PUBLIC absl::status absl::statusor prometheus-cpp::core prometheus-cpp::pull Threads::Threads
         OpenSSL::Crypto ${CMAKE_DL_LIBS}
)
# civetweb (a dependency of prometheus-cpp::pull) must see the executable's
# pthread_attr_setstacksize (civetweb_thread_stacks.h).
target_link_options(memaudit_metrics INTERFACE
  LINKER:--export-dynamic-symbol=pthread_attr_setstacksize)

if(MEMAUDIT_BUILD_TESTS)
  memaudit_test(metrics_test
    SOURCES
      ${PROJECT_SOURCE_DIR}/common/civetweb_thread_stacks_test.cc
      ${PROJECT_SOURCE_DIR}/common/metrics_endpoint_test.cc
    LIBS memaudit_metrics
  )
endif()
