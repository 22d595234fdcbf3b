#include "common/testing/kind_handlers.h"

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "common/messages/data_roots.h"
#include "common/messages/spec_yaml.h"
#include "common/testing/example_data.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/scorer/kind_handler.h"
#include "services/scorer/scorer_store.h"
#include "spec/planner.h"
#include "spec/spec_validator.h"

namespace memaudit::scorer {
namespace {

TEST(ScorerKindHandlersTest, EveryKindOfTheOneofHasAHandler) {
  memaudit::testing::ExpectAHandlerForEveryKind(&HandlerFor);
}

// Results name their kind by the oneof field's name, which is how the
// scorer finds the handler that publishes them.
TEST(ScorerKindHandlersTest, EveryPlaceholderNamesItsOwnKind) {
  for (AuditKind kind : AllAuditKinds()) {
    v1::AuditSpec spec;
    spec.set_name("test");
    const google::protobuf::FieldDescriptor* field =
        v1::AuditSpec::descriptor()->FindFieldByNumber(static_cast<int>(kind));
    spec.GetReflection()->MutableMessage(&spec, field);  // selects the kind
    const v1::AuditResults placeholder = HandlerFor(kind)->Placeholder(spec);
    EXPECT_EQ(placeholder.kind(), ApiKind(kind));
    EXPECT_FALSE(placeholder.complete());
  }
}

// The scorer's view of each kind's tasks agrees with the coordinator's plan,
// for the example spec of every kind: each planned task expects at least one
// observation (TaskObservations), every one of them maps back to that task
// (TaskOf, what its capability is checked against), and no two tasks expect
// the same observation.
TEST(ScorerKindHandlersTest, TaskObservationsAndTaskOfAgreeWithThePlan) {
  auto store = ScorerStore::Open(":memory:");
  MEMAUDIT_ASSERT_OK(store);
  // Submit reads the own-data examples' files: they must exist.
  ASSERT_TRUE(::memaudit::testing::EnsureExampleData(MEMAUDIT_SOURCE_DIR));
  std::vector<std::string> roots(std::begin(kDefaultDataRoots), std::end(kDefaultDataRoots));
  roots.push_back(::memaudit::testing::kExampleDataDir);
  auto data_roots = DataRoots::Create(roots);
  MEMAUDIT_ASSERT_OK(data_roots);
  std::set<AuditKind> kinds;
  for (const auto& entry : std::filesystem::directory_iterator(MEMAUDIT_SOURCE_DIR "/examples")) {
    if (entry.path().extension() != ".yaml") continue;  // examples/python/, ...
    SCOPED_TRACE(entry.path().string());
    auto spec = LoadSpecFile(entry.path().string());
    MEMAUDIT_ASSERT_OK(spec);
    ASSERT_THAT(spec::PrepareSpecProblems(&*spec, *data_roots), ::testing::IsEmpty());
    auto plan = spec::PlanAudit(*spec);
    MEMAUDIT_ASSERT_OK(plan);
    const KindHandler* kind = HandlerFor(spec->kind_case());
    kinds.insert(spec->kind_case());
    std::map<std::string, TaskRef> owner;  // observation -> its task
    for (const spec::PlannedTask& planned : plan->tasks) {
      const TaskRef task{planned.role, planned.index};
      SCOPED_TRACE(task.ToString());
      auto keys = kind->TaskObservations(**store, "x", *spec, task);
      MEMAUDIT_ASSERT_OK(keys);
      EXPECT_FALSE(keys->empty());
      for (const ObservationKey& key : *keys) {
        v1::Observation o;
        o.set_audit_id("x");
        o.set_run(key.run);
        o.set_point(key.point);
        o.set_signal(key.signal);
        auto of = kind->TaskOf(*spec, o);
        MEMAUDIT_ASSERT_OK(of) << key.ToString();
        EXPECT_EQ(of->ToString(), task.ToString()) << key.ToString();
        auto [it, fresh] = owner.emplace(key.ToString(), task);
        EXPECT_TRUE(fresh) << key.ToString() << " also expected of " << it->second.ToString();
      }
    }
    EXPECT_THAT(kind->TaskObservations(**store, "x", *spec, {"no_such_role", 0}),
                memaudit::testing::StatusIs(absl::StatusCode::kInvalidArgument));
  }
  EXPECT_EQ(kinds.size(), AllAuditKinds().size()) << "an example of every kind";
}

}  // namespace
}  // namespace memaudit::scorer
