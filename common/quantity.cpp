#include "common/quantity.h"

#include <charconv>
#include <limits>

namespace ker {

namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

// The suffix's power of ten, or of two for the binary ones ("Ki" .. "Ei").
struct Suffix {
  int64_t exponent10 = 0;
  int exponent2 = 0;
};

std::optional<Suffix> interpret(std::string_view s) {
  static constexpr std::pair<std::string_view, int> kDecimal[] = {
      {"", 0},  {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3},
      {"M", 6}, {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::pair<std::string_view, int> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (const auto& [name, e] : kDecimal) {
    if (s == name) {
      return Suffix{e, 0};
    }
  }
  for (const auto& [name, e] : kBinary) {
    if (s == name) {
      return Suffix{0, e};
    }
  }
  if (s.size() < 2 || (s[0] != 'e' && s[0] != 'E')) {
    return std::nullopt;
  }
  std::string_view number = s.substr(1);
  if (number[0] == '+') {
    number.remove_prefix(1);
    if (number.empty() || !isDigit(number[0])) {
      return std::nullopt;
    }
  }
  int32_t e = 0;  // resource.ParseQuantity keeps the exponent in an int32
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), e);
  if (ec != std::errc() || end != number.data() + number.size() || number.empty()) {
    return std::nullopt;
  }
  return Suffix{e, 0};
}

void doubleDigits(std::string& digits) {
  int carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    int d = (*it - '0') * 2 + carry;
    *it = static_cast<char>('0' + d % 10);
    carry = d / 10;
  }
  if (carry != 0) {
    digits.insert(digits.begin(), static_cast<char>('0' + carry));
  }
}

void incrementDigits(std::string& digits) {
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (*it != '9') {
      ++*it;
      return;
    }
    *it = '0';
  }
  digits.insert(digits.begin(), '1');
}

}  // namespace

// The grammar is resource.ParseQuantity's: [sign] digits [. digits] [suffix], where the suffix
// is a decimal SI one (n u m k M G T P E), a binary one (Ki .. Ei) or an exponent (e3, E-2);
// an empty number counts as 0 ("-", ".", "+" parse).
std::optional<Quantity> Quantity::parse(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  size_t pos = 0;
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    ++pos;
  }
  std::string digits;
  while (pos < text.size() && isDigit(text[pos])) {
    digits += text[pos++];
  }
  int64_t exponent10 = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && isDigit(text[pos])) {
      digits += text[pos++];
      --exponent10;
    }
  }
  auto suffix = interpret(text.substr(pos));
  if (!suffix) {
    return std::nullopt;
  }
  exponent10 += suffix->exponent10;
  for (int i = 0; i < suffix->exponent2; ++i) {
    doubleDigits(digits);
  }
  digits.erase(0, digits.find_first_not_of('0') == std::string::npos
                      ? digits.size()
                      : digits.find_first_not_of('0'));
  if (digits.empty()) {
    return Quantity{};
  }
  // A magnitude finer than a nano is rounded up to the next nano, as the API server does.
  constexpr int64_t kNano = -9;
  if (exponent10 < kNano) {
    const int64_t drop = kNano - exponent10;
    if (drop >= static_cast<int64_t>(digits.size())) {
      digits = "1";
    } else {
      const size_t keep = digits.size() - static_cast<size_t>(drop);
      const bool roundUp = digits.find_first_not_of('0', keep) != std::string::npos;
      digits.resize(keep);
      if (roundUp) {
        incrementDigits(digits);
      }
    }
    exponent10 = kNano;
  }
  while (digits.back() == '0') {
    digits.pop_back();
    ++exponent10;
  }
  // The API server caps binary-suffixed values at the largest int64 (which ends in a 7, so
  // comparing digit strings with the trailing zeros gone compares the values).
  if (suffix->exponent2 > 0) {
    static const std::string kMax = std::to_string(std::numeric_limits<int64_t>::max());
    const int64_t order = static_cast<int64_t>(digits.size()) + exponent10;
    const auto maxOrder = static_cast<int64_t>(kMax.size());
    if (order > maxOrder || (order == maxOrder && digits > kMax)) {
      digits = kMax;
      exponent10 = 0;
    }
  }
  Quantity q;
  q.negative_ = negative;
  q.order_ = static_cast<int64_t>(digits.size()) + exponent10;
  q.digits_ = std::move(digits);
  return q;
}

std::strong_ordering Quantity::operator<=>(const Quantity& other) const {
  auto sign = [](const Quantity& q) { return q.digits_.empty() ? 0 : (q.negative_ ? -1 : 1); };
  if (auto c = sign(*this) <=> sign(other); c != 0 || sign(*this) == 0) {
    return c;
  }
  std::strong_ordering magnitude = order_ <=> other.order_;
  if (magnitude == 0) {
    magnitude = digits_.compare(other.digits_) <=> 0;
  }
  return negative_ ? 0 <=> magnitude : magnitude;
}

}  // namespace ker
