// Status propagation macros (Debian's Abseil has none).
//
//   MEMAUDIT_RETURN_IF_ERROR(expr);
//     `expr` yields an absl::Status and is evaluated once; if that status is
//     not OK, the enclosing function returns it.
//
//   MEMAUDIT_ASSIGN_OR_RETURN(lhs, expr);
//     `expr` yields an absl::StatusOr<T> and is evaluated once into a uniquely
//     named temporary; if it is not OK, the enclosing function returns its
//     status, otherwise `lhs = std::move(*temporary)`. `lhs` is an existing
//     variable or a declaration (`auto x`, `std::vector<int> v`,
//     `const Foo& f`, which refers into the temporary, alive to the end of the
//     enclosing scope). `lhs` must not contain unparenthesised commas: write
//     `(std::pair<int, int> p)` or `(auto [a, b])`; the parentheses are
//     removed. The macro expands to several statements, so it cannot be the
//     unbraced body of an `if` or a loop.
//
// Both work in functions that return absl::Status or any absl::StatusOr<U>.
#ifndef MEMAUDIT_COMMON_BASE_STATUS_MACROS_H_
#define MEMAUDIT_COMMON_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define MEMAUDIT_RETURN_IF_ERROR(...)                               \
  do {                                                              \
    ::absl::Status memaudit_status_macros_status_ = (__VA_ARGS__);  \
    if (ABSL_PREDICT_FALSE(!memaudit_status_macros_status_.ok())) { \
      return memaudit_status_macros_status_;                        \
    }                                                               \
  } while (false)

#define MEMAUDIT_ASSIGN_OR_RETURN(lhs, ...)      \
  MEMAUDIT_STATUS_MACROS_ASSIGN_OR_RETURN_IMPL_( \
      MEMAUDIT_STATUS_MACROS_CONCAT_(memaudit_status_or_, __COUNTER__), lhs, __VA_ARGS__)

// Implementation details.
#define MEMAUDIT_STATUS_MACROS_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, ...) \
  auto statusor = (__VA_ARGS__);                                          \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) {                               \
    return std::move(statusor).status();                                  \
  }                                                                       \
  MEMAUDIT_STATUS_MACROS_UNPARENTHESIZE_(lhs) = std::move(*statusor)

#define MEMAUDIT_STATUS_MACROS_CONCAT_INNER_(a, b) a##b
#define MEMAUDIT_STATUS_MACROS_CONCAT_(a, b) MEMAUDIT_STATUS_MACROS_CONCAT_INNER_(a, b)

// `(x)` becomes `x`; anything else is left as it is.
#define MEMAUDIT_STATUS_MACROS_UNPARENTHESIZE_(...)                                     \
  MEMAUDIT_STATUS_MACROS_CONCAT_(MEMAUDIT_STATUS_MACROS_UNPARENTHESIZE_,                \
                                 MEMAUDIT_STATUS_MACROS_IS_PARENTHESIZED_(__VA_ARGS__)) \
  (__VA_ARGS__)
#define MEMAUDIT_STATUS_MACROS_UNPARENTHESIZE_0(...) __VA_ARGS__
#define MEMAUDIT_STATUS_MACROS_UNPARENTHESIZE_1(...) \
  MEMAUDIT_STATUS_MACROS_REMOVE_PARENS_ __VA_ARGS__
#define MEMAUDIT_STATUS_MACROS_REMOVE_PARENS_(...) __VA_ARGS__
// 1 if the argument starts with a parenthesised group, else 0.
#define MEMAUDIT_STATUS_MACROS_IS_PARENTHESIZED_(...) \
  MEMAUDIT_STATUS_MACROS_SECOND_(MEMAUDIT_STATUS_MACROS_PROBE_ __VA_ARGS__, 0, )
#define MEMAUDIT_STATUS_MACROS_PROBE_(...) ~, 1
#define MEMAUDIT_STATUS_MACROS_SECOND_(...) MEMAUDIT_STATUS_MACROS_SECOND_IMPL_(__VA_ARGS__)
#define MEMAUDIT_STATUS_MACROS_SECOND_IMPL_(first, second, ...) second

#endif  // MEMAUDIT_COMMON_BASE_STATUS_MACROS_H_
