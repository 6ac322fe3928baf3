// Per-op statistics of kiln training steps through the op layer's profiler hooks (src/ops/run.h):
// calls, host time and, on a GPU, the stream time between timing events around each outermost
// op, grouped by phase (forward / backward / optimizer), op name, dtypes and layout.
#pragma once

#include <kiln/cuda.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "ops/run.h"

namespace gpt2 {

class OpStats {
 public:
  explicit OpStats(bool gpu) : gpu_(gpu) {}
  ~OpStats() { stop(); }

  // Installs the hooks (one OpStats at a time); ops run after this are recorded.
  void start() {
    self() = this;
    auto& h = kiln::detail::op_hooks();
    h.profile_begin = &begin_hook;
    h.profile_end = &end_hook;
  }
  void stop() {
    if (self() != this) return;
    auto& h = kiln::detail::op_hooks();
    h.profile_begin = nullptr;
    h.profile_end = nullptr;
    self() = nullptr;
  }
  // The phase that following ops are counted under ("fwd", "bwd", "opt").
  void phase(const char* p) { phase_ = p; }

  // JSON lines: the `top` groups by time and one total line per phase. Synchronizes the GPU.
  void print(int top) {
    if (gpu_) kiln::cuda::synchronize();
    struct Agg {
      int64_t calls = 0;
      double gpu_ms = 0, host_ms = 0;
    };
    std::map<std::string, Agg> groups, phases;
    for (const Rec& r : recs_) {
      const double g = gpu_ ? events_[r.ev].elapsed_time(events_[r.ev + 1]) : 0.0;
      for (Agg* a : {&groups[r.key], &phases[r.key.substr(0, r.key.find(' '))]}) {
        a->calls += 1;
        a->gpu_ms += g;
        a->host_ms += r.host_ms;
      }
    }
    std::vector<std::pair<std::string, Agg>> sorted(groups.begin(), groups.end());
    std::sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
      return gpu_ ? a.second.gpu_ms > b.second.gpu_ms : a.second.host_ms > b.second.host_ms;
    });
    for (const auto& [name, a] : phases)
      std::printf(
          "{\"op_stats\":\"phase\",\"phase\":\"%s\",\"calls\":%lld,\"gpu_ms\":%.4f,"
          "\"host_ms\":%.4f}\n",
          name.c_str(), static_cast<long long>(a.calls), a.gpu_ms, a.host_ms);
    for (size_t i = 0; i < sorted.size() && i < static_cast<size_t>(top); ++i)
      std::printf(
          "{\"op_stats\":\"op\",\"op\":\"%s\",\"calls\":%lld,\"gpu_ms\":%.4f,"
          "\"host_ms\":%.4f}\n",
          sorted[i].first.c_str(), static_cast<long long>(sorted[i].second.calls),
          sorted[i].second.gpu_ms, sorted[i].second.host_ms);
  }

 private:
  struct Rec {
    std::string key;
    size_t ev = 0;  // events_[ev], events_[ev + 1]
    double host_ms = 0;
  };

  static OpStats*& self() {
    static OpStats* s = nullptr;
    return s;
  }
  // "phase op(in dtypes->out dtype)" with " nc" when an input is not contiguous.
  std::string key_of(const kiln::OpCall& c) const {
    std::string k = std::string(phase_) + " " + kiln::op_name(c.op) + "(";
    bool nc = false;
    for (size_t i = 0; i < c.in.size(); ++i) {
      if (!c.in[i].defined()) continue;
      if (i) k += ",";
      k += kiln::dtype_name(c.in[i].dtype());
      nc = nc || !c.in[i].is_contiguous();
    }
    k += "->";
    if (!c.out.empty() && c.out[0].defined()) k += kiln::dtype_name(c.out[0].dtype());
    k += ")";
    if (nc) k += " nc";
    return k;
  }
  static void begin_hook(const kiln::OpCall& c) {
    OpStats* s = self();
    if (s == nullptr || s->depth_++ != 0) return;  // nested ops count in their caller
    Rec r;
    r.key = s->key_of(c);
    if (s->gpu_) {
      r.ev = s->events_.size();
      s->events_.emplace_back(/*enable_timing=*/true);
      s->events_.emplace_back(/*enable_timing=*/true);
      s->events_[r.ev].record();
    }
    s->recs_.push_back(std::move(r));
    s->t0_ = std::chrono::steady_clock::now();
  }
  static void end_hook(const kiln::OpCall&) {
    OpStats* s = self();
    if (s == nullptr || --s->depth_ != 0) return;
    Rec& r = s->recs_.back();
    r.host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s->t0_)
                    .count();
    if (s->gpu_) s->events_[r.ev + 1].record();
  }

  bool gpu_;
  const char* phase_ = "fwd";
  int depth_ = 0;
  std::chrono::steady_clock::time_point t0_;
  std::vector<Rec> recs_;
  std::vector<kiln::cuda::Event> events_;
};

}  // namespace gpt2
