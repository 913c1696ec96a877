#include "core/interrupt.h"

namespace adgraph {

static_assert(std::atomic<bool>::is_always_lock_free,
              "request_interrupt() must be async-signal-safe");

Interrupted::Interrupted()
    : std::runtime_error(
          "interrupted: the run was stopped between two nodes "
          "(request_interrupt, e.g. Ctrl-C)") {}

void request_interrupt() noexcept {
  detail::interrupt_requested.store(true, std::memory_order_relaxed);
}

bool take_interrupt_request() noexcept {
  return detail::interrupt_requested.exchange(false);
}

namespace detail {

std::atomic<bool> interrupt_requested{false};

void take_interrupt_or_return() {
  // Only the run that takes the request stops; a concurrent one that
  // checked at the same moment goes on.
  if (interrupt_requested.exchange(false)) throw Interrupted();
}

}  // namespace detail
}  // namespace adgraph
