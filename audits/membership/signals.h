// The signals a membership audit's models send, at their one evaluation
// point: the worker writes them, the scorer reads them.
#ifndef MEMAUDIT_AUDITS_MEMBERSHIP_SIGNALS_H_
#define MEMAUDIT_AUDITS_MEMBERSHIP_SIGNALS_H_

namespace memaudit::membership {

inline constexpr char kFinalPoint[] = "final";
// Per pool example: the logit-scaled confidence (a dataset) or the mean
// token log-probability (documents), and the loss.
inline constexpr char kPhiSignal[] = "phi";
inline constexpr char kLossSignal[] = "loss";
// Loss on RMIA's population (population_size values), when it has one.
inline constexpr char kPopulationLossSignal[] = "loss_population";
// Documents only, per pool sequence (engine/lm_membership_signals.h): the
// zlib ratio, Min-K% and Min-K%++ scores.
inline constexpr char kZlibSignal[] = "zlib";
inline constexpr char kMinKSignal[] = "min_k";
inline constexpr char kMinKPlusSignal[] = "min_k_plus";

}  // namespace memaudit::membership

#endif  // MEMAUDIT_AUDITS_MEMBERSHIP_SIGNALS_H_
