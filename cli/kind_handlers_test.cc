#include "common/testing/kind_handlers.h"

#include "cli/kind_handler.h"
#include "gtest/gtest.h"

namespace memaudit::cli {
namespace {

TEST(CliKindHandlersTest, EveryKindOfTheOneofHasAHandler) {
  memaudit::testing::ExpectAHandlerForEveryKind(&HandlerFor);
}

}  // namespace
}  // namespace memaudit::cli
