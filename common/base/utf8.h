// Strict UTF-8: decoding one code point at a time (overlong forms, UTF-16
// surrogates, code points past U+10FFFF and cut sequences are invalid) and
// encoding. One decoder for the spec reader and the metrics' label text.
#ifndef MEMAUDIT_COMMON_BASE_UTF8_H_
#define MEMAUDIT_COMMON_BASE_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace memaudit {

// The code point that starts at s[*i], advancing *i past it; -1 (advancing
// one byte) when no valid UTF-8 sequence starts there. Needs *i < s.size().
int32_t NextCodePoint(absl::string_view s, size_t* i);

// Appends code point `cp` (<= U+10FFFF, no surrogate) as UTF-8.
void AppendUtf8(int32_t cp, std::string* out);

bool IsValidUtf8(absl::string_view s);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_UTF8_H_
