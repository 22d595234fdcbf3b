#include "common/messages/enum_names.h"

#include "common/messages/event_types.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

TEST(EnumNamesTest, LowerCaseNamesRoundTrip) {
  const auto& events = *v1::EventType_descriptor();
  EXPECT_EQ(LowerCaseName(events, v1::TASK_LEASED), "task_leased");
  EXPECT_EQ(ValueOfLowerCaseName(events, "task_leased"), v1::TASK_LEASED);
  for (int i = 1; i < events.value_count(); ++i) {
    const int value = events.value(i)->number();
    EXPECT_EQ(ValueOfLowerCaseName(events, LowerCaseName(events, value)), value);
  }
  EXPECT_EQ(EventTypeName(v1::AUDIT_WAITING), "audit_waiting");
}

TEST(EnumNamesTest, UnspecifiedUnknownAndUpperCaseAreNoName) {
  const auto& events = *v1::EventType_descriptor();
  EXPECT_EQ(LowerCaseName(events, v1::EVENT_TYPE_UNSPECIFIED), "");
  EXPECT_EQ(LowerCaseName(events, 999), "");
  EXPECT_EQ(ValueOfLowerCaseName(events, "TASK_LEASED"), 0) << "specs write lower case";
  EXPECT_EQ(ValueOfLowerCaseName(events, "event_type_unspecified"), 0);
  EXPECT_EQ(ValueOfLowerCaseName(events, "no_such_event"), 0);
}

}  // namespace
}  // namespace memaudit
