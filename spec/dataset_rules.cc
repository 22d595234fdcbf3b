#include "spec/dataset_rules.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spec/dataset_facts.h"

namespace memaudit::spec {

const std::vector<std::string>& DatasetFormats() {
  static const auto* const formats =
      new std::vector<std::string>{"fashion_mnist", "idx", "csv", "npy", "npz"};
  return *formats;
}

bool CheckDatasetSource(const v1::DatasetSpec& d, const AddProblem& add) {
  bool ok = true;
  const AddProblem note = [&](std::string field, std::string rule) {
    ok = false;
    add(std::move(field), std::move(rule));
  };
  CheckLength("dataset.name", d.name(), kMaxNameBytes, note);
  CheckLength("dataset.path", d.path(), kMaxPathBytes, note);
  CheckLength("dataset.labels_path", d.labels_path(), kMaxPathBytes, note);
  CheckLength("dataset.label_column", d.label_column(), kMaxNameBytes, note);
  CheckLength("dataset.features_key", d.features_key(), kMaxNameBytes, note);
  CheckLength("dataset.labels_key", d.labels_key(), kMaxNameBytes, note);
  const std::string format = d.format().empty() ? "fashion_mnist" : d.format();
  if (!OneOf(format, DatasetFormats())) {
    CheckOneOf("dataset.format", format, DatasetFormats(), note);
    return false;
  }
  // A field of another format would be silently ignored: refuse it instead.
  const auto only_for = [&](const char* field, const std::string& value, const char* owner) {
    if (!value.empty() && format != owner) {
      note(absl::StrCat("dataset.", field),
           absl::StrCat("applies to format \"", owner, "\" only (format is \"", format, "\")"));
    }
  };
  only_for("label_column", d.label_column(), "csv");
  only_for("labels_path", d.labels_path(), "npy");
  only_for("features_key", d.features_key(), "npz");
  only_for("labels_key", d.labels_key(), "npz");
  if (format != "fashion_mnist" && d.path().empty()) {
    note("dataset.path", absl::StrCat("required for format \"", format, "\""));
  }
  if (format == "npy" && d.labels_path().empty()) {
    note("dataset.labels_path", "required for format \"npy\" (the labels file)");
  }
  return ok;
}

uint32_t CheckDataset(const v1::DatasetSpec& d, const AddProblem& add) {
  const bool source_ok = CheckDatasetSource(d, add);
  const uint32_t rows = DatasetRows(d);
  if (source_ok && rows == 0) {
    add("dataset.rows", kNotRecorded);
  }
  return rows;
}

std::vector<uint32_t> ImageShape(const v1::DatasetSpec& d) {
  if (d.shape_size() == 0) {  // recorded before shapes were: Fashion-MNIST
    return DatasetRows(d) > 0 && d.rows() == 0 ? std::vector<uint32_t>{1, 28, 28}
                                               : std::vector<uint32_t>{};
  }
  if (d.shape_size() == 2) return {1, d.shape(0), d.shape(1)};
  if (d.shape_size() == 3) return {d.shape(0), d.shape(1), d.shape(2)};
  return {};
}

void CheckModelFitsDataset(const v1::ModelSpec& m, const v1::DatasetSpec& d,
                           const AddProblem& add) {
  if (m.architecture() != engine::ModelKindName(engine::ModelKind::kCnn)) return;
  const std::vector<uint32_t> image = ImageShape(d);
  if (image.empty() || image[1] < 4 || image[2] < 4) {
    add("model.architecture",
        absl::StrCat("\"cnn\" needs image examples of shape [H, W] or [C, H, W] with H, W >= 4; "
                     "the dataset's examples have shape [",
                     absl::StrJoin(d.shape(), ", "), "]"));
  }
}

double ClassifierParameters(const v1::ModelSpec& m, const v1::DatasetSpec& d) {
  // Specs recorded before datasets had facts are Fashion-MNIST's.
  const double inputs = d.features() > 0 ? d.features() : 28 * 28;
  const double classes = d.classes() > 0 ? d.classes() : 10;
  const auto kind = engine::ParseModelKind(m.architecture(), "model.architecture");
  if (!kind.ok()) return 0;
  switch (*kind) {
    case engine::ModelKind::kCnn: {
      const std::vector<uint32_t> image = ImageShape(d);
      if (image.empty()) return 0;  // refused by CheckModelFitsDataset
      const double c1 = m.hidden_size() == 3 ? m.hidden(0) : 8;
      const double c2 = m.hidden_size() == 3 ? m.hidden(1) : 16;
      const double fc = m.hidden_size() == 3 ? m.hidden(2) : 64;
      // Two 2x2 poolings floor each side: the fc layer sees (H/4) x (W/4).
      const uint32_t pooled_height = image[1] / 4, pooled_width = image[2] / 4;
      const double pooled = static_cast<double>(pooled_height) * pooled_width;
      return (25 * image[0] * c1 + c1) + (25 * c1 * c2 + c2) + (c2 * pooled * fc + fc) +
             (fc * classes + classes);
    }
    case engine::ModelKind::kMlp:
    case engine::ModelKind::kLogReg: {
      double params = 0, width = inputs;
      for (uint32_t h : m.hidden()) {
        params += (width + 1) * h;
        width = h;
      }
      return params + (width + 1) * classes;
    }
    default:
      return 0;
  }
}

void ReadDatasetFiles(v1::DatasetSpec* dataset, const std::string& field,
                      std::vector<SpecProblem>* problems) {
  // The kind is the field's first part ("membership"): problems of the
  // source fields name it as Validate would.
  const std::string kind = field.substr(0, field.find('.'));
  const bool source_ok = CheckDatasetSource(*dataset, [&](const std::string& f, std::string rule) {
    problems->push_back({absl::StrCat(kind, ".", f), std::move(rule)});
  });
  if (!source_ok) return;
  if (absl::Status s = ResolveDataset(dataset, field); !s.ok()) problems->push_back(ProblemOf(s));
}

void ReadTokenizerFile(v1::TokenizerSpec* tokenizer, const std::string& field,
                       std::vector<SpecProblem>* problems) {
  if (tokenizer->model_path().empty()) return;
  absl::StatusOr<TokenizerFile> file =
      ReadTokenizerModel(tokenizer->model_path(), absl::StrCat(field, ".model_path"));
  if (!file.ok()) {
    problems->push_back(ProblemOf(file.status()));
    return;
  }
  tokenizer->set_content_hash(file->content_hash);
}

}  // namespace memaudit::spec
