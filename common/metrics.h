#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace ker::metrics {

// Buckets for request latencies in seconds, 100 µs to 10 s.
const std::vector<double>& defaultBuckets();

// A monotonically increasing value.
class Counter {
 public:
  void inc(double by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double by) { value_.fetch_add(by, std::memory_order_relaxed); }
  void inc() { add(1); }
  void dec() { add(-1); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upperBounds);  // sorted, finite, no +Inf

  void observe(double v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then one more for +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;
  const std::vector<double>& upperBounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, not cumulative; last = +Inf
  std::atomic<double> sum_{0};
};

// Series of one metric keyed by label values. The references handed out stay valid for the
// registry's lifetime, so hot paths look a series up once and keep it.
template <class M>
class Family {
 public:
  // values must match the family's label names one to one (std::invalid_argument otherwise).
  M& labels(const std::vector<std::string>& values);
  // The single series of a family without labels.
  M& get() { return labels({}); }

  const std::vector<std::string>& labelNames() const { return labelNames_; }

 private:
  friend class Registry;
  Family(std::vector<std::string> labelNames, std::function<std::unique_ptr<M>()> make)
      : labelNames_(std::move(labelNames)), make_(std::move(make)) {}

  // Visits the series in label-value order.
  void forEach(const std::function<void(const std::vector<std::string>&, const M&)>& fn) const;

  std::vector<std::string> labelNames_;
  std::function<std::unique_ptr<M>()> make_;
  mutable std::shared_mutex mu_;  // exclusive only while adding a label combination
  std::map<std::vector<std::string>, std::unique_ptr<M>> series_;
};

// One series of a family computed at render time: its label values (one per label name) and
// its value.
struct LabeledValue {
  std::vector<std::string> labelValues;
  double value = 0;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// A set of metric families rendered together. Registering a name again with the same type
// and label names returns the existing family; any other clash, or an invalid metric or label
// name, throws std::invalid_argument.
class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  CounterFamily& counter(const std::string& name, const std::string& help,
                         std::vector<std::string> labelNames = {});
  GaugeFamily& gauge(const std::string& name, const std::string& help,
                     std::vector<std::string> labelNames = {});
  HistogramFamily& histogram(const std::string& name, const std::string& help,
                             std::vector<std::string> labelNames = {},
                             std::vector<double> buckets = defaultBuckets());
  // Values read at render time from elsewhere (e.g. an informer's relist count or cache
  // size), so the owner of the number need not know about the registry.
  void counterFunc(const std::string& name, const std::string& help, std::function<double()> fn);
  void gaugeFunc(const std::string& name, const std::string& help, std::function<double()> fn);
  // A gauge family whose series are exactly those fn returns at render time, so that a series
  // vanishes as soon as what it describes does (kept families never forget a label set). A
  // series whose label values do not match labelNames one to one is left out, as is a repeat
  // of a label set already rendered.
  void gaugeSeriesFunc(const std::string& name, const std::string& help,
                       std::vector<std::string> labelNames,
                       std::function<std::vector<LabeledValue>()> fn);

  // Prometheus text exposition format 0.0.4, families sorted by name, series by label values.
  std::string render() const;

  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  struct Entry;
  Entry& add(const std::string& name, const std::string& help, const char* type,
             const std::vector<std::string>& labelNames, bool histogram);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> families_;
};

}  // namespace ker::metrics
