#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ker {

// Where `text` stops being UTF-8 (the offset of the first byte that does not begin or continue
// a valid sequence: overlong forms, surrogates and code points past U+10FFFF count as invalid);
// nullopt when all of it is. What the API server and every JSON encoder require of strings.
std::optional<size_t> firstInvalidUtf8(std::string_view text);

// At most `maxBytes` of `text`, cut before a sequence the limit would split, each invalid byte
// replaced by U+FFFD: text from outside (a command's output) made fit for a status message.
std::string clippedUtf8(std::string_view text, size_t maxBytes);

}  // namespace ker
