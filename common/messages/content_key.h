// Content keys: a stored model's observations may stand in for a planned
// task when everything that decides them is equal. For a membership model
// that is the seed, data (the dataset block with its content hash, so a
// replaced file never reuses models: docs/data.md), architecture, recipe,
// threads, its index and the code version — not the audit's model count N, because model i's
// keep-matrix half does not depend on N (seeding.h), nor resources.models_per_task (packed models
// are bit-identical to unpacked ones), nor the attacks scored afterwards.
#ifndef MEMAUDIT_COMMON_MESSAGES_CONTENT_KEY_H_
#define MEMAUDIT_COMMON_MESSAGES_CONTENT_KEY_H_

#include <cstdint>
#include <string>

#include "memaudit/v1/spec.pb.h"

namespace memaudit {

// A printable key (hex of a deterministic serialization) for reference model
// `index` of a membership audit whose spec has its defaults applied.
std::string MembershipModelKey(const v1::AuditSpec& spec, uint32_t index);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_CONTENT_KEY_H_
