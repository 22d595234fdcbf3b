#include "common/messages/spec_paths.h"

#include <google/protobuf/descriptor.h>

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;

// Every string field reachable from `type`, named from the spec's root.
void StringFields(const Descriptor* type, const std::string& prefix, int depth,
                  std::set<std::string>* out) {
  ASSERT_LT(depth, 16) << "spec.proto nests deeper than expected at " << prefix;
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* field = type->field(i);
    const std::string name =
        prefix.empty() ? field->name() : absl::StrCat(prefix, ".", field->name());
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      StringFields(field->message_type(), name, depth + 1, out);
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      out->insert(name);
    }
  }
}

// The fields SpecPaths reports, read from the descriptor: a path field added
// to spec.proto shows up here, and in docs/spec.md's data-root rule.
TEST(SpecPathsTest, ThePathFieldsOfSpecProto) {
  std::set<std::string> strings;
  StringFields(v1::AuditSpec::descriptor(), "", 0, &strings);
  std::set<std::string> paths;
  for (const std::string& name : strings) {
    const std::string leaf = name.substr(name.rfind('.') + 1);
    if (IsPathFieldName(leaf)) paths.insert(name);
    // A field naming a file under another name would escape the data roots.
    for (const char* word : {"path", "file", "dir", "folder"}) {
      EXPECT_TRUE(!absl::StrContains(leaf, word) || IsPathFieldName(leaf))
          << name << " looks like a file name but is not called path or *_path";
    }
  }
  EXPECT_THAT(
      paths,
      ElementsAre(
          "dp_audit.dataset.labels_path", "dp_audit.dataset.path",
          "dp_audit.model.torchscript_path", "exposure.corpus.path",
          "exposure.model.tokenizer.model_path", "exposure.model.torchscript_path",
          "exposure.target.torchscript_path", "forgetting.canaries.corpus.path",
          "forgetting.canaries.model.tokenizer.model_path",
          "forgetting.canaries.model.torchscript_path", "forgetting.dataset.labels_path",
          "forgetting.dataset.path", "forgetting.model.torchscript_path",
          "membership.dataset.labels_path", "membership.dataset.path",
          "membership.documents.corpus.path", "membership.documents.model.tokenizer.model_path",
          "membership.documents.model.torchscript_path", "membership.model.torchscript_path",
          "membership.target.members_path", "membership.target.torchscript_path",
          "relational.phone_book.model.tokenizer.model_path",
          "relational.phone_book.model.torchscript_path", "unlearning.dataset.labels_path",
          "unlearning.dataset.path", "unlearning.model.torchscript_path"));
}

TEST(SpecPathsTest, ListsEachSetPathByField) {
  v1::AuditSpec spec;
  EXPECT_THAT(SpecPaths(spec), IsEmpty());
  spec.mutable_membership()->mutable_dataset()->set_path("/data/images");
  spec.mutable_membership()->mutable_model()->set_torchscript_path("/models/m.pt");
  EXPECT_THAT(SpecPaths(spec),
              ElementsAre(AllOf(Field(&SpecPath::field, "membership.dataset.path"),
                                Field(&SpecPath::path, "/data/images")),
                          AllOf(Field(&SpecPath::field, "membership.model.torchscript_path"),
                                Field(&SpecPath::path, "/models/m.pt"))));

  spec.mutable_exposure()->mutable_corpus()->set_path("/");
  EXPECT_THAT(SpecPaths(spec), ElementsAre(AllOf(Field(&SpecPath::field, "exposure.corpus.path"),
                                                 Field(&SpecPath::path, "/"))));

  spec.mutable_forgetting()->mutable_dataset()->set_path("/a");
  spec.mutable_forgetting()->mutable_model()->set_torchscript_path("/b");
  spec.mutable_forgetting()->mutable_canaries()->mutable_corpus()->set_path("/c");
  EXPECT_THAT(SpecPaths(spec),
              ElementsAre(Field(&SpecPath::field, "forgetting.dataset.path"),
                          Field(&SpecPath::field, "forgetting.model.torchscript_path"),
                          Field(&SpecPath::field, "forgetting.canaries.corpus.path")));

  spec.mutable_unlearning()->mutable_dataset()->set_path("/d");
  spec.mutable_unlearning()->mutable_model()->set_torchscript_path("/e");
  EXPECT_THAT(SpecPaths(spec),
              ElementsAre(Field(&SpecPath::field, "unlearning.dataset.path"),
                          Field(&SpecPath::field, "unlearning.model.torchscript_path")));
}

TEST(SpecPathsTest, EmptyPathsAndOtherStringsAreLeftOut) {
  v1::AuditSpec spec;
  spec.set_name("/etc/shadow");
  spec.mutable_exposure()->mutable_corpus()->set_name("fortunes");
  spec.mutable_exposure()->mutable_corpus()->set_text("/etc/shadow");
  spec.mutable_exposure()->mutable_canary()->set_prefix("/etc/shadow");
  EXPECT_THAT(SpecPaths(spec), IsEmpty());
  spec.mutable_relational()->mutable_phone_book()->set_template_("{name} {number}");
  EXPECT_THAT(SpecPaths(spec), IsEmpty());
}

}  // namespace
}  // namespace memaudit
