// Fuzzes what `memaudit validate`, `submit` and the coordinator's Submit do
// with untrusted spec text: the YAML reader, the defaults, every kind's
// validator and the data-root check of the spec's paths (resolved on this
// host against the default roots). Any crash, sanitizer report or hang is a bug; refusing the input
// is the expected outcome for almost all of them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/messages/spec_yaml.h"
#include "spec/spec_validator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto spec = memaudit::ParseSpecYaml(text, "<fuzz>");
  if (!spec.ok()) return 0;
  memaudit::spec::ApplyDefaults(&*spec);
  static const memaudit::DataRoots* const roots =
      new memaudit::DataRoots(memaudit::DataRoots::Defaults());
  memaudit::spec::FindProblems(*spec, *roots);
  return 0;
}
