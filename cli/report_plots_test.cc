// The report's plots on hand-built results: each draws the series and labels
// its results hold, and nothing non-finite reaches the SVG.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <ostream>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "audits/exposure/cli_plots.h"
#include "audits/forgetting/cli_plots.h"
#include "audits/membership/attacks.h"
#include "audits/membership/cli_plots.h"
#include "audits/relational/cli_plots.h"
#include "audits/unlearning/cli_plots.h"
#include "cli/html_report.h"
#include "common/messages/audit_kinds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int Count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

void ExpectNoBadNumbers(const std::string& svg) {
  // As printf writes them ("nan", "-inf"), not inside words like "inference".
  static const std::regex kBad("(^|[^a-z])-?(nan|inf)([^a-z]|$)", std::regex::icase);
  EXPECT_FALSE(std::regex_search(svg, kBad)) << svg;
}

// Geometry read back from a plot's SVG, in its own pixel units.
struct Rect {
  double x0, y0, x1, y1;
  bool Intersects(const Rect& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

std::ostream& operator<<(std::ostream& os, const Rect& r) {
  return os << "[" << r.x0 << ", " << r.x1 << "] x [" << r.y0 << ", " << r.y1 << "]";
}

double Attr(const std::string& element, const std::string& name) {
  const std::regex re(absl::StrCat("[ <]", name, "=\"(-?[0-9.]+)\""));
  std::smatch m;
  return std::regex_search(element, m, re) ? std::stod(m[1]) : kNaN;
}

// The axes box: the frame drawn around the data region.
std::optional<Rect> AxesBox(const std::string& svg) {
  static const std::regex kBorder("<rect [^>]*fill=\"none\" stroke=\"#999\"/>");
  std::smatch m;
  if (!std::regex_search(svg, m, kBorder)) return std::nullopt;
  const std::string rect = m[0];
  const double x = Attr(rect, "x"), y = Attr(rect, "y");
  return Rect{x, y, x + Attr(rect, "width"), y + Attr(rect, "height")};
}

// The legend's bounding box from its elements: swatches exactly, text at
// 0.56 em per character (DejaVu Sans, Chromium's sans-serif on Debian,
// measures 0.49 em on these labels).
std::optional<Rect> LegendBox(const std::string& svg) {
  const size_t begin = svg.find("<g class=\"legend\">");
  if (begin == std::string::npos) return std::nullopt;
  const std::string legend = svg.substr(begin, svg.find("</g>", begin) - begin);
  Rect box{1e300, 1e300, -1e300, -1e300};
  auto add = [&](double x0, double y0, double x1, double y1) {
    box = {std::min(box.x0, x0), std::min(box.y0, y0), std::max(box.x1, x1), std::max(box.y1, y1)};
  };
  static const std::regex kElement("<(line|rect|circle|text)[^>]*>([^<]*)");
  for (std::sregex_iterator it(legend.begin(), legend.end(), kElement), end; it != end; ++it) {
    const std::string e = (*it)[0], tag = (*it)[1], text = (*it)[2];
    if (tag == "line") {
      add(Attr(e, "x1"), Attr(e, "y1"), Attr(e, "x2"), Attr(e, "y2"));
    } else if (tag == "rect") {
      add(Attr(e, "x"), Attr(e, "y"), Attr(e, "x") + Attr(e, "width"),
          Attr(e, "y") + Attr(e, "height"));
    } else if (tag == "circle") {
      const double r = Attr(e, "r");
      add(Attr(e, "cx") - r, Attr(e, "cy") - r, Attr(e, "cx") + r, Attr(e, "cy") + r);
    } else {
      const double size = Attr(e, "font-size");
      add(Attr(e, "x"), Attr(e, "y") - size, Attr(e, "x") + 0.56 * size * text.size(),
          Attr(e, "y") + 0.3 * size);
    }
  }
  return box;
}

// The x pixel of a tick labelled `label`.
double TickX(const std::string& svg, const std::string& label) {
  const std::regex re(absl::StrCat("<text x=\"([0-9.]+)\"[^>]*>", label, "</text>"));
  std::smatch m;
  return std::regex_search(svg, m, re) ? std::stod(m[1]) : kNaN;
}

// A plot that fits the page: sized by a viewBox at 100% of the column's width
// (never wider than drawn, so text is never scaled up), its height following
// from the viewBox; the legend outside the axes box and inside the picture.
void ExpectLegendOutsideAndSizedToThePage(const std::string& svg) {
  SCOPED_TRACE(svg.substr(0, svg.find('>') + 1));
  const std::string open = svg.substr(0, svg.find('>') + 1);
  static const std::regex kViewBox("viewBox=\"0 0 ([0-9.]+) ([0-9.]+)\"");
  std::smatch view;
  ASSERT_TRUE(std::regex_search(open, view, kViewBox)) << open;
  const double width = std::stod(view[1]), height = std::stod(view[2]);
  EXPECT_THAT(open, HasSubstr(" width=\"100%\""));
  EXPECT_THAT(open, HasSubstr(absl::StrCat("style=\"max-width:", view[1].str(), "px")));
  EXPECT_THAT(open, Not(HasSubstr(" height=\"")));
  const std::optional<Rect> axes = AxesBox(svg);
  const std::optional<Rect> legend = LegendBox(svg);
  ASSERT_TRUE(axes.has_value());
  ASSERT_TRUE(legend.has_value());
  EXPECT_FALSE(legend->Intersects(*axes)) << "legend " << *legend << ", axes " << *axes;
  EXPECT_GE(legend->x0, 0);
  EXPECT_GE(legend->y0, 0);
  EXPECT_LE(legend->x1, width) << *legend;
  EXPECT_LE(legend->y1, height) << *legend;
}

v1::TrialMean Mean(double mean, double half_width) {
  v1::TrialMean m;
  m.set_mean(mean);
  m.set_low(mean - half_width);
  m.set_high(mean + half_width);
  return m;
}

v1::AuditResults Forgetting() {
  v1::AuditResults r;
  r.set_kind(v1::FORGETTING);
  r.set_complete(true);
  v1::ForgettingResults* f = r.mutable_forgetting();
  f->set_strategy("inject");
  f->set_attack("checkpoint_calibrated");
  f->set_fpr_target(0.1);
  f->set_trials(3);
  const struct {
    uint64_t steps;
    double accuracy;
  } points[] = {{0, 0.87}, {10, 0.75}, {100, 0.7}, {2000, 0.55}};
  for (const auto& p : points) {
    v1::ForgettingCurvePoint* c = f->add_curve();
    c->set_steps_since_injection(p.steps);
    *c->mutable_accuracy() = Mean(p.accuracy, 0.05);
    *c->mutable_auc() = Mean(p.accuracy - 0.02, 0.04);
    *c->mutable_tpr() = Mean(p.accuracy - 0.3, 0.06);
  }
  return r;
}

v1::AuditResults Exposure() {
  v1::AuditResults r;
  r.set_kind(v1::EXPOSURE);
  r.set_complete(true);
  v1::ExposureResults* x = r.mutable_exposure();
  x->set_log2_space(19.93);
  x->add_estimators("exact");
  x->add_estimators("sampled");
  x->add_estimators("extrapolated");
  x->set_reference_samples(1000);
  x->set_log2_reference_samples(std::log2(1000.0));
  x->set_control_median_exposure(1.71);
  x->set_fit_location(38);
  x->set_fit_scale(6);
  x->set_fit_shape(-2);
  x->set_fit_ks_p_value(0.43);
  const struct {
    const char* secret;
    uint32_t repeats;
    double px, exposure;
    bool exact;
  } canaries[] = {{"140538", 1, 29.8, 2.97, true},
                  {"319724", 64, 4.36, 19.93, true},
                  {"849600", 0, 25.0, 5.96, true},
                  {"157614", 0, 37.4, 0.67, false}};
  for (const auto& c : canaries) {
    v1::CanaryResult* out = x->add_canaries();
    out->set_secret(c.secret);
    out->set_repeats(c.repeats);
    out->set_px_bits(c.px);
    out->set_exposure(c.exposure);
    out->set_exact(c.exact);
    out->set_rank(c.exact ? 1 : 20);
  }
  for (uint32_t repeats : {0, 1, 64}) {
    v1::ExposureByRepeats* g = x->add_by_repeats();
    g->set_repeats(repeats);
    g->set_mean_exposure(repeats == 0 ? 3.3 : repeats == 1 ? 2.97 : 19.93);
    g->set_mean_sampled_exposure(repeats == 64 ? 9.97 : 3);
    g->set_mean_extrapolated_exposure(repeats == 64 ? 30.1 : 3);
  }
  v1::PxHistogram* h = x->mutable_reference_px_histogram();
  h->set_low(22);
  h->set_bin_width(0.5);
  for (int i = 0; i < 40; ++i) h->add_counts(static_cast<uint64_t>(60 - std::abs(i - 25) * 2));
  return r;
}

v1::AuditResults Unlearning() {
  v1::AuditResults r;
  r.set_kind(v1::UNLEARNING);
  r.set_complete(true);
  v1::UnlearningResults* u = r.mutable_unlearning();
  u->set_method("scratch");
  // The baseline listed after a feature: the plot still puts it first.
  const struct {
    const char *defense, *feature, *classifier;
    double auc, deg_count;
  } attacks[] = {
      {"none", "sorted_diff", "gradient_boosting", 0.93, 0.81},
      {"none", "baseline", "gradient_boosting", 0.61, 0},
      {"none", "euclidean_distance", "gradient_boosting", 0.88, 0.74},
      {"top_2", "sorted_diff", "gradient_boosting", 0.9, 0.77},
      {"top_2", "baseline", "gradient_boosting", 0.58, 0},
      {"top_2", "euclidean_distance", "gradient_boosting", 0.85, 0.7},
      {"none", "sorted_diff", "random_forest", 0.4242, 0.4343},
  };
  for (const auto& a : attacks) {
    v1::UnlearningAttackResult* out = u->add_attacks();
    out->set_defense(a.defense);
    out->set_feature(a.feature);
    out->set_classifier(a.classifier);
    out->set_auc(a.auc);
    out->set_deg_count(a.deg_count);
  }
  return r;
}

v1::AuditResults Relational() {
  v1::AuditResults r;
  r.set_kind(v1::RELATIONAL);
  r.set_complete(true);
  v1::RelationalResults* rel = r.mutable_relational();
  rel->set_model("phone_book");
  rel->add_metrics("exact_match");
  rel->add_metrics("digit_f1");
  for (const char* variant : {"units=64", "units=<256>"}) {
    v1::RelationalCurve* c = rel->add_curves();
    c->set_variant(variant);
    for (uint64_t step : {1, 5, 20}) {
      for (const char* metric : {"exact_match", "digit_f1"}) {
        v1::RelationalPoint* p = c->add_points();
        p->set_step(step);
        p->set_metric(metric);
        p->set_success_train(0.02 * static_cast<double>(step));
        p->set_success_val(0.01);
        p->set_rm_norm(p->success_train() - p->success_val());
      }
    }
  }
  return r;
}

TEST(RocSvgTest, OneCurvePerAttackWithChanceAndOperatingPoints) {
  v1::AuditResults r;
  for (const char* name : {"lira_online", "loss"}) {
    v1::AttackResult* a = r.add_attacks();
    a->set_attack(membership::AttackByName(name));
    a->set_auc(0.7);
    for (double fpr : {0.0, 1e-4, 1e-2, 1.0}) {
      v1::RocPoint* p = a->add_roc();
      p->set_fpr(fpr);
      p->set_tpr(std::sqrt(fpr));
    }
    a->add_operating_points()->set_fpr_target(0.01);
    a->add_operating_points()->set_fpr_target(0.001);
  }
  const std::string svg = RocSvg(r);
  EXPECT_THAT(svg, HasSubstr("class=\"roc\""));
  EXPECT_EQ(Count(svg, "<polyline class=\"curve\""), 2);
  EXPECT_THAT(svg, HasSubstr("<title>lira_online</title>"));
  EXPECT_THAT(svg, HasSubstr(">loss (AUC 0.700)</text>"));
  EXPECT_EQ(Count(svg, "class=\"operating-point\""), 2);
  EXPECT_THAT(svg, HasSubstr("class=\"chance\""));
  EXPECT_THAT(svg, HasSubstr(">1e-5</text>"));
  EXPECT_THAT(svg, HasSubstr(">false positive rate</text>"));
  // The origin is left out: (1e-4, 1e-2), (1e-2, 1e-1), (1, 1) remain.
  EXPECT_THAT(svg, HasSubstr("points=\"182.0,244.0 406.0,132.0 630.0,20.0\""));
  ExpectNoBadNumbers(svg);
}

v1::AuditResults Membership() {
  v1::AuditResults r;
  r.set_kind(v1::MEMBERSHIP);
  r.set_complete(true);
  for (const char* name : {"lira_online", "lira_offline", "lira_online_fixed_variance",
                           "lira_offline_fixed_variance", "rmia", "loss"}) {
    v1::AttackResult* a = r.add_attacks();
    a->set_attack(membership::AttackByName(name));
    a->set_auc(0.7);
    for (int i = 0; i <= 100; ++i) {
      const double fpr = std::pow(10.0, -5 + 0.05 * i);
      v1::RocPoint* p = a->add_roc();
      p->set_fpr(fpr);
      p->set_tpr(std::min(1.0, 8 * fpr));
    }
    a->add_operating_points()->set_fpr_target(0.01);
    a->add_operating_points()->set_fpr_target(0.001);
  }
  return r;
}

TEST(RocSvgTest, LegendLeavesTheLowFprRegionClearAndThePlotFitsThePage) {
  const std::string svg = RocSvg(Membership());
  const std::optional<Rect> axes = AxesBox(svg);
  const std::optional<Rect> legend = LegendBox(svg);
  ASSERT_TRUE(axes.has_value());
  ASSERT_TRUE(legend.has_value());
  // The region the low-FPR operating points live in: FPR 1e-4 to 2e-2, at
  // every TPR.
  const double x4 = TickX(svg, "1e-4"), x2 = TickX(svg, "1e-2"), x1 = TickX(svg, "1e-1");
  ASSERT_TRUE(std::isfinite(x4) && std::isfinite(x2) && std::isfinite(x1));
  const Rect low_fpr{x4, axes->y0, x2 + std::log10(2.0) * (x1 - x2), axes->y1};
  EXPECT_FALSE(legend->Intersects(low_fpr)) << "legend " << *legend << ", low FPR " << low_fpr;
  ExpectLegendOutsideAndSizedToThePage(svg);
  // Every attack is named in the legend, and the plot area is at least
  // 500 px on each side: five decades of at least 100 px.
  EXPECT_THAT(svg, HasSubstr(">lira_offline_fixed_variance (AUC 0.700)</text>"));
  EXPECT_GE(axes->x1 - axes->x0, 500);
  EXPECT_GE(axes->y1 - axes->y0, 500);
}

TEST(ReportPlotsTest, EveryPlotKeepsItsLegendOutsideTheAxesAndFitsThePage) {
  const v1::AuditResults forgetting = Forgetting(), exposure = Exposure(),
                         unlearning = Unlearning(), relational = Relational();
  v1::ForgettingResults canaries;
  canaries.set_trials(2);
  canaries.set_log2_space(16.6);
  for (uint32_t repeats : {64u, 0u}) {
    v1::ForgettingExposureCurve* c = canaries.add_exposure_curves();
    c->set_repeats(repeats);
    for (uint64_t k : {0, 100, 2000}) {
      v1::ForgettingExposurePoint* p = c->add_points();
      p->set_steps_since_injection(k);
      *p->mutable_exposure() = Mean(repeats == 0 ? 1.4 : 15.0 - k / 200.0, 0.5);
      *p->mutable_baseline_exposure() = Mean(1.2, 0.3);
    }
  }
  v1::ExposureResults during = exposure.exposure();
  for (uint64_t step : {10, 20}) {
    v1::ExposureCurvePoint* p = during.add_curve();
    p->set_step(step);
    for (uint32_t repeats : {0, 16}) {
      v1::ExposureByRepeats* g = p->add_by_repeats();
      g->set_repeats(repeats);
      g->set_mean_exposure(static_cast<double>(step) / 10 + repeats);
    }
  }
  v1::ExposureResults sweep = exposure.exposure();
  for (const char* name : {"batch=8", "batch=64"}) {
    v1::ExposureVariantResult* v = sweep.add_variants();
    v->set_name(name);
    *v->mutable_results() = exposure.exposure();
  }
  const std::string plots[] = {
      RocSvg(Membership()),
      ForgettingCurvesSvg(forgetting.forgetting()),
      ForgettingExposureSvg(canaries),
      ExposureVsInsertionsSvg(exposure.exposure()),
      ExposureVsInsertionsSvg(sweep),
      ReferencePxSvg(exposure.exposure()),
      ExposureCurveSvg(during),
      UnlearningAucSvg(unlearning.unlearning()),
      UnlearningDegCountSvg(unlearning.unlearning()),
      RelationalRmNormSvg(relational.relational(), "exact_match"),
      RelationalSuccessSvg(relational.relational(), "digit_f1"),
  };
  for (const std::string& svg : plots) {
    ASSERT_FALSE(svg.empty());
    ExpectLegendOutsideAndSizedToThePage(svg);
  }
}

TEST(ForgettingPlotTest, CurvesBandsAndChance) {
  const v1::AuditResults r = Forgetting();
  const std::string svg = ForgettingCurvesSvg(r.forgetting());
  EXPECT_THAT(svg, HasSubstr("class=\"forgetting\""));
  for (const char* series : {"MI accuracy", "AUC", "TPR at FPR 0.1"}) {
    EXPECT_THAT(svg, HasSubstr(absl::StrCat("<title>", series, "</title>"))) << series;
    EXPECT_THAT(svg, HasSubstr(absl::StrCat("<title>", series, ", 95% interval across trials")))
        << series;
  }
  EXPECT_EQ(Count(svg, "<polyline class=\"curve "), 3);
  EXPECT_EQ(Count(svg, "<polygon class=\"band "), 3);
  EXPECT_THAT(svg, HasSubstr("<title>MI accuracy at 2000 steps: 0.550 [0.500, 0.600]</title>"));
  EXPECT_THAT(svg, HasSubstr(">chance (accuracy, AUC)</text>"));
  EXPECT_THAT(svg, HasSubstr("class=\"chance-tpr\""));
  EXPECT_THAT(svg, HasSubstr(">95% interval, 3 trials</text>"));
  // log(1 + steps) ticks up to the last point.
  EXPECT_THAT(svg, HasSubstr(">1000</text>"));
  EXPECT_THAT(svg, Not(HasSubstr(">1e4</text>")));
  ExpectNoBadNumbers(svg);

  EXPECT_EQ(ForgettingCurvesSvg(v1::ForgettingResults()), "");
  EXPECT_EQ(ForgettingPlotsHtml(v1::AuditResults()), "");
  EXPECT_THAT(ForgettingPlotsHtml(r), HasSubstr("<h2>Membership inference over steps since"));
}

TEST(ForgettingPlotTest, OneTrialAndMissingIntervalsStayFinite) {
  v1::AuditResults r = Forgetting();
  r.mutable_forgetting()->set_trials(1);
  r.mutable_forgetting()->mutable_curve(1)->mutable_accuracy()->set_high(kNaN);
  r.mutable_forgetting()->mutable_curve(2)->mutable_auc()->set_mean(kNaN);
  const std::string svg = ForgettingCurvesSvg(r.forgetting());
  // The accuracy band splits around its missing point; the AUC line too.
  EXPECT_EQ(Count(svg, "<polygon class=\"band accuracy\""), 2);
  EXPECT_EQ(Count(svg, "<polyline class=\"curve auc\""), 2);
  ExpectNoBadNumbers(svg);
}

TEST(ForgettingPlotTest, CanaryExposureByInsertionCount) {
  v1::AuditResults r;
  r.set_kind(v1::FORGETTING);
  r.set_complete(true);
  v1::ForgettingResults* f = r.mutable_forgetting();
  f->set_trials(2);
  f->set_log2_space(16.6);
  for (uint32_t repeats : {64u, 0u}) {
    v1::ForgettingExposureCurve* c = f->add_exposure_curves();
    c->set_repeats(repeats);
    c->set_canaries(4);
    for (uint64_t k : {0, 100, 2000}) {
      v1::ForgettingExposurePoint* p = c->add_points();
      p->set_steps_since_injection(k);
      *p->mutable_exposure() = Mean(repeats == 0 ? 1.4 : 15.0 - k / 200.0, 0.5);
      *p->mutable_baseline_exposure() = Mean(1.2, 0.3);
    }
  }
  const std::string svg = ForgettingExposureSvg(*f);
  EXPECT_THAT(svg, HasSubstr("class=\"forgetting-exposure\""));
  EXPECT_EQ(Count(svg, "<polyline class=\"curve injected\""), 2);
  EXPECT_EQ(Count(svg, "<polyline class=\"curve baseline\""), 2);
  EXPECT_THAT(svg, HasSubstr("<title>x64 at 2000 steps: 5.00 bits"));
  EXPECT_THAT(svg, HasSubstr(">control</text>"));
  EXPECT_THAT(svg, HasSubstr(">log2|R|</text>"));
  ExpectNoBadNumbers(svg);
  EXPECT_EQ(ForgettingExposureSvg(v1::ForgettingResults()), "");
  // A canary audit's report shows exposure, not the (empty) MI curve.
  EXPECT_THAT(ForgettingPlotsHtml(r), HasSubstr("<h2>Canary exposure over steps since"));
}

TEST(ExposurePlotTest, ExposureAgainstInsertionsWithCeilingsAndControls) {
  const std::string svg = ExposureVsInsertionsSvg(Exposure().exposure());
  EXPECT_THAT(svg, HasSubstr("class=\"exposure\""));
  EXPECT_THAT(svg, HasSubstr("<polyline class=\"curve\""));  // the exact mean
  EXPECT_THAT(svg, HasSubstr("<title>mean sampled exposure</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>mean extrapolated exposure</title>"));
  EXPECT_THAT(svg, HasSubstr("<line class=\"ceiling\""));
  EXPECT_THAT(svg, HasSubstr(">log2|R| = 19.93</text>"));
  EXPECT_THAT(svg, HasSubstr(">log2|S| = 9.97</text>"));
  EXPECT_THAT(svg, HasSubstr("class=\"control-median\""));
  EXPECT_EQ(Count(svg, "<circle class=\"canary control\""), 2);
  EXPECT_EQ(Count(svg, "<circle class=\"canary\""), 2);
  EXPECT_THAT(svg, HasSubstr("<title>x64 canary 319724: exposure 19.93 bits, rank 1</title>"));
  EXPECT_THAT(svg, HasSubstr(">control (never inserted)</text>"));
  // Every inserted canary's rank is exact here: no "bound" legend entry.
  EXPECT_THAT(svg, Not(HasSubstr("rank is a bound")));
  // The y axis reaches the extrapolated mean (30.1 bits).
  EXPECT_THAT(svg, HasSubstr(">40</text>"));
  // Insertion ticks at the counts that ran.
  EXPECT_THAT(svg, HasSubstr(">64</text>"));
  ExpectNoBadNumbers(svg);
}

TEST(ExposurePlotTest, CurveDuringTrainingOneLinePerInsertionCount) {
  v1::AuditResults r = Exposure();
  EXPECT_EQ(ExposureCurveSvg(r.exposure()), "") << "no evaluation points";
  v1::ExposureResults* x = r.mutable_exposure();
  for (uint64_t step : {10, 20, 30}) {
    v1::ExposureCurvePoint* p = x->add_curve();
    p->set_step(step);
    for (uint32_t repeats : {0, 1, 16}) {
      v1::ExposureByRepeats* g = p->add_by_repeats();
      g->set_repeats(repeats);
      g->set_mean_exposure(repeats == 0 ? 1.0 : static_cast<double>(step) / 10 + repeats / 4.0);
      g->set_median_exposure(1.0);
    }
  }
  const std::string svg = ExposureCurveSvg(*x);
  EXPECT_THAT(svg, HasSubstr("class=\"exposure-curve\""));
  EXPECT_EQ(Count(svg, "<polyline class=\"curve\""), 3);
  EXPECT_THAT(svg, HasSubstr("x16 at step 30: 7.00 bits"));
  EXPECT_THAT(svg, HasSubstr("control (median)"));
  EXPECT_THAT(ExposurePlotsHtml(r), HasSubstr("Exposure during training"));
}

TEST(ExposurePlotTest, ExactOnlyDrawsNoOtherEstimator) {
  v1::AuditResults r = Exposure();
  r.mutable_exposure()->clear_estimators();
  r.mutable_exposure()->add_estimators("exact");
  r.mutable_exposure()->mutable_canaries(0)->set_exact(false);
  const std::string svg = ExposureVsInsertionsSvg(r.exposure());
  EXPECT_THAT(svg, Not(HasSubstr("sampled")));
  EXPECT_THAT(svg, Not(HasSubstr("extrapolated")));
  EXPECT_THAT(svg, HasSubstr(">rank is a bound</text>"));
  EXPECT_THAT(svg, HasSubstr("rank &gt;=1"));
}

TEST(ExposurePlotTest, BaselineAndCalibratedSeriesWhenTheirModelsRan) {
  v1::AuditResults r = Exposure();
  v1::ExposureResults* x = r.mutable_exposure();
  x->set_baseline_model(true);
  x->set_reference_models(4);
  for (v1::ExposureByRepeats& g : *x->mutable_by_repeats()) {
    g.set_mean_baseline_exposure(1.5);
    g.set_mean_calibrated_exposure(g.repeats() == 64 ? 9.97 : 2);
  }
  const std::string svg = ExposureVsInsertionsSvg(*x);
  EXPECT_THAT(svg, HasSubstr("<title>mean calibrated exposure</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>mean exposure, baseline model (no canaries)</title>"));
  ExpectNoBadNumbers(svg);
}

TEST(ExposurePlotTest, SweepDrawsOneSeriesPerVariant) {
  v1::AuditResults r = Exposure();
  v1::ExposureResults* x = r.mutable_exposure();
  x->set_baseline_model(true);
  for (const char* name : {"batch=8", "batch=64"}) {
    v1::ExposureVariantResult* v = x->add_variants();
    v->set_name(name);
    *v->mutable_results() = Exposure().exposure();
    v->mutable_results()->set_baseline_model(true);
  }
  x->mutable_variants(1)->set_dp_clip_norm(1);
  x->mutable_variants(1)->set_dp_epsilon(3.25);
  x->mutable_variants(1)->mutable_results()->mutable_by_repeats(2)->set_mean_exposure(7.5);
  const std::string svg = ExposureVsInsertionsSvg(*x);
  EXPECT_THAT(svg, HasSubstr("exposure against insertions by sweep variant"));
  EXPECT_EQ(Count(svg, "<polyline class=\"curve\""), 1);
  EXPECT_EQ(Count(svg, "<polyline class=\"curve variant\""), 1);
  EXPECT_EQ(Count(svg, "<polyline class=\"curve baseline\""), 2);
  EXPECT_THAT(svg, HasSubstr(">batch=64 (DP, eps 3.25)</text>"));
  EXPECT_THAT(svg, HasSubstr("<title>batch=8, x64 canary 319724: exposure 19.93 bits, rank 1"));
  EXPECT_EQ(Count(svg, "<circle class=\"canary\""), 4);
  EXPECT_EQ(Count(svg, "<circle class=\"canary control\""), 4);
  ExpectNoBadNumbers(svg);
  const std::string html = ExposurePlotsHtml(r);
  EXPECT_THAT(html, HasSubstr("<h2>Exposure against insertions, by sweep variant</h2>"));
  EXPECT_THAT(html, HasSubstr("skew-normal fit (variant batch=8)</h2>"));
}

TEST(ExposurePlotTest, HistogramWithFitDensityAndCanaryRug) {
  const v1::AuditResults r = Exposure();
  const std::string svg = ReferencePxSvg(r.exposure());
  EXPECT_THAT(svg, HasSubstr("class=\"px-histogram\""));
  EXPECT_EQ(Count(svg, "<rect class=\"bin\""), 40);
  EXPECT_THAT(svg, HasSubstr("<title>Px [22.00, 22.50): 10 references</title>"));
  EXPECT_EQ(Count(svg, "<polyline class=\"fit\""), 1);
  EXPECT_THAT(svg, HasSubstr("skew-normal fit: location 38.000, scale 6.000, shape -2.000"));
  EXPECT_THAT(svg, HasSubstr(">skew-normal fit (KS p 0.43)</text>"));
  // Canaries: a rug line each, inserted ones labelled.
  EXPECT_EQ(Count(svg, "<polyline class=\"canary\""), 2);
  EXPECT_EQ(Count(svg, "<polyline class=\"canary control\""), 2);
  EXPECT_THAT(svg, HasSubstr(">x64</text>"));
  EXPECT_THAT(svg, HasSubstr(">x1</text>"));
  // The x axis stretches down to the x64 canary (Px 4.36).
  EXPECT_THAT(svg, HasSubstr(">0</text>"));
  ExpectNoBadNumbers(svg);

  const std::string html = ExposurePlotsHtml(r);
  EXPECT_THAT(html, HasSubstr("<h2>Exposure against insertions</h2>"));
  EXPECT_THAT(html, HasSubstr("<h2>Reference Px and the skew-normal fit</h2>"));
}

TEST(ExposurePlotTest, HistogramNeedsBinsAndTheFitIsOptional) {
  v1::AuditResults r = Exposure();
  r.mutable_exposure()->set_fit_scale(0);  // no extrapolated estimator: no fit
  const std::string svg = ReferencePxSvg(r.exposure());
  EXPECT_EQ(Count(svg, "<rect class=\"bin\""), 40);
  EXPECT_THAT(svg, Not(HasSubstr("class=\"fit\"")));
  r.mutable_exposure()->mutable_canaries(0)->set_px_bits(kNaN);
  ExpectNoBadNumbers(ReferencePxSvg(r.exposure()));
  r.mutable_exposure()->clear_reference_px_histogram();
  EXPECT_EQ(ReferencePxSvg(r.exposure()), "");
  EXPECT_THAT(ExposurePlotsHtml(r), Not(HasSubstr("Reference Px")));
}

TEST(UnlearningPlotTest, AucBarsPerFeatureAndDefenseForTheFirstClassifier) {
  const v1::AuditResults r = Unlearning();
  const std::string svg = UnlearningAucSvg(r.unlearning());
  EXPECT_THAT(svg, HasSubstr("class=\"unlearning-auc\""));
  EXPECT_THAT(svg, HasSubstr("aria-label=\"attack AUC per feature and defense, "
                             "gradient_boosting\""));
  EXPECT_EQ(Count(svg, "<rect class=\"bar\""), 6);
  EXPECT_THAT(svg, HasSubstr("<title>none / baseline: attack AUC 0.6100</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>top_2 / euclidean_distance: attack AUC 0.8500</title>"));
  EXPECT_THAT(svg, Not(HasSubstr("0.4242"))) << "only the first classifier";
  // Defenses label the groups; the baseline leads the legend.
  EXPECT_THAT(svg, HasSubstr(">none</text>"));
  EXPECT_THAT(svg, HasSubstr(">top_2</text>"));
  EXPECT_LT(svg.find(">baseline</text>"), svg.find(">sorted_diff</text>"));
  EXPECT_THAT(svg, HasSubstr(">chance</text>"));
  ExpectNoBadNumbers(svg);
}

TEST(UnlearningPlotTest, DegCountBarsLeaveOutTheBaseline) {
  const v1::AuditResults r = Unlearning();
  const std::string svg = UnlearningDegCountSvg(r.unlearning());
  EXPECT_THAT(svg, HasSubstr("class=\"unlearning-degcount\""));
  EXPECT_EQ(Count(svg, "<rect class=\"bar\""), 4);
  EXPECT_THAT(svg, HasSubstr("<title>none / sorted_diff: DegCount 0.8100</title>"));
  EXPECT_THAT(svg, Not(HasSubstr("baseline")));
  const std::string html = UnlearningPlotsHtml(r);
  EXPECT_THAT(html, HasSubstr("<h2>Attack AUC per feature and defense</h2>"));
  EXPECT_THAT(html, HasSubstr("<h2>DegCount against the baseline</h2>"));
  EXPECT_THAT(html, HasSubstr("Classifier gradient_boosting"));
  EXPECT_EQ(UnlearningPlotsHtml(v1::AuditResults()), "");
}

TEST(RelationalPlotTest, RmNormAndSuccessPerVariantAndMetric) {
  const v1::AuditResults r = Relational();
  const std::string rm = RelationalRmNormSvg(r.relational(), "exact_match");
  EXPECT_THAT(rm, HasSubstr("class=\"relational-rm\""));
  EXPECT_EQ(Count(rm, "<polyline class=\"curve rm-norm\""), 2);
  EXPECT_THAT(rm, HasSubstr("<title>units=64 RM_norm</title>"));
  EXPECT_THAT(rm, HasSubstr("<title>units=&lt;256&gt; RM_norm</title>"));
  EXPECT_THAT(rm, HasSubstr("<title>units=64 at 20: RM_norm 0.390 (train 0.400, held-out "
                            "0.010)</title>"));
  EXPECT_THAT(rm, HasSubstr(">RM_norm (exact_match)</text>"));
  EXPECT_THAT(rm, HasSubstr(">epochs (log scale)</text>"));
  EXPECT_THAT(rm, Not(HasSubstr("<256>")));
  ExpectNoBadNumbers(rm);

  const std::string success = RelationalSuccessSvg(r.relational(), "digit_f1");
  EXPECT_EQ(Count(success, "<polyline class=\"curve success-train\""), 2);
  EXPECT_EQ(Count(success, "<polyline class=\"curve success-val\""), 2);
  EXPECT_THAT(success, HasSubstr("<title>units=64 success, held-out records</title>"));
  EXPECT_THAT(success, HasSubstr(">held-out records</text>"));
  ExpectNoBadNumbers(success);

  EXPECT_EQ(RelationalRmNormSvg(r.relational(), "no_such_metric"), "");
  const std::string html = RelationalPlotsHtml(r);
  EXPECT_THAT(html, HasSubstr("<h2>Relational memorization over training</h2>"));
  EXPECT_THAT(html, HasSubstr("<h3>exact_match</h3>"));
  EXPECT_THAT(html, HasSubstr("<h3>digit_f1</h3>"));
  EXPECT_EQ(Count(html, "<svg"), 4);
}

TEST(RelationalPlotTest, LinearModelStepsAndNegativeRmNorm) {
  v1::AuditResults r = Relational();
  r.mutable_relational()->set_model("linear");
  r.mutable_relational()->clear_metrics();  // the metrics come from the points
  r.mutable_relational()->mutable_curves(0)->mutable_points(0)->set_step(100000);
  r.mutable_relational()->mutable_curves(0)->mutable_points(2)->set_rm_norm(-0.3);
  r.mutable_relational()->mutable_curves(1)->mutable_points(4)->set_rm_norm(kNaN);
  const std::string rm = RelationalRmNormSvg(r.relational(), "exact_match");
  EXPECT_THAT(rm, HasSubstr(">gradient steps (log scale)</text>"));
  EXPECT_THAT(rm, HasSubstr(">1e5</text>"));
  EXPECT_THAT(rm, HasSubstr(">-0.4</text>"));  // the y axis reaches below -0.3
  EXPECT_THAT(rm, HasSubstr("class=\"zero\""));
  ExpectNoBadNumbers(rm);
  EXPECT_THAT(RelationalPlotsHtml(r), HasSubstr("<h3>digit_f1</h3>"));
}

v1::Audit AuditOf(const std::string& kind) {
  v1::Audit audit;
  audit.set_audit_id("a-1");
  audit.set_kind(ApiKind(AuditKindByName(kind)));
  audit.set_name("plots");
  return audit;
}

TEST(HtmlReportPlotsTest, EveryKindGetsItsPlots) {
  const std::string forgetting = HtmlReport(AuditOf("forgetting"), Forgetting());
  EXPECT_THAT(forgetting, HasSubstr("class=\"forgetting\""));
  EXPECT_THAT(forgetting, HasSubstr("Forgetting curve"));  // the numbers table stays
  const std::string exposure = HtmlReport(AuditOf("exposure"), Exposure());
  EXPECT_THAT(exposure, HasSubstr("class=\"exposure\""));
  EXPECT_THAT(exposure, HasSubstr("class=\"px-histogram\""));
  EXPECT_THAT(exposure, HasSubstr("<h2>Canaries</h2>"));
  EXPECT_LT(exposure.find("class=\"exposure\""), exposure.find("<h2>Canaries</h2>"));
  const std::string unlearning = HtmlReport(AuditOf("unlearning"), Unlearning());
  EXPECT_THAT(unlearning, HasSubstr("class=\"unlearning-auc\""));
  EXPECT_THAT(unlearning, HasSubstr("class=\"unlearning-degcount\""));
  EXPECT_THAT(unlearning, Not(HasSubstr("class=\"roc\"")));
  const std::string relational = HtmlReport(AuditOf("relational"), Relational());
  EXPECT_THAT(relational, HasSubstr("class=\"relational-rm\""));
  EXPECT_THAT(relational, Not(HasSubstr("class=\"roc\"")));
  const std::string membership = HtmlReport(AuditOf("membership"), [] {
    v1::AuditResults r;
    r.set_complete(true);
    r.add_attacks()->set_attack(v1::LOSS);
    return r;
  }());
  EXPECT_THAT(membership, HasSubstr("class=\"roc\""));
  for (const std::string* page : {&forgetting, &exposure, &unlearning, &relational}) {
    EXPECT_THAT(*page, Not(HasSubstr("<script")));
  }
}

}  // namespace
}  // namespace memaudit::cli
