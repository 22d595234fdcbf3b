// The checks of a classifier kind's `dataset` and of the model it feeds,
// shared by membership, forgetting and unlearning (docs/spec.md,
// "Compatibility"). Field names are relative to the kind, as in spec_rules.h.
#ifndef MEMAUDIT_SPEC_DATASET_RULES_H_
#define MEMAUDIT_SPEC_DATASET_RULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "memaudit/v1/spec.pb.h"
#include "spec/spec_rules.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {

// The rule of a file's facts (dataset rows, target hash) that no Submit
// recorded: a spec checked without ReadFiles.
inline constexpr char kNotRecorded[] =
    "not recorded: submit the spec so the coordinator reads the files";

// The formats a DatasetSpec names (data/data_source.h).
const std::vector<std::string>& DatasetFormats();

// The source fields: a known format, only that format's fields set, bounded
// strings. Returns whether they are fine (then the files may be read).
bool CheckDatasetSource(const v1::DatasetSpec& dataset, const AddProblem& add);

// `dataset`: CheckDatasetSource, and (past Submit's ReadFiles) its rows
// recorded. Returns the rows
// it holds (DatasetRows), 0 when unknown; pool sizes are checked against it.
uint32_t CheckDataset(const v1::DatasetSpec& dataset, const AddProblem& add);

// `model` over `dataset`'s examples: a "cnn" needs images, a per-example
// shape [H, W] or [C, H, W] with H and W at least 4.
void CheckModelFitsDataset(const v1::ModelSpec& model, const v1::DatasetSpec& dataset,
                           const AddProblem& add);

// The image shape a "cnn" reads the dataset's examples as: {channels,
// height, width}; empty when the examples are not images.
std::vector<uint32_t> ImageShape(const v1::DatasetSpec& dataset);

// Parameters of a classifier over `dataset`'s examples (logreg, mlp, cnn;
// 0 for torchscript, whose size the spec does not say).
double ClassifierParameters(const v1::ModelSpec& model, const v1::DatasetSpec& dataset);

// ReadFiles of a kind's dataset (`field`: "membership.dataset"): its facts
// recorded, or one problem naming the field.
void ReadDatasetFiles(v1::DatasetSpec* dataset, const std::string& field,
                      std::vector<SpecProblem>* problems);

// ReadFiles of a language model's tokenizer file (`field`:
// "exposure.model.tokenizer"): its content_hash recorded when it names a
// model_path, or one problem naming the field.
void ReadTokenizerFile(v1::TokenizerSpec* tokenizer, const std::string& field,
                       std::vector<SpecProblem>* problems);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_SPEC_DATASET_RULES_H_
