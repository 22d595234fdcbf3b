#include "common/base/utf8.h"

namespace memaudit {

int32_t NextCodePoint(absl::string_view s, size_t* i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(*i);
  size_t length = 1;
  int32_t cp = lead;
  int32_t smallest = 0;
  if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, cp = lead & 0x07, smallest = 0x10000;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, smallest = 0x800;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, smallest = 0x80;
  } else if (lead >= 0x80) {
    length = 0;
  }
  bool valid = length > 0 && *i + length <= s.size();
  for (size_t k = 1; valid && k < length; ++k) {
    valid = (byte(*i + k) & 0xC0) == 0x80;
    cp = (cp << 6) | (byte(*i + k) & 0x3F);
  }
  valid = valid && cp >= smallest && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
  *i += valid ? length : 1;
  return valid ? cp : -1;
}

void AppendUtf8(int32_t cp, std::string* out) {
  const auto add = [&](int value) { out->push_back(static_cast<char>(value)); };
  if (cp < 0x80) {
    add(cp);
  } else if (cp < 0x800) {
    add(0xC0 | (cp >> 6)), add(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    add(0xE0 | (cp >> 12)), add(0x80 | ((cp >> 6) & 0x3F)), add(0x80 | (cp & 0x3F));
  } else {
    add(0xF0 | (cp >> 18)), add(0x80 | ((cp >> 12) & 0x3F)), add(0x80 | ((cp >> 6) & 0x3F));
    add(0x80 | (cp & 0x3F));
  }
}

bool IsValidUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (NextCodePoint(s, &i) < 0) return false;
  }
  return true;
}

}  // namespace memaudit
