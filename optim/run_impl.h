// What optim::lbfgs and optim::lbfgsb share about a run: the end of a trace
// line and the summary of the state a run ended in. Internal to optim/.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "optim/checkpoint_impl.h"
#include "optim/lbfgs.h"

namespace adgraph::optim::detail {

// Writes a trace line: the optimizer's own `columns`, the caller's extra
// columns (when set), a newline.
inline void write_trace_line(std::ostream& out,
                             const char* columns,
                             const std::function<std::string()>& extra) {
  out << columns;
  if (extra) out << extra();
  out << "\n" << std::flush;
}

// The summary of `st` after termination `why` (message and active bounds
// are the caller's).
inline LbfgsSummary summarize(const LbfgsState& st,
                              Termination why,
                              double gradient_norm,
                              double seconds,
                              int resumed_at) {
  LbfgsSummary s;
  s.termination = why;
  s.iterations = st.iteration;
  s.evaluations = st.evaluations;
  s.initial_f = st.initial_f;
  s.final_f = st.f;
  s.gradient_norm = gradient_norm;
  s.f_history = st.f_history;
  s.gradient_norm_history = st.gnorm_history;
  s.seconds = seconds;
  s.resumed_at = resumed_at;
  return s;
}

}  // namespace adgraph::optim::detail
