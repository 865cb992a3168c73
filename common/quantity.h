#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ker {

// A Kubernetes resource quantity ("40Gi", "1.5", "500m", "2e3") held exactly, for comparing
// one with another. Parsed as resource.ParseQuantity does, including its rounding of the
// magnitude up to a nano and its cap of binary-suffixed values at 2^63-1, so a value the API
// server's isQuantity() accepts compares here as kube-apiserver would compare it.
class Quantity {
 public:
  // nullopt when the text is not a quantity (empty, a stray character, an unknown suffix, an
  // exponent beyond an int32).
  static std::optional<Quantity> parse(std::string_view text);

  std::strong_ordering operator<=>(const Quantity& other) const;
  bool operator==(const Quantity& other) const = default;

 private:
  // value = (negative ? -1 : 1) * 0.digits * 10^order; digits has no leading or trailing
  // zeros, and is empty for zero (then negative is false and order 0).
  bool negative_ = false;
  std::string digits_;
  int64_t order_ = 0;
};

}  // namespace ker
