#include "common/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <variant>

namespace ker::metrics {

namespace {

bool validName(const std::string& name, bool allowColon) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (allowColon && c == ':');
  });
}

// Shortest round-trip digits laid out as Go's strconv.FormatFloat(v, 'g', -1, 64), which the
// Prometheus client uses, so le labels read "0.0001" and not "1e-04".
std::string formatValue(double v) {
  if (std::isnan(v)) {
    return "NaN";
  }
  if (std::isinf(v)) {
    return v > 0 ? "+Inf" : "-Inf";
  }
  char buf[64];
  auto sci = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string_view text(buf, sci.ptr - buf);
  const int exp = std::stoi(std::string(text.substr(text.find('e') + 1)));
  if (exp < -4 || exp >= 6) {
    return std::string(text);
  }
  auto fixed = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, fixed.ptr);
}

void appendEscaped(std::string& out, const std::string& s, bool quotes) {
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quotes && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// `{a="x",b="y"}` with an optional extra pair (the histogram's le), or "" with no labels.
std::string labelSet(const std::vector<std::string>& names, const std::vector<std::string>& values,
                     const std::string& extraName = {}, const std::string& extraValue = {}) {
  if (names.empty() && extraName.empty()) {
    return {};
  }
  std::string out = "{";
  auto pair = [&](const std::string& n, const std::string& v) {
    if (out.size() > 1) {
      out += ',';
    }
    out += n;
    out += "=\"";
    appendEscaped(out, v, true);
    out += '"';
  };
  for (size_t i = 0; i < names.size(); ++i) {
    pair(names[i], values[i]);
  }
  if (!extraName.empty()) {
    pair(extraName, extraValue);
  }
  return out + "}";
}

}  // namespace

const std::vector<double>& defaultBuckets() {
  static const std::vector<double> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                               0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                               1,      2.5,     5,      10};
  return kBuckets;
}

Histogram::Histogram(std::vector<double> upperBounds) : bounds_(std::move(upperBounds)) {
  if (!std::is_sorted(bounds_.begin(), bounds_.end()) ||
      std::adjacent_find(bounds_.begin(), bounds_.end()) != bounds_.end() ||
      std::any_of(bounds_.begin(), bounds_.end(), [](double b) { return !std::isfinite(b); })) {
    throw std::invalid_argument("histogram buckets must be finite and strictly increasing");
  }
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
}

