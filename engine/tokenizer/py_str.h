#pragma once
// Python's str.strip / lstrip / rstrip on UTF-8 text, as chat templates call them (content.strip(),
// the |trim filter, content.lstrip('\n')). Without an argument they remove Python's whitespace: the
// code points of category Zs or bidirectional class WS, B or S (U+0009..000D, U+001C..001F, space,
// U+0085, U+00A0, U+1680, U+2000..200A, U+2028, U+2029, U+202F, U+205F, U+3000), read from utf8proc.
// With `chars` (ASCII only) they remove those bytes. Bytes that are not valid UTF-8 are never removed.
#include <string>
#include <string_view>

namespace ls::tok {

bool py_isspace(char32_t cp);

std::string py_strip(std::string_view s);
std::string py_lstrip(std::string_view s);
std::string py_rstrip(std::string_view s);
std::string py_strip(std::string_view s, std::string_view chars);
std::string py_lstrip(std::string_view s, std::string_view chars);
std::string py_rstrip(std::string_view s, std::string_view chars);

}  // namespace ls::tok
