#include "spec/dataset_facts.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/status_macros.h"
#include "common/training/datasets.h"
#include "data/file_bytes.h"
#include "data/sha256.h"
#include "tokenizers/sentencepiece_tokenizer.h"

namespace memaudit {
namespace {

// A status of the data library ("path: ...") with the spec field in front.
absl::Status Prefixed(const absl::Status& status, absl::string_view field) {
  return absl::Status(status.code(), absl::StrCat(field, ".", status.message()));
}

}  // namespace

absl::StatusOr<data::DataSource> DataSourceOf(const v1::DatasetSpec& dataset) {
  data::DataSource source;
  const std::string& format = dataset.format().empty() ? "fashion_mnist" : dataset.format();
  absl::StatusOr<data::SourceFormat> parsed = data::ParseSourceFormat(format);
  if (!parsed.ok()) return Prefixed(parsed.status(), "format");
  source.format = *parsed;
  source.path = dataset.path();
  source.labels_path = dataset.labels_path();
  source.label_column = dataset.label_column();
  source.features_key = dataset.features_key();
  source.labels_key = dataset.labels_key();
  return source;
}

uint32_t DatasetRows(const v1::DatasetSpec& dataset) {
  if (dataset.rows() > 0) return dataset.rows();
  const bool builtin = dataset.format().empty() || dataset.format() == "fashion_mnist";
  return builtin ? kFashionMnistTrainExamples : 0;
}

bool IsBuiltinDataset(const v1::DatasetSpec& dataset) {
  return (dataset.format().empty() || dataset.format() == "fashion_mnist") &&
         dataset.path().empty();
}

absl::Status ResolveDataset(v1::DatasetSpec* dataset, absl::string_view field) {
  if (IsBuiltinDataset(*dataset)) {
    // Debian's package never changes under an audit: its facts are known
    // and Submit reads nothing (workers still read the files to train).
    dataset->set_format("fashion_mnist");
    if (dataset->name().empty()) dataset->set_name("fashion_mnist");
    dataset->set_rows(kFashionMnistTrainExamples);
    dataset->set_features(28 * 28);
    dataset->set_classes(10);
    dataset->clear_shape();
    dataset->add_shape(28);
    dataset->add_shape(28);
    dataset->set_content_hash(kBuiltinFashionMnistHash);
    return absl::OkStatus();
  }
  absl::StatusOr<data::DataSource> source = DataSourceOf(*dataset);
  if (!source.ok()) return Prefixed(source.status(), field);
  // Facts only: the coordinator must not keep every dataset submitted.
  absl::StatusOr<data::DataFacts> read = data::DescribeDataSource(*source);
  if (!read.ok()) return Prefixed(read.status(), field);
  const data::DataFacts& examples = *read;
  if (!dataset->content_hash().empty() && dataset->content_hash() != examples.content_hash) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".content_hash: the spec pins ", dataset->content_hash(),
                     " but the files hash to ", examples.content_hash));
  }
  if (dataset->format().empty()) dataset->set_format(data::SourceFormatName(source->format));
  if (dataset->name().empty()) {
    dataset->set_name(dataset->path().empty() || dataset->format() == "fashion_mnist"
                          ? dataset->format()
                          : std::filesystem::path(dataset->path()).filename().string());
  }
  dataset->set_rows(examples.count);
  dataset->set_features(examples.features);
  dataset->set_classes(examples.classes);
  dataset->mutable_shape()->Assign(examples.shape.begin(), examples.shape.end());
  dataset->set_content_hash(examples.content_hash);
  return absl::OkStatus();
}

absl::StatusOr<const data::LabeledExamples*> LoadAuditDataset(const v1::DatasetSpec& dataset,
                                                              absl::string_view field) {
  absl::StatusOr<data::DataSource> source = DataSourceOf(dataset);
  if (!source.ok()) return Prefixed(source.status(), field);
  absl::StatusOr<const data::LabeledExamples*> read = data::LoadDataSource(*source);
  if (!read.ok()) return Prefixed(read.status(), field);
  // Specs accepted before Submit recorded a hash carry none to compare; the
  // built-in dataset is named, not hashed.
  if (!dataset.content_hash().empty() && dataset.content_hash() != kBuiltinFashionMnistHash &&
      (*read)->content_hash != dataset.content_hash()) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, ".content_hash: the files changed since the audit was submitted (",
                     dataset.content_hash(), " then, ", (*read)->content_hash, " now)"));
  }
  return read;
}