void Histogram::observe(double v) {
  // Buckets are inclusive upper bounds (le), hence lower_bound.
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  // The count is derived from the buckets so _count always equals the +Inf bucket.
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

template <class M>
M& Family<M>::labels(const std::vector<std::string>& values) {
  if (values.size() != labelNames_.size()) {
    throw std::invalid_argument("expected " + std::to_string(labelNames_.size()) +
                                " label values, got " + std::to_string(values.size()));
  }
  {
    std::shared_lock lock(mu_);
    if (auto it = series_.find(values); it != series_.end()) {
      return *it->second;
    }
  }
  std::unique_lock lock(mu_);
  auto& slot = series_[values];
  if (!slot) {
    slot = make_();
  }
  return *slot;
}

template <class M>
void Family<M>::forEach(
    const std::function<void(const std::vector<std::string>&, const M&)>& fn) const {
  std::shared_lock lock(mu_);
  for (const auto& [values, m] : series_) {
    fn(values, *m);
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

struct Registry::Entry {
  std::string help;
  std::string type;
  std::vector<std::string> labelNames;
  std::variant<std::unique_ptr<CounterFamily>, std::unique_ptr<GaugeFamily>,
               std::unique_ptr<HistogramFamily>, std::function<double()>,
               std::function<std::vector<LabeledValue>()>>
      family;
  bool computed() const {
    return std::holds_alternative<std::function<double()>>(family) ||
           std::holds_alternative<std::function<std::vector<LabeledValue>()>>(family);
  }
};

Registry::Registry() = default;
Registry::~Registry() = default;

Registry::Entry& Registry::add(const std::string& name, const std::string& help, const char* type,
                               const std::vector<std::string>& labelNames, bool histogram) {
  if (!validName(name, true)) {
    throw std::invalid_argument("invalid metric name \"" + name + "\"");
  }
  std::vector<std::string> seen;
  for (const auto& l : labelNames) {
    if (!validName(l, false) || l.starts_with("__") || (histogram && l == "le") ||
        std::find(seen.begin(), seen.end(), l) != seen.end()) {
      throw std::invalid_argument("invalid label name \"" + l + "\" for metric " + name);
    }
    seen.push_back(l);
  }
  auto& slot = families_[name];
  if (!slot) {
    slot = std::make_unique<Entry>();
    slot->help = help;
    slot->type = type;
    slot->labelNames = labelNames;
  } else if (slot->type != type || slot->labelNames != labelNames || slot->computed()) {
    throw std::invalid_argument("metric " + name + " already registered differently");
  }
  return *slot;
}

CounterFamily& Registry::counter(const std::string& name, const std::string& help,
                                 std::vector<std::string> labelNames) {
  std::lock_guard lock(mu_);
  Entry& e = add(name, help, "counter", labelNames, false);
  // A new entry's variant holds a null CounterFamily pointer (its first alternative).
  auto& f = std::get<std::unique_ptr<CounterFamily>>(e.family);
  if (!f) {
    f.reset(new CounterFamily(std::move(labelNames), [] { return std::make_unique<Counter>(); }));
  }
  return *f;
}

GaugeFamily& Registry::gauge(const std::string& name, const std::string& help,
                             std::vector<std::string> labelNames) {
  std::lock_guard lock(mu_);
  Entry& e = add(name, help, "gauge", labelNames, false);
  if (!std::holds_alternative<std::unique_ptr<GaugeFamily>>(e.family)) {
    e.family = std::unique_ptr<GaugeFamily>(
        new GaugeFamily(std::move(labelNames), [] { return std::make_unique<Gauge>(); }));
  }
  return *std::get<std::unique_ptr<GaugeFamily>>(e.family);
}

HistogramFamily& Registry::histogram(const std::string& name, const std::string& help,
                                     std::vector<std::string> labelNames,
                                     std::vector<double> buckets) {
  Histogram probe(buckets);  // validates the buckets before anything is registered
  std::lock_guard lock(mu_);
  Entry& e = add(name, help, "histogram", labelNames, true);
  if (!std::holds_alternative<std::unique_ptr<HistogramFamily>>(e.family)) {
    e.family = std::unique_ptr<HistogramFamily>(new HistogramFamily(
        std::move(labelNames), [buckets] { return std::make_unique<Histogram>(buckets); }));
  }
  return *std::get<std::unique_ptr<HistogramFamily>>(e.family);
}

void Registry::counterFunc(const std::string& name, const std::string& help,
                           std::function<double()> fn) {
  std::lock_guard lock(mu_);
  if (families_.count(name) != 0) {
    throw std::invalid_argument("metric " + name + " already registered");
  }
  add(name, help, "counter", {}, false).family = std::move(fn);
}

void Registry::gaugeFunc(const std::string& name, const std::string& help,
                         std::function<double()> fn) {
  std::lock_guard lock(mu_);
  if (families_.count(name) != 0) {
    throw std::invalid_argument("metric " + name + " already registered");
  }
  add(name, help, "gauge", {}, false).family = std::move(fn);
}

void Registry::gaugeSeriesFunc(const std::string& name, const std::string& help,
                               std::vector<std::string> labelNames,
                               std::function<std::vector<LabeledValue>()> fn) {
  std::lock_guard lock(mu_);
  if (families_.count(name) != 0) {
    throw std::invalid_argument("metric " + name + " already registered");
  }
  add(name, help, "gauge", labelNames, false).family = std::move(fn);
}

std::string Registry::render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, e] : families_) {
    out += "# HELP " + name + " ";
    appendEscaped(out, e->help, false);
    out += "\n# TYPE " + name + " " + e->type + "\n";
    const auto& names = e->labelNames;
    auto sample = [&](const std::string& suffix, const std::string& labels, double v) {
      out += name + suffix + labels + " " + formatValue(v) + "\n";
    };
    std::visit(
        [&](const auto& f) {
          using F = std::decay_t<decltype(f)>;
          if constexpr (std::is_same_v<F, std::function<double()>>) {
            sample("", "", f());
          } else if constexpr (std::is_same_v<F, std::function<std::vector<LabeledValue>()>>) {
            std::map<std::vector<std::string>, double> series;
            for (auto& s : f()) {
              if (s.labelValues.size() == names.size()) {
                series.emplace(std::move(s.labelValues), s.value);
              }
            }
            for (const auto& [values, v] : series) {
              sample("", labelSet(names, values), v);
            }
          } else if constexpr (std::is_same_v<F, std::unique_ptr<HistogramFamily>>) {
            f->forEach([&](const std::vector<std::string>& values, const Histogram& h) {
              Histogram::Snapshot s = h.snapshot();
              const auto& bounds = h.upperBounds();
              for (size_t i = 0; i <= bounds.size(); ++i) {
                const std::string le = i < bounds.size() ? formatValue(bounds[i]) : "+Inf";
                sample("_bucket", labelSet(names, values, "le", le),
                       static_cast<double>(s.cumulative[i]));
              }
              sample("_sum", labelSet(names, values), s.sum);
              sample("_count", labelSet(names, values), static_cast<double>(s.count));
            });
          } else {
            f->forEach([&](const std::vector<std::string>& values, const auto& m) {
              sample("", labelSet(names, values), m.value());
            });
          }
        },
        e->family);
  }
  return out;
}

}  // namespace ker::metrics