absl::StatusOr<std::vector<uint32_t>> ReadMemberRows(const std::string& path, uint32_t rows,
                                                     absl::string_view field) {
  MEMAUDIT_ASSIGN_OR_RETURN(std::string text, data::ReadFileBytes(path, field));
  std::vector<uint32_t> members;
  std::vector<bool> seen(rows, false);
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    uint32_t row = 0;
    if (!absl::SimpleAtoi(line, &row) || row >= rows) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": line ", line_number, " of ", path,
                                                     " is not a row index in [0, ", rows,
                                                     ") (got \"", line.substr(0, 32), "\")"));
    }
    if (seen[row]) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": line ", line_number, " of ", path, " repeats row ", row));
    }
    seen[row] = true;
    members.push_back(row);
  }
  if (members.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", path, " lists no rows"));
  }
  return members;
}

namespace {

// A file's bytes into a content hash: its length first, so no two lists of
// files hash alike by moving bytes from one file to the next.
void HashFile(const std::string& bytes, data::Sha256* hash) {
  const uint64_t size = bytes.size();
  char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  hash->Update(length, 8);
  hash->Update(bytes);
}

std::string ContentHash(data::Sha256* hash) {
  return absl::StrCat("sha256:", data::DigestHex(hash->Finish()));
}

}  // namespace

absl::StatusOr<std::string> FilesContentHash(
    const std::vector<std::pair<std::string, std::string>>& field_paths) {
  data::Sha256 hash;
  for (const auto& [field, path] : field_paths) {
    MEMAUDIT_ASSIGN_OR_RETURN(const std::string bytes, data::ReadFileBytes(path, field));
    HashFile(bytes, &hash);
  }
  return ContentHash(&hash);
}

absl::StatusOr<TokenizerFile> ReadTokenizerModel(const std::string& path,
                                                 const std::string& field) {
  MEMAUDIT_ASSIGN_OR_RETURN(const data::FileStamp stamp, data::StatFile(path, field));
  if (stamp.size > tokenizers::kMaxModelBytes) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": a SentencePiece model of ", stamp.size,
                                                   " bytes; at most ", tokenizers::kMaxModelBytes,
                                                   " are read"));
  }
  TokenizerFile file;
  MEMAUDIT_ASSIGN_OR_RETURN(file.bytes, data::ReadFileBytes(path, field));
  data::Sha256 hash;
  HashFile(file.bytes, &hash);
  file.content_hash = ContentHash(&hash);
  return file;
}

namespace {

// A target names both its files.
absl::Status RequireTargetFiles(const v1::TargetModelSpec& target, const std::string& model_field,
                                const std::string& members_field) {
  if (target.torchscript_path().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(model_field, ": required"));
  }
  if (target.members_path().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(members_field, ": required"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ResolveTarget(v1::TargetModelSpec* target, uint32_t rows, absl::string_view field) {
  const std::string model_field = absl::StrCat(field, ".torchscript_path");
  const std::string members_field = absl::StrCat(field, ".members_path");
  MEMAUDIT_RETURN_IF_ERROR(RequireTargetFiles(*target, model_field, members_field));
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<uint32_t> members,
                            ReadMemberRows(target->members_path(), rows, members_field));
  MEMAUDIT_ASSIGN_OR_RETURN(std::string hash,
                            FilesContentHash({{model_field, target->torchscript_path()},
                                              {members_field, target->members_path()}}));
  target->set_members(static_cast<uint32_t>(members.size()));
  target->set_content_hash(hash);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ResolveDocumentsTarget(v1::TargetModelSpec* target,
                                                   absl::string_view field) {
  const std::string model_field = absl::StrCat(field, ".torchscript_path");
  const std::string members_field = absl::StrCat(field, ".members_path");
  MEMAUDIT_RETURN_IF_ERROR(RequireTargetFiles(*target, model_field, members_field));
  MEMAUDIT_ASSIGN_OR_RETURN(const data::FileStamp stamp,
                            data::StatFile(target->members_path(), members_field));
  if (stamp.size > kMaxMembersTextBytes) {
    return absl::InvalidArgumentError(absl::StrCat(members_field, ": a text of ", stamp.size,
                                                   " bytes; at most ", kMaxMembersTextBytes,
                                                   " are read"));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(std::string text,
                            data::ReadFileBytes(target->members_path(), members_field));
  // FilesContentHash of the model then the text, without reading the text twice.
  MEMAUDIT_ASSIGN_OR_RETURN(const std::string model,
                            data::ReadFileBytes(target->torchscript_path(), model_field));
  data::Sha256 sha;
  HashFile(model, &sha);
  HashFile(text, &sha);
  const std::string hash = ContentHash(&sha);
  // Lines, the last one counted without its newline; an empty text has none.
  const size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) +
                       (!text.empty() && text.back() != '\n' ? 1 : 0);
  target->set_members(static_cast<uint32_t>(std::min<size_t>(lines, UINT32_MAX)));
  target->set_content_hash(hash);
  return text;
}

}  // namespace memaudit
